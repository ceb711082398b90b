package entitlement

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/clock"
)

// The engine's types, as the harness instantiates them.
type (
	Rule   = engine.Rule[*Env]
	T      = engine.T[*Env]
	Result = engine.Result[*Env]
)

// step is one rule's walk: a runner of its own, launched with a token of
// its own, and the distributor's script for that token.
type step struct {
	t     *T
	token string
	state string
	inst  Instance
	url   *url.URL
	sess  *engine.Session
	// start is when the walk's first answer was scripted, on the clock.
	start time.Time
	// scripted is how many checks the runner had made when the step last
	// changed the script: those after it got the new answer.
	scripted int
	// unconfigured launches the runner with no distributor (§5.1).
	unconfigured bool
	// line is what the step draws (timeline.go).
	line *line
}

// begin scripts a's answer for a fresh token and launches a runner with
// it; where the runner cannot be launched, the rule is skipped.
func begin(t *T, a scripted.Answer) *step {
	s := &step{t: t, token: t.Env.Dist.NewToken(), state: t.Env.stateDir(ruleDir(t.Rule.ID))}
	s.start = t.Env.Clock.Now()
	t.Env.Dist.Answer(s.token, a)
	s.line = t.Env.lines.begin(t.Rule.ID, s.token, s.start)
	s.line.script(s.start, a)
	s.launch()
	return s
}

func ruleDir(id string) string {
	out := []byte(id)
	for i, c := range out {
		if c == '/' || c == '.' {
			out[i] = '-'
		}
	}
	return string(out)
}

// beginUnconfigured launches a runner with no distributor configured: none
// of the distributor's variables is set (§5.1).
func beginUnconfigured(t *T) *step {
	s := &step{t: t, state: t.Env.stateDir(ruleDir(t.Rule.ID)), unconfigured: true}
	s.start = t.Env.Clock.Now()
	s.line = t.Env.lines.begin(t.Rule.ID, "", s.start)
	s.line.band(s.start, "none configured", timeline.Neutral)
	s.launch()
	return s
}

func (s *step) launch() {
	v := Vars{Distributor: s.t.Env.Dist.URL, Token: s.token, State: s.state}
	if s.unconfigured {
		v.Distributor, v.Token = "", ""
	}
	inst, err := s.t.Env.Launcher.Launch(s.t.Ctx, v)
	if err != nil {
		s.t.Undecided("the runner could not be launched: %v", err)
	}
	s.inst = inst
	u, err := wire.ParseTarget(inst.URL())
	if err != nil {
		inst.Stop()
		s.t.Undecided("the launched runner gave an unusable address %q: %v", inst.URL(), err)
	}
	s.url = u
	s.sess = engine.NewSession(wire.New(u, wire.Options{Timeout: s.t.Env.Timeout, Headers: s.t.Env.Headers}), s.t.Env.Timeout, 0)
	go func() { <-s.t.Ctx.Done(); inst.Stop() }()
}

// finish ends the step: its notes say where the runner asked again within
// a window it had been given (given.go), and its runner is stopped.
func (s *step) finish() {
	if !s.unconfigured {
		s.noteEarly()
	}
	s.stop()
}

// stop ends the runner (before a restart, or at the step's end).
func (s *step) stop() {
	if s.inst != nil {
		s.inst.Stop()
	}
}

// restart stops the runner and launches it again, with the same token and
// the same state directory, as a machine rebooting would.
func (s *step) restart() {
	s.stop()
	s.line.mark(s.t.Env.Clock.Now(), "the runner restarted")
	s.launch()
}

// script changes what the distributor answers this step's token.
func (s *step) script(a scripted.Answer) {
	s.t.Env.Dist.Answer(s.token, a)
	s.scripted = s.t.Env.Dist.Count(s.token)
	s.line.script(s.t.Env.Clock.Now(), a)
}

// wait lets d pass on the walk's clock (a fake one is moved forward).
func (s *step) wait(d time.Duration) {
	if f, ok := s.t.Env.Clock.(*clock.Fake); ok {
		f.Advance(d)
		return
	}
	select {
	case <-s.t.Env.Clock.After(d):
	case <-s.t.Ctx.Done():
		s.t.Undecided("the walk's deadline passed while waiting")
	}
}

// waitUntil waits until the clock reads at least at.
func (s *step) waitUntil(at time.Time) {
	if d := at.Sub(s.t.Env.Clock.Now()); d > 0 {
		s.wait(d)
	}
}

// ent is what status says of the entitlement, with the exchange.
type ent struct {
	ex        *wire.Exchange
	block     map[string]any
	state     string
	checkedAt string
	hasAt     bool
}

// status reads the runner's status. A status that does not answer 200
// with an entitlement block gives the step nothing to read: it is skipped,
// and 4.4/status-answers-throughout judges the answer.
func (s *step) status(why string) ent {
	ex := s.do(statusRequest(why))
	e := ent{ex: ex}
	obj := ex.Object()
	if ex.Status != http.StatusOK || obj == nil {
		s.t.SkipFor(ex, "GET status answered %s (%s), so there is no entitlement to read (4.4/status-answers-throughout judges that)", ex.Brief(), why)
	}
	e.block, _ = obj["entitlement"].(map[string]any)
	if e.block == nil {
		s.t.NotApplicable("status carries no entitlement block (%s); the check of the runner judges that (4.4/schema)", why)
	}
	e.state, _ = e.block["state"].(string)
	var at any
	at, e.hasAt = e.block["checked_at"]
	e.checkedAt, _ = at.(string)
	return e
}

// statusUntil reads status, and where what it reports is not what ok
// wants, asks again, within Options.CheckGrace, before the step judges it:
// a would-be FAIL is confirmed. A runner answering status while the check
// that request set off is still in flight reports the moment before the
// answer, which is not the behaviour the step judges.
func (s *step) statusUntil(why string, ok func(ent) bool) ent {
	e := s.status(why)
	for until := s.t.Env.Clock.Now().Add(s.t.Env.CheckGrace); !ok(e) && s.t.Env.Clock.Now().Before(until); {
		s.wait(max(s.slack(), 25*time.Millisecond))
		e = s.status(why + ", asked again to confirm")
	}
	return e
}

// is is an ok for statusUntil: the entitlement reported in state.
func is(state string) func(ent) bool { return func(e ent) bool { return e.state == state } }

// statusRequest is a GET of status, saying why.
func statusRequest(why string) wire.Request {
	r := wire.Get("status")
	r.Note = why
	return r
}

// do sends r to the step's runner, cites the exchange, and records it in
// the walk's log, which the sweeps over every refusal read.
func (s *step) do(r wire.Request) *wire.Exchange {
	at := s.t.Env.Clock.Now()
	r.Unreplayable = unreplayable
	ex := s.sess.Do(s.t.Ctx, r)
	s.line.probe(at, ex)
	s.t.Cite(ex)
	s.t.Env.log.Record(ex)
	return ex
}

// served sends run, and stream, a body no runner can execute (inputs is
// not a map) and returns the answers: 400 where the entitlement is in
// force, 403 or 503 where it is not (§4.6 step 2 comes before the inputs).
// Wherever run is judged stream is too (§4.6, §5.7.4), unless the runner
// declares Level 2 and answers it 501; a Level 1 runner, which answers run
// 501, gives none.
func (s *step) served(why string) []*wire.Exchange {
	var out []*wire.Exchange
	send := func(verb string) *wire.Exchange { return s.do(refusable(verb, why)) }
	for _, verb := range []string{"run", "stream"} {
		ex := send(verb)
		if ex.Is(http.StatusNotImplemented, "not_implemented") {
			break // above the declared level: so is every verb after it
		}
		out = append(out, ex)
	}
	if len(out) == 2 && out[0].Brief() != out[1].Brief() {
		// The entitlement may have moved between the two: run is asked
		// once more, and where it now answers as stream did, the sweep
		// (4.6/walk-stream-as-run) takes the difference for that.
		send("run")
	}
	return out
}

// refusable is a POST of verb with a body no runner can execute (inputs is
// not a map): 400 where the entitlement is in force, 403 or 503 where it
// is not, since §4.6 step 2 comes before the inputs.
func refusable(verb, why string) wire.Request {
	r := wire.PostJSON(verb, `{"inputs": "refusable by any runner"}`)
	r.Note = "inputs is not a map, so no runner can execute it; " + why
	return r
}

// attemptGrace is the grace the step judging 5.7.1/keeps-attempting
// declares: --grace, or AttemptGrace where that is longer.
func attemptGrace(e *Env) time.Duration { return max(e.Grace, AttemptGrace) }

// refusals is served for the rules that have nothing to judge without
// them: a Level 1 runner shows its entitlement in status only.
func (s *step) refusals(why string) []*wire.Exchange {
	out := s.served(why)
	if len(out) == 0 {
		s.t.NotApplicable("run answered 501 not_implemented: a Level 1 runner shows its entitlement in status only")
	}
	return out
}

// refusedAs reports whether ex is a refusal carrying code. Its status is
// judged once, for every refusal of the walk, by 2.1/walk-code-status.
func refusedAs(ex *wire.Exchange, code string) bool {
	return ex.Status >= http.StatusBadRequest && ex.ErrorCode() == code
}

// inForce reports whether ex is the 400 a runner with its entitlement in
// force gives the body served sends.
func inForce(ex *wire.Exchange) bool { return ex.Is(http.StatusBadRequest, "") }

// verbOf is the verb an exchange was sent to.
func verbOf(ex *wire.Exchange) string {
	if i := strings.LastIndex(ex.URL, "/"); i >= 0 {
		return ex.URL[i+1:]
	}
	return ex.URL
}

// walkOrigin is the origin the walk's preflights come from: one no runner
// is configured to allow, so what is judged is only whether the answer
// changes with the entitlement.
const walkOrigin = "https://walk.postern-conformance.invalid"

// preflights sends the CORS preflight of run and stream (§2.3).
func (s *step) preflights(why string) map[string]*wire.Exchange {
	out := map[string]*wire.Exchange{}
	for _, verb := range []string{"run", "stream"} {
		h := http.Header{}
		h.Set("Origin", walkOrigin)
		h.Set("Access-Control-Request-Method", http.MethodPost)
		h.Set("Access-Control-Request-Headers", "content-type")
		out[verb] = s.do(wire.Request{Method: http.MethodOptions, Path: wire.Prefix + verb, Header: h, Note: why})
	}
	return out
}

// checks are the requests the distributor had from this step's runner.
func (s *step) checks() []scripted.Request { return s.t.Env.Dist.Log(s.token) }

// firstCheck waits, briefly, for the runner's first check; where none
// comes, or the distributor could not answer it (a request for no route
// or no identifier), the rule is skipped: the walk has no premise.
func (s *step) firstCheck() scripted.Request {
	c, ok := s.awaitCheck()
	if !ok {
		s.t.Undecided("the runner sent no check with its token to the distributor while answering status, nor within %s after (5.2/bearer-token judges how it presents the token): is %s mapped onto its own distributor setting, and %s onto its token?",
			s.t.Env.CheckGrace, VarDistributor, VarToken)
	}
	if c.Kind == scripted.NoRoute || c.Kind == scripted.BadID {
		s.t.NotApplicable("the runner's check asked for %q, which names no identifier in two segments, so the distributor answered %d and the walk has no answer to start from (5.3.1/two-raw-segments judges the request)", c.Target, c.Status)
	}
	return c
}

// anyCheck is firstCheck for the rules that judge the request itself,
// whatever the distributor could make of it.
func (s *step) anyCheck() scripted.Request {
	c, ok := s.awaitCheck()
	if !ok {
		s.t.Undecided("the runner sent no check with its token to the distributor (5.2/bearer-token judges how it presents the token)")
	}
	return c
}

// awaitCheck is the step's first check with its token: one already made,
// or one made while answering status, or within Options.CheckGrace after.
// Where the distributor answered it, the runner is given the time to take
// the answer in (settle).
func (s *step) awaitCheck() (scripted.Request, bool) {
	c, ok := s.firstLogged()
	if ok && (c.Windowed() || c.Kind == scripted.NotFound) {
		s.settle()
	}
	return c, ok
}

func (s *step) firstLogged() (scripted.Request, bool) {
	if c := s.checks(); len(c) > 0 {
		return c[0], true
	}
	s.status("to let a runner that checks lazily ask the distributor")
	ctx, cancel := context.WithTimeout(s.t.Ctx, s.t.Env.CheckGrace)
	defer cancel()
	req, err := s.t.Env.Dist.Await(ctx, s.token, 0)
	return req, err == nil
}

// settle waits, within Options.CheckGrace, until status shows the runner
// holding an answer. The distributor logs a check as it arrives, and a
// runner checking in the background may answer status before it has read
// the answer: judging it then would judge the moment, not the runner.
func (s *step) settle() {
	s.statusUntil("to let the runner take in the distributor's answer", func(e ent) bool { return e.state != "unknown" || e.hasAt })
}

// pastWindow begins a step answering first, changes the answer to then
// once the runner has checked, and waits until the window of the latest
// answer it was given has ended (it may have asked more than once before
// the change): the premise of most of §5.4 and §5.7. It returns that
// answer, which the step's deadlines run from (given.go). The caller
// finishes s.
func pastWindow(t *T, first, then scripted.Answer) (*step, scripted.Request) {
	s := begin(t, first)
	c := s.firstCheck()
	s.script(then)
	c = s.anchor(c)
	s.waitUntil(windowEnds(c).Add(s.slack()))
	return s, c
}

// reChecked skips a rule whose situation is one the runner meets only by
// asking the distributor again after the window of c, the latest answer
// it was given: a runner that has not asked is holding the answer past
// its window, one behaviour, which 5.4/re-check-after-window and
// 5.4/no-answer-past-window judge. A runner that asked early, since the
// script changed, and was given an answer (a 404, say) holds that one
// whatever the window: it met the situation.
func (s *step) reChecked(c scripted.Request, situation string) {
	for _, r := range s.checks() {
		if r.N > s.scripted && (r.Kind == scripted.NotFound || r.Windowed()) {
			return
		}
	}
	if !checkedSince(s, windowEnds(c)) {
		s.t.NotApplicable("the runner asked the distributor nothing after the window ended at %s, so it never met %s: it holds the answer past its window (5.4/re-check-after-window and 5.4/no-answer-past-window judge that)",
			scripted.Stamp(windowEnds(c)), situation)
	}
}

// windowEnds is checked_at + stale_after_seconds of the answer a check got.
func windowEnds(c scripted.Request) time.Time { return c.WindowEnds() }

// graceEnds is windowEnds + grace_seconds.
func graceEnds(c scripted.Request) time.Time { return c.GraceEnds() }

// active is the answer a walk begins with: active, with the declared
// window and grace, read fresh.
func active(e *Env) scripted.Answer {
	return scripted.Answer{Kind: scripted.Active, StaleAfterSeconds: int(e.Window / time.Second),
		GraceSeconds: int(e.Grace / time.Second)}
}

// slack is what a step waits past a deadline before it holds the runner
// to it. The runner's clock and ours are one clock, and checked_at is what
// the runner read, so a request sent after the deadline reaches it after
// the deadline: the slack only covers the runner's own time to answer, the
// wait its answers so far have earned (engine.Session.Wait), and never
// more than a quarter of the grace, so that a step past the window still
// asks within grace however slowly a loaded machine lets the runner
// answer.
func (s *step) slack() time.Duration { return min(s.sess.Wait(), s.t.Env.Grace/4) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("entitlement: the distributor's own URL %q: %v", s, err))
	}
	return u
}

// The keywords and bindings rules carry.
const (
	Must      = engine.Must
	MustNot   = engine.MustNot
	Required  = engine.Required
	Should    = engine.Should
	ShouldNot = engine.ShouldNot
	Chain     = engine.Chain
	Contract  = engine.Contract
	Inferred  = engine.Inferred
)
