package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The runs the rules share. A run may cost money and call tools that
// change the world (§4.1.2), so each is started once per check and read by
// every rule it can serve, as the two documents are: an ordinary run and
// an ordinary stream (each watched, status polled while it lives), a
// second run to tell two run_ids apart, a key answered for the
// idempotency rules, runs started at once for the capacity rules, and a
// stream abandoned right after its start. Each is an engine fact that the
// driver starts only when the first rule needing it runs, in the agent
// phase, so nothing here is sent without --execute.
//
// Every start is paid for from the check's budget (--max-runs): where the
// budget cannot cover a run, the fact, and so every rule reading it,
// skips as needing a larger one.

// DefaultMaxRuns is how many times a check may start the agent where
// --max-runs is not given: enough for a full check of a Level 3 runner
// with room for the confirmations of would-be FAILs, few enough that a
// paid agent's check costs a bounded, small number of runs.
const DefaultMaxRuns = 20

// maxRuns is the budget of agent starts.
func (e *Env) maxRuns() int {
	if e.MaxRuns > 0 {
		return e.MaxRuns
	}
	return DefaultMaxRuns
}

// spend takes n agent starts from the check's budget before they are
// sent, or skips the rule (or fact) as needing a larger budget.
func spend(t *T, n int) {
	e := t.Env
	e.mu.Lock()
	limit, left := e.maxRuns(), e.maxRuns()-e.spent
	if n > left {
		spent := e.spent
		e.mu.Unlock()
		t.NeedsOption("needs --max-runs %d or more: deciding it starts the agent up to %d more times, and %d of the %d starts allowed were left",
			spent+n, n, left, limit)
	}
	e.spent += n
	e.mu.Unlock()
}

// AgentStarts is the checker's own count of the runs it sent that a runner
// could have executed: every run or stream request with a body that was
// sent, less those whose answer shows the agent did not start (a refusal:
// 4xx, 501 and 503) and those answered as an earlier run (a 200 naming a
// run_id already seen, or a repeat under a key already sent that names no
// new one).
func (e *Env) AgentStarts() int { return agentStarts(e.Session.Exchanges()) }

func agentStarts(log []*wire.Exchange) int {
	var posts []*wire.Exchange
	for _, ex := range log {
		if ex != nil && ex.Method == http.MethodPost && len(ex.ReqBody) > 0 && !ex.Sent.IsZero() &&
			(hasPath(ex, protocol.Run) || hasPath(ex, protocol.Stream)) && !errors.Is(ex.Err, engine.ErrGaveUp) {
			posts = append(posts, ex)
		}
	}
	sort.SliceStable(posts, func(i, j int) bool { return posts[i].Sent.Before(posts[j].Sent) })
	ids, keys := map[string]bool{}, map[string]bool{}
	n := 0
	for _, ex := range posts {
		if ex.Answered() && (ex.Status < 500 && ex.Status >= 300 || ex.Status == http.StatusNotImplemented || ex.Status == http.StatusServiceUnavailable) {
			continue
		}
		id := answeredRunID(ex)
		key := ex.ReqHeader.Get("Idempotency-Key")
		switch {
		case id != "" && ids[id]:
			continue // answered as a run already counted
		case id == "" && key != "" && keys[key] && ex.Answered():
			continue // a repeat answered with no run of its own
		}
		if id != "" {
			ids[id] = true
		}
		if key != "" {
			keys[key] = true
		}
		n++
	}
	return n
}

// verbOf is the verb a run or stream request was sent to.
func verbOf(ex *wire.Exchange) string {
	if hasPath(ex, protocol.Stream) {
		return protocol.Stream
	}
	return protocol.Run
}

// hasPath reports whether ex was sent to verb.
func hasPath(ex *wire.Exchange, verb string) bool { return strings.HasSuffix(ex.URL, wire.Prefix+verb) }

// answeredRunID is the run_id an answer names: a run response's, or a
// stream's start event's.
func answeredRunID(ex *wire.Exchange) string {
	if ex.SSE != nil {
		return eventRunID(firstEvent(*ex.SSE, "start"))
	}
	if ex.Status == http.StatusOK {
		id, _ := ex.Object()["run_id"].(string)
		return id
	}
	return ""
}

// agentSlots is how many rules that start the agent may run at once: what
// status declares as max_concurrent_runs, or one where it declares none,
// and at most three (a request in flight is left for status and the rest).
func agentSlots(e *Env) int {
	if n, ok := declaredLimit(e, "max_concurrent_runs"); ok {
		return min(n, 3)
	}
	return 1
}

// runGate is why a valid run cannot be sent here ("" where it can): the
// needs of every rule that runs the agent, checked again by the fact, so
// that a fact never starts the agent for a rule that could not.
func runGate(e *Env, needs []Need) string {
	for _, n := range needs {
		if why := n.Check(e); why != "" {
			return why
		}
	}
	return ""
}

// admittedRun sends r and sends it again while the runner answers 503
// unavailable (see untilAdmitted): a runner that has just answered a run
// may not have freed its slot yet.
func admittedRun(t *T, ctx context.Context, r wire.Request) *wire.Exchange {
	return untilAdmitted(t, func() *wire.Exchange { return send(t, ctx, r, nil) })
}

// watchedRun is a valid run or stream with status polled while it lived,
// and once more after it ended: after is the first poll that said other
// than running (settled), or the last one of the patience.
type watchedRun struct {
	ex      *wire.Exchange
	polls   []poll
	after   poll
	settled bool
}

// ordinaryRun and ordinaryStream are a valid run and a valid stream,
// without a key, each with status polled while it lives: the answer every
// rule reading one judges, and the life the rules on status and time
// watch. Where --origin names an allowed origin they carry it, as a
// page's would, and 2.3/actual-response-cors judges their heads.
// ordinaryStream is nil below Level 3.
var (
	ordinaryRun    = watchedFact(protocol.Run)
	ordinaryStream = watchedFact(protocol.Stream)
)

func watchedFact(verb string) *engine.Fact[*Env, *watchedRun] {
	return &engine.Fact[*Env, *watchedRun]{Name: "ordinary " + verb, Compute: func(t *T) (*watchedRun, string) {
		if why := runGate(t.Env, runNeeds()); why != "" {
			return nil, why
		}
		if t.Env.Level < protocol.LevelOf(verb) {
			return nil, ""
		}
		inputs, why := validInputs(t.Env.Describe.Obj, false)
		if why != "" {
			return nil, why
		}
		spend(t, 1)
		r := runRequest(verb, inputs, "", "a valid "+verb+", without a key, with status polled while it is in flight: shared by every rule that reads one")
		if t.Env.Origin != "" {
			// As a page at the allowed origin sends it: its head is an
			// actual answer 2.3/actual-response-cors judges.
			r = withOrigin(r, t.Env.Origin, r.Note)
		}
		ex, polls := watch(t, func() *wire.Exchange { return admittedRun(t, t.Ctx, r) })
		t.Cite(ex)
		w := &watchedRun{ex: ex, polls: polls}
		w.after, w.settled = awaitState(t, time.Now().Add(t.Session().Patience), notRunning)
		return w, ""
	}}
}

// lifeRun is the watched run of the verb a life rule watches (lifeVerb).
func lifeRun(t *T) *watchedRun {
	if lifeVerb(t) == protocol.Stream {
		return ordinaryStream.Of(t)
	}
	return ordinaryRun.Of(t)
}

// lifeRuns are what the life rules require: both watched runs.
func lifeRuns() []Dep { return []Dep{ordinaryRun, ordinaryStream} }

// secondRun is another valid run without a key: the second execution of
// the rule that tells two run_ids apart, and, at Level 3, the later
// request of the rule on late delivery, which requires the abandoned
// stream first. Where the check abandoned a stream, then, this run goes
// with its inputs once it would have ended had it not been aborted (the
// ordinary stream shows how long a run takes; status, where it says the
// run is over, ends the wait sooner): a runner that finished an abandoned
// run and kept its output answers the next equal request with it. Where
// the check abandoned none (a narrower selection), it goes at once.
var secondRun = &engine.Fact[*Env, *wire.Exchange]{Name: "second run", Compute: func(t *T) (*wire.Exchange, string) {
	if why := runGate(t.Env, runNeeds()); why != "" {
		return nil, why
	}
	inputs, why := validInputs(t.Env.Describe.Obj, false)
	if why != "" {
		return nil, why
	}
	note := "another valid run, without a key: a second execution"
	if a, ok := abandonedStream.Peek(t); ok && a != nil {
		length := time.Second
		if w, ok := ordinaryStream.Peek(t); ok && w != nil {
			if sp, ok := spanOf(w.ex); ok {
				length = max(sp.length(), pollEvery(t))
			}
		}
		awaitState(t, a.left.Add(length*3/2), notRunning)
		note += ", sent with the inputs of the stream the checker abandoned, once that run would have ended"
	}
	spend(t, 1)
	ex := admittedRun(t, t.Ctx, runRequest("run", inputs, "", note))
	t.Cite(ex)
	return ex, ""
}}

// keyTrial is an Idempotency-Key answered on run, for the rules on what
// the key promises.
type keyTrial struct {
	key      string
	inputs   map[string]any
	first    map[string]any // the run response that answered it
	answered time.Time
}

// keyAnswered answers a fresh key with a valid run.
var keyAnswered = &engine.Fact[*Env, *keyTrial]{Name: "keyed run", Compute: func(t *T) (*keyTrial, string) {
	if why := runGate(t.Env, keyedNeeds()); why != "" {
		return nil, why
	}
	inputs, ok := validOrSkip(t, true)
	if !ok {
		return nil, ""
	}
	spend(t, 1)
	k := &keyTrial{key: freshKey(), inputs: inputs}
	ex := admittedRun(t, t.Ctx, runRequest("run", inputs, k.key, "a valid run under a fresh Idempotency-Key, shared by the rules on what the key promises"))
	t.Cite(ex)
	k.first, _ = runBody(t, ex) // it skips where no result came
	k.answered = endOf(ex)
	return k, ""
}}

// keyReplays are the same request sent again under the answered key:
// re-serialised on run, and as it was on stream (at Level 3).
type keyReplays struct{ run, stream *wire.Exchange }

var keyedReplays = &engine.Fact[*Env, *keyReplays]{Name: "keyed replays", Requires: []Dep{keyAnswered}, Compute: func(t *T) (*keyReplays, string) {
	k := keyAnswered.Of(t)
	rp := &keyReplays{run: t.Do(keyedRun(k.key, reserialised(k.inputs), "the same key and the same inputs, written in another key order and spacing"))}
	if t.Env.Level >= protocol.LevelOf(protocol.Stream) {
		rp.stream = post(t, runRequest("stream", k.inputs, k.key, "the same key and inputs, now on stream"))
	}
	return rp, ""
}}

// keyedConflict sends other valid inputs under the answered key, once the
// replays are in (so that a runner rebinding the key on a conflict shows
// it only to the rule judging that).
var keyedConflict = &engine.Fact[*Env, *conflictTrial]{Name: "keyed conflict", Requires: []Dep{keyAnswered, keyedReplays}, Compute: func(t *T) (*conflictTrial, string) {
	k := keyAnswered.Of(t)
	keyedReplays.Of(t)
	c, ok := sendConflicting(t, k)
	if !ok {
		return nil, ""
	}
	return &c, ""
}}

// overlapRuns are the runs started at once for the capacity rules: one
// more than the max_concurrent_runs status declares, or two where it
// declares none.
var overlapRuns = &engine.Fact[*Env, *overlap]{Name: "runs started at once", Compute: func(t *T) (*overlap, string) {
	if why := runGate(t.Env, runNeeds()); why != "" {
		return nil, why
	}
	n := 2
	if d, ok := declaredLimit(t.Env, "max_concurrent_runs"); ok {
		n = d + 1
	}
	if n > maxOverlap {
		t.NotApplicable("status declares max_concurrent_runs %d: the checker starts at most %d runs at once", n-1, maxOverlap)
	}
	if _, ok := validOrSkip(t, false); !ok {
		return nil, ""
	}
	spend(t, n)
	// At Level 3, where the runner holds keys, the first of them carries
	// one: a key answered on stream, which 4.2/one-keyspace-reverse then
	// sends to run.
	key := ""
	if t.Env.Level >= protocol.LevelOf(protocol.Stream) && runGate(t.Env, keyedNeeds()) == "" {
		key = freshKey()
	}
	o := overlapping(t, n, key)
	o.key = key
	return &o, ""
}}

// abandoned is a stream the checker hung up on right after its start.
type abandoned struct {
	ex   *wire.Exchange
	left time.Time
}

// abandonedStream is shared by the rules on a client going away: the one
// on the abort and the one on late delivery. Nil below Level 3.
var abandonedStream = &engine.Fact[*Env, *abandoned]{Name: "abandoned stream", Compute: func(t *T) (*abandoned, string) {
	if why := runGate(t.Env, runNeeds()); why != "" {
		return nil, why
	}
	if t.Env.Level < protocol.LevelOf(protocol.Stream) {
		return nil, ""
	}
	if _, ok := validOrSkip(t, false); !ok {
		return nil, ""
	}
	spend(t, 1)
	ex, left := hungUp(t, lifeRequest(t, protocol.Stream, "", "a valid stream, abandoned by the checker right after its start event"), 0)
	t.Cite(ex)
	return &abandoned{ex: ex, left: left}, ""
}}

// conflictTrial is an Idempotency-Key answered for one set of valid inputs
// and then sent with another.
type conflictTrial struct {
	inputs map[string]any // the inputs the key was answered for
	key    string
	first  map[string]any // the run that answered it
	what   string         // how the other inputs differ
	second *wire.Exchange // the answer to the other inputs
	// otherValid is the 200 the other inputs got alone under a fresh key,
	// where the reused key had them refused 400.
	otherValid *wire.Exchange
}

// sendConflicting sends other valid inputs under the key k answered. It
// skips the rule where they cannot be built, or the second answer is a
// refusal the key did not cause (503 at capacity). A 400 to the other inputs is decided,
// not skipped: they are sent once more, alone under a fresh key, and where
// that runs they were valid, so the 400 under the reused key was the
// conflict answered with the wrong code.
func sendConflicting(t *T, k *keyTrial) (c conflictTrial, ok bool) {
	c.inputs, c.key, c.first = k.inputs, k.key, k.first
	other, what, ok := readInputs(t.Env.Describe.Obj).otherInputs(c.inputs)
	if !ok {
		t.NotApplicable("found no second valid value for any declared input, so no request with other valid inputs could be built")
		return c, false
	}
	c.what = what
	c.second = t.Do(runRequest("run", other, c.key, "the same key with other valid inputs: "+what))
	switch {
	case c.second.Is(http.StatusBadRequest, ""):
		spend(t, 1)
		alone := t.Do(runRequest("run", other, freshKey(), "the other inputs alone, under a fresh key: are they valid?"))
		switch {
		case alone.Status == http.StatusOK:
			c.otherValid = alone
		case alone.Is(http.StatusServiceUnavailable, "unavailable"):
			t.Undecided("the other inputs (%s) were refused %s under the reused key, and 503 unavailable alone (the runner was at capacity, §4.5), so whether they are valid is not known", what, c.second.Brief())
		default:
			t.NotApplicable("the other inputs (%s) were refused %s under the reused key and %s alone, under a fresh key: the runner takes them for invalid, so the refusal says nothing about the key", what, c.second.Brief(), alone.Brief())
		}
	case c.second.Is(http.StatusServiceUnavailable, "unavailable"):
		t.Undecided("the second request was refused 503 unavailable (the runner was at capacity, §4.5)")
		return c, false
	}
	return c, true
}

// reserialised writes the body of inputs as another encoder might: keys in
// reverse order, with extra spaces and line breaks. Decoded, it is the same
// request runRequest sends.
func reserialised(inputs map[string]any) string {
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	var b strings.Builder
	b.WriteString("{\n  \"inputs\" : {")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ,")
		}
		fmt.Fprintf(&b, "\n    %s :  %s", jsonText(k), jsonText(inputs[k]))
	}
	b.WriteString("\n  }\n}\n")
	return b.String()
}

// untilAdmitted sends through send again while the runner answers 503
// unavailable, as a run it has not yet finished aborting holds its only
// slot: up to four times more, waiting twice as long each time from the
// runner's own earned wait.
func untilAdmitted(t *T, send func() *wire.Exchange) *wire.Exchange {
	ex := send()
	for i, wait := 0, pollEvery(t); i < 4 && ex.Is(http.StatusServiceUnavailable, "unavailable"); i, wait = i+1, wait*2 {
		sleep(t.Ctx, wait)
		ex = send()
	}
	return ex
}

// maxOverlap is the most runs the checker starts at once: one request in
// flight is left for status.
const maxOverlap = 5

// overlap is what runs started at once showed.
type overlap struct {
	refused *wire.Exchange   // a 503 unavailable, where one came
	other   []*wire.Exchange // answers neither a result nor 503 unavailable
	truly   bool             // every accepted run began before any ended
	why     string           // the timings that say so, or why not
	last    *wire.Exchange
	all     []*wire.Exchange // every answer, in the order sent
	key     string           // the Idempotency-Key the first carried, or ""
}

// overlapping starts n valid runs at once (streams where the runner serves
// them: their start events show when each run began) and reads whether
// they truly overlapped: each began before any one ended. The first
// carries key where one is given. For runs, whose start is unseen, all
// must be sent before any is answered, and they must end together, not
// one agent-length apart as a queue would end them.
func overlapping(t *T, n int, key string) overlap {
	verb := lifeVerb(t)
	r := lifeRequest(t, verb, "", "one of several valid runs started at once")
	first := r
	if key != "" {
		first = lifeRequest(t, verb, key, "one of several valid runs started at once, under a fresh Idempotency-Key")
	}
	exs := t.SideBySide(n, func(i int, _ *engine.Session, ctx context.Context) *wire.Exchange {
		if i == 0 {
			return send(t, ctx, first, nil)
		}
		return send(t, ctx, r, nil)
	})
	o := overlap{all: exs}
	var spans []span
	for _, ex := range exs {
		o.last = ex
		switch sp, ok := spanOf(ex); {
		case ex.Is(http.StatusServiceUnavailable, "unavailable"):
			o.refused = ex
		case ok && (ex.SSE == nil || sp.terminal != nil):
			spans = append(spans, sp)
		default:
			o.other = append(o.other, ex)
		}
	}
	if len(spans) < n {
		return o
	}
	lastBegin, firstEnd := spans[0].began, spans[0].ended
	shortest, lastEnd := spans[0].length(), spans[0].ended
	for _, sp := range spans[1:] {
		if sp.began.After(lastBegin) {
			lastBegin = sp.began
		}
		if sp.ended.Before(firstEnd) {
			firstEnd = sp.ended
		}
		if sp.ended.After(lastEnd) {
			lastEnd = sp.ended
		}
		shortest = min(shortest, sp.length())
	}
	began := "the last began"
	if verb == protocol.Run {
		began = "the last was sent"
	}
	o.why = fmt.Sprintf("%s %s before the first ended; the shortest took %s", began, ms(firstEnd.Sub(lastBegin)), ms(shortest))
	o.truly = lastBegin.Before(firstEnd)
	if verb == protocol.Run {
		o.why += fmt.Sprintf(", and they ended within %s of each other", ms(lastEnd.Sub(firstEnd)))
		o.truly = o.truly && shortest >= 100*time.Millisecond && lastEnd.Sub(firstEnd) < shortest/2
	}
	if !o.truly {
		o.why = "they did not overlap: " + o.why
	}
	return o
}
