package runner

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §4.2 POST /postern/v0/run, judged by running the agent: the shape of a
// successful answer, run_id, usage, and what an Idempotency-Key promises.
//
// Every rule here starts the agent, so every rule needs --execute; the need
// is checked before the probe runs, so without it nothing is sent. The
// rules reading a run's answer judge the one ordinary run of the check,
// and the rules on a key share one key answered on run (runfacts.go): one
// execution serves them all.
var section4_2Run = []*Rule{
	{
		ID: "4.2/run-response", Section: "4.2", Level: 2, Keyword: Must,
		Title: "a valid run's answer is a run response body, carrying run_id and output (a valid run left unanswered within the checker's deadline, or refused 400, only warns)",
		Needs: runNeeds(),
		Probe: func(t *T) {
			// The runs the capacity rules started at once are run
			// responses too, where they were runs and were answered 200.
			if o, ok := overlapRuns.Peek(t); ok && o != nil {
				for _, ex := range o.all {
					if body, err := ex.JSON(); ex.SSE == nil && ex.Status == http.StatusOK && !ex.Truncated && err == nil {
						schemaFindings(t, "run-response", ex, body)
					}
				}
			}
			ex, ok := acceptedValid(t, ordinaryRun.Of(t).ex, "run")
			if !ok {
				return
			}
			if skipTruncated(t, ex, "run") {
				return
			}
			body, err := ex.JSON()
			if err != nil {
				t.Fail(ex, "the 200 answer to a valid run is not JSON (%v); §4.2 requires a run response object", err)
				return
			}
			schemaFindings(t, "run-response", ex, body)
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.2/content-type", Section: "4.2", Level: 2, Keyword: Must, Binding: Contract, Chain: "§2",
		Title: "a successful run answer is labelled application/json",
		Needs: runNeeds(),
		Probe: func(t *T) {
			ex := ordinaryRun.Of(t).ex
			if ex.Status != http.StatusOK {
				t.SkipFor(ex, "the valid run was answered %s, so there is no run response to judge (4.2/run-response judges that)", ex.Brief())
				return
			}
			if mt := ex.MediaType(); mt != "application/json" {
				t.Fail(ex, "the run succeeded but its answer is labelled %q; §2 and §4.2 make a run response application/json",
					ex.Header.Get("Content-Type"))
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.2/output-type", Section: "4.2", Level: 2, Keyword: Must,
		Title:  "a run's output carries the output.type describe declares",
		Needs:  runNeeds(),
		Claims: []Claim{{Doc: "run-response", Path: "/output"}},
		Probe: func(t *T) {
			ex, body, ok := validRun(t)
			if !ok {
				return
			}
			schemaFindings(t, "run-response", ex, body)
			probs, notes := outputMismatch(t.Env.Describe.Obj, body["output"])
			for _, p := range probs {
				t.Fail(ex, "run: %s (§4.1.4, §4.2)", p)
			}
			for _, n := range notes {
				t.Note("run: %s", n)
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.2/run-id-unique", Section: "4.2", Level: 2, Keyword: Must,
		Title: "two executions are answered with two different run_id values",
		Needs: runNeeds(),
		Probe: func(t *T) {
			var ids []string
			var last *wire.Exchange
			for i, ex := range []*wire.Exchange{ordinaryRun.Of(t).ex, secondRun.Of(t)} {
				body, ok := runBody(t, ex)
				if !ok {
					return
				}
				id, ok := body["run_id"].(string)
				if !ok {
					t.NotApplicable("run %d carried no run_id string; 4.2/run-response judges that", i+1)
					return
				}
				ids, last = append(ids, id), ex
			}
			if ids[0] == ids[1] {
				t.Fail(last, "two separate runs, sent without an Idempotency-Key, both answered run_id %q; §4.2 gives every execution its own", ids[0])
			}
		},
		Requires: []Dep{ordinaryRun, secondRun},
	},
	{
		ID: "4.2/usage", Section: "4.2", Level: 2, Keyword: Should,
		Title: "a run response reports usage",
		Needs: runNeeds(),
		Probe: func(t *T) {
			ex, body, ok := validRun(t)
			if !ok {
				return
			}
			if body["usage"] == nil {
				t.Fail(ex, "the run response carries no usage; §4.2 asks for it wherever the runner can work it out")
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.2/no-status-member", Section: "4.2", Level: 2, Keyword: MustNot, Binding: Contract, Chain: "§4.2",
		Title: "a run response carries no status member",
		Needs: runNeeds(),
		Probe: func(t *T) {
			ex, body, ok := validRun(t)
			if !ok {
				return
			}
			if v, has := body["status"]; has {
				t.Fail(ex, "the run response carries a status member (%v); §4.2 says the body carries none, since every failure is a non-2xx envelope and a success is the 200 itself", show(v))
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.2/replay", Section: "4.2", Level: 2, Keyword: Must,
		Title: "a repeat of an answered Idempotency-Key with the same inputs replays the first result: same run_id, same output",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			k := keyAnswered.Of(t)
			r1, ex := k.first, keyedReplays.Of(t).run
			gap, ok := keyHeld(t, k.answered)
			if !ok {
				return
			}
			if ex.Is(http.StatusConflict, "") {
				t.Fail(ex, "the same inputs re-serialised (other key order and whitespace) under the same key, %s after the first answer, were refused %s: §4.2 compares inputs as decoded values, so this is the same request and is a replay",
					gap, ex.Brief())
				return
			}
			judgeReplay(t, ex, r1, fmt.Sprintf("the same key and inputs again, %s after the first answer", gap))
		},
		Requires: []Dep{keyAnswered, keyedReplays},
	},
	{
		ID: "4.2/idempotency-conflict", Section: "4.2", Level: 2, Keyword: Must,
		Title: "an answered Idempotency-Key sent with different inputs is refused 409 idempotency_conflict",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			c := keyedConflict.Of(t)
			switch ex := c.second; {
			case ex.Is(http.StatusConflict, "idempotency_conflict"):
			case ex.Status == http.StatusOK && skipTruncated(t, ex, "second run"):
			case ex.Status == http.StatusOK && ex.Object() != nil && reflect.DeepEqual(ex.Object()["run_id"], c.first["run_id"]):
				t.Fail(ex, "a key answered for one set of inputs was sent with others (%s) and the first run (run_id %v) was replayed; §4.2 requires 409 idempotency_conflict",
					c.what, show(c.first["run_id"]))
			case ex.Status == http.StatusOK:
				t.Fail(ex, "a key answered for one set of inputs was sent with others (%s) and the agent ran again; §4.2 requires 409 idempotency_conflict", c.what)
			case c.otherValid != nil:
				t.Fail(ex, "a key answered for one set of inputs was sent with others (%s) and refused %s, though the same inputs alone under a fresh key ran (%s): they are valid, so this was the conflict, and §4.2 answers it 409 idempotency_conflict, not bad_request",
					c.what, ex.Brief(), c.otherValid.Brief())
			default:
				t.Fail(ex, "a key answered for one set of inputs was sent with others (%s) and answered %s; §4.2 requires 409 idempotency_conflict", c.what, ex.Brief())
			}
		},
		Requires: []Dep{keyedConflict},
	},
	{
		ID: "4.2/conflict-binds-nothing", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "a key stays bound to the inputs it was first answered for",
		Title: "other inputs under an answered Idempotency-Key leave it bound to its first answer: the first inputs still replay the first run",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			c := keyedConflict.Of(t)
			if !c.second.Is(http.StatusConflict, "idempotency_conflict") {
				t.Note("the other inputs were answered %s, not 409; 4.2/idempotency-conflict judges that answer", c.second.Brief())
			}
			ex := t.Do(runRequest("run", c.inputs, c.key, "the first inputs again, under the key the other inputs were just sent with"))
			if ex.Is(http.StatusConflict, "") {
				t.Fail(ex, "a key answered for one set of inputs, then sent with others (%s, answered %s), now refuses the first inputs %s: it was bound again to the others, though §4.2 has a 409 run nothing and bind nothing",
					c.what, c.second.Brief(), ex.Brief())
				return
			}
			judgeReplay(t, ex, c.first, fmt.Sprintf("the first inputs again under the key, once other inputs (%s) had been answered %s under it", c.what, c.second.Brief()))
		},
		Requires: []Dep{keyedConflict},
	},
	{
		ID: "4.2/one-keyspace", Section: "4.2", Level: 3, Keyword: Must,
		Title: "a key answered on run replays on stream: start and done carry the first run's run_id",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			k := keyAnswered.Of(t)
			gap, ok := keyHeld(t, k.answered)
			if !ok {
				return
			}
			id, ok := k.first["run_id"].(string)
			if !ok {
				t.NotApplicable("the run carried no run_id string to look for; 4.2/run-response judges that")
				return
			}
			ex := keyedReplays.Of(t).stream
			switch {
			case ex.Is(http.StatusServiceUnavailable, "unavailable"):
				t.Undecided("the stream was refused 503 unavailable (the runner was at capacity, §4.5)")
				return
			case ex.Status != http.StatusOK:
				t.Fail(ex, "a key answered on run (run_id %q) was sent to stream with the same inputs and answered %s; §4.2 makes one keyspace of both verbs, so this is a replay", id, ex.Brief())
				return
			}
			s, ok := readStream(t, ex)
			if !ok {
				return
			}
			start, done := firstEvent(s, "start"), firstEvent(s, "done")
			var probs []string
			if got := eventRunID(start); got != id {
				probs = append(probs, "start carries run_id "+quoted(got))
			}
			if got := eventRunID(done); got != id {
				probs = append(probs, "done carries run_id "+quoted(got))
			}
			for _, ev := range s.Events {
				if got := eventRunID(&ev); got != "" && got != id && ev.Name != "start" && ev.Name != "done" {
					probs = append(probs, fmt.Sprintf("a %s event carries run_id %q", ev.Name, got))
				}
			}
			if len(probs) > 0 {
				t.Fail(ex, "a key answered on run (run_id %q) was sent to stream with the same inputs %s later, and %s; §4.2 requires a replay, start then done naming the first execution",
					id, gap, strings.Join(probs, ", "))
			}
		},
		Requires: []Dep{keyAnswered, keyedReplays},
	},
	{
		ID: "4.2/one-keyspace-reverse", Section: "4.2", Level: 3, Keyword: Must,
		Title: "a key answered on stream replays on run: the run answers the stream's run_id and output",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			inputs, ok := validOrSkip(t, false)
			if !ok {
				return
			}
			key, r1, gap, ok := streamKey(t)
			if !ok {
				spend(t, 1)
				key, r1, gap, ok = answerKey(t, "stream", inputs)
			}
			if !ok {
				return
			}
			id, ok := r1["run_id"].(string)
			if !ok {
				t.NotApplicable("the stream's done event carried no run_id string to look for; 4.3/done-body judges that")
				return
			}
			ex := t.Do(runRequest("run", inputs, key, "the same key and inputs, now on run"))
			judgeReplay(t, ex, r1, fmt.Sprintf("a key answered on stream (run_id %q), sent to run with the same inputs %s later (§4.2 makes one keyspace of both verbs)", id, gap))
		},
	},
	{
		ID: "4.2/refusal-501-binds-nothing", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "a refused request binds nothing; run is implemented at Level 2",
		Title: "a stream refused 501 on a Level 2 runner binds no Idempotency-Key: a valid run under that key then runs",
		Needs: keyedNeeds(),
		Probe: func(t *T) {
			if t.Env.Level >= protocol.LevelOf(protocol.Stream) {
				t.NotApplicable("the runner declares Level %d: stream is implemented, so there is no 501 to provoke", t.Env.Level)
				return
			}
			inputs, ok := validOrSkip(t, false)
			if !ok {
				return
			}
			key := freshKey()
			refused := post(t, runRequest("stream", inputs, key, "a valid stream, above this runner's level, under a fresh Idempotency-Key"))
			if !refused.Is(http.StatusNotImplemented, "not_implemented") {
				t.SkipFor(refused, "the stream was answered %s, not 501 not_implemented, so no 501 was made to test the key against; 3/stream-above-level judges that answer", refused.Brief())
				return
			}
			spend(t, 1)
			ex := t.Do(runRequest("run", inputs, key, "the same key and inputs, now on run"))
			switch {
			case ex.Is(http.StatusConflict, ""):
				t.Fail(ex, "a stream refused 501 under an Idempotency-Key was followed by a valid run under the same key, answered %s: the 501 ran nothing, and §4.2 has such a refusal bind no key", ex.Brief())
			case ex.Is(http.StatusNotImplemented, ""):
				t.Fail(ex, "a valid run under the key of a stream just refused 501 was answered %s: the refusal was replayed, though it ran nothing and binds no key (§4.2), and run is implemented at Level 2 (§3)", ex.Brief())
			case ex.Status == http.StatusOK && skipTruncated(t, ex, "run"):
			case ex.Status == http.StatusOK:
				if _, ok := ex.Object()["run_id"].(string); !ok {
					t.NotApplicable("the run was answered 200 without a run_id string; 4.2/run-response judges that")
				}
			default:
				t.SkipFor(ex, "the run under the key was answered %s, which says nothing about the key; no result to judge", ex.Brief())
			}
		},
	},
}

// judgeReplay judges ex, a repeat under a key first answered with first, as
// a replay: 200 with the first execution's run_id and output. repeat says
// what was sent, for the messages.
func judgeReplay(t *T, ex *wire.Exchange, first map[string]any, repeat string) {
	switch {
	case ex.Is(http.StatusServiceUnavailable, "unavailable"):
		t.Undecided("%s: refused 503 unavailable (the runner was at capacity, §4.5)", repeat)
		return
	case ex.Status != http.StatusOK:
		t.Fail(ex, "%s: got %s; §4.2 requires the first execution's result", repeat, ex.Brief())
		return
	case skipTruncated(t, ex, "repeated run"):
		return
	}
	again := ex.Object()
	if again == nil {
		t.Fail(ex, "%s: the 200 answer is not a JSON object; §4.2 requires the first execution's result", repeat)
		return
	}
	if !reflect.DeepEqual(first["run_id"], again["run_id"]) {
		t.Fail(ex, "%s: got run_id %v where the first execution reported %v; a replay names the execution it replays (§4.2), and a new id means a new execution or a fabricated one",
			repeat, show(again["run_id"]), show(first["run_id"]))
	}
	if !reflect.DeepEqual(first["output"], again["output"]) {
		t.Fail(ex, "%s: the output differs from the first execution's; §4.2 requires the first execution's result", repeat)
	}
}

// keyHeld says how long ago a key was answered, and skips the rule where
// status declares a retention the key has already outlived (§4.2 lets a
// runner forget a key after any window it chooses).
func keyHeld(t *T, answered time.Time) (string, bool) {
	gap := time.Since(answered)
	v, _ := Path(t.Env.Status.Obj, "limits", "idempotency_retention_seconds")
	if n, ok := AsInt(v); ok && gap > time.Duration(n)*time.Second {
		t.NotApplicable("the key was answered %s ago, longer than the %ds status.limits.idempotency_retention_seconds declares: the runner may have forgotten it", gap.Round(time.Millisecond), n)
		return "", false
	}
	return fmt.Sprintf("%d ms", gap.Milliseconds()), true
}

// answerKey sends a valid request of inputs to verb under a fresh
// Idempotency-Key and returns the key, the result (the run response, which
// on stream is what the done event carries) and how long ago it came, for
// messages. Where no result came, or the runner may already have forgotten
// the key (see keyHeld), it skips the rule (see runBody, doneBody).
func answerKey(t *T, verb string, inputs map[string]any) (key string, result map[string]any, gap string, ok bool) {
	key = freshKey()
	ex := post(t, runRequest(verb, inputs, key, "a valid "+verb+" under a fresh Idempotency-Key"))
	if verb == "stream" {
		result, ok = doneBody(t, ex)
	} else {
		result, ok = runBody(t, ex)
	}
	if !ok {
		return key, nil, "", false
	}
	gap, ok = keyHeld(t, time.Now())
	return key, result, gap, ok
}

// streamKey is a key the check has already answered on stream, where one
// of the runs the capacity rules started at once carried it and ran to its
// done event: the key, that result and how long ago it came. ok is false
// where there is none (the run under the key was refused at capacity, say).
func streamKey(t *T) (key string, result map[string]any, gap string, ok bool) {
	o, ok := overlapRuns.Peek(t)
	if !ok || o == nil || o.key == "" || len(o.all) == 0 {
		return "", nil, "", false
	}
	ex := o.all[0]
	if ex.Status != http.StatusOK || ex.SSE == nil {
		return "", nil, "", false
	}
	if result = payload(lastEvent(*ex.SSE, "done")); result == nil {
		return "", nil, "", false
	}
	gap, ok = keyHeld(t, endOf(ex))
	return o.key, result, gap, ok
}

// doneBody is the run response the done event of a stream answered 200
// carries. Anything else skips the rule: the 4.3 rules judge the stream.
func doneBody(t *T, ex *wire.Exchange) (map[string]any, bool) {
	if ex.Status != http.StatusOK {
		t.SkipFor(ex, "the stream was answered %s, not 200, so there is no result to judge; 4.3/media-type judges the answer", ex.Brief())
		return nil, false
	}
	s, ok := readStream(t, ex)
	if !ok {
		return nil, false
	}
	if body := payload(lastEvent(s, "done")); body != nil {
		return body, true
	}
	t.NotApplicable("the stream carried no done event with a JSON object, so there is no result to judge; the 4.3 rules judge its events")
	return nil, false
}
