package runner

// The shared probes of the rules that run the agent (§4.2, §4.3, §4.5):
// sending a valid run or stream, reading its answer and its events, and
// the needs every such rule has. A section file holds its rules; what
// several sections send or read lives here.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// post sends a run or stream request; a stream goes through the stream
// reader, which reads a 200 as it arrives, under the client's caps on
// bytes, events and time, and notes when each event came.
func post(t *T, r wire.Request) *wire.Exchange {
	ex := send(t, t.Ctx, r, nil)
	t.Cite(ex)
	return ex
}

// send sends r through the session, as a stream where it is one, under
// ctx: for the goroutines of watch and of side-by-side runs.
func send(t *T, ctx context.Context, r wire.Request, until func(wire.SSEEvent) bool) *wire.Exchange {
	if r.Path == wire.Prefix+protocol.Stream {
		return t.Session().Stream(ctx, r, wire.StreamLimits{Until: until})
	}
	return t.Session().Do(ctx, r)
}

// readStream is the events of a 200 stream read to its end, or it skips
// the rule.
func readStream(t *T, ex *wire.Exchange) (wire.SSEStream, bool) {
	switch {
	case ex.Err != nil:
		t.Undecided("the stream was not read to its end (%v); the checker reads a stream whole within --timeout (%s)", ex.Err, t.Env.Client.Timeout())
	case ex.Truncated:
		t.Undecided("the stream ran past the checker's cap of %d bytes", ex.Cap)
	case ex.SSE != nil:
		return *ex.SSE, true
	default:
		s := wire.ParseSSE(ex.Body, wire.DefaultMaxBody)
		if s.Err == nil {
			return s, true
		}
		t.NotApplicable("the stream could not be parsed to its end: %v", s.Err)
	}
	return wire.SSEStream{}, false
}

// eventWhere is the index of the first event for which is holds, or -1.
func eventWhere(s wire.SSEStream, is func(wire.SSEEvent) bool) int {
	for i, ev := range s.Events {
		if is(ev) {
			return i
		}
	}
	return -1
}

func firstEvent(s wire.SSEStream, name string) *wire.SSEEvent {
	if i := eventWhere(s, func(ev wire.SSEEvent) bool { return ev.Name == name }); i >= 0 {
		return &s.Events[i]
	}
	return nil
}

func lastEvent(s wire.SSEStream, name string) *wire.SSEEvent {
	for i := len(s.Events) - 1; i >= 0; i-- {
		if s.Events[i].Name == name {
			return &s.Events[i]
		}
	}
	return nil
}

// payload is an event's data as a JSON object; nil where it is not one.
func payload(ev *wire.SSEEvent) map[string]any {
	if ev == nil {
		return nil
	}
	v, _ := decodeJSON(ev.Data)
	m, _ := v.(map[string]any)
	return m
}

// eventRunID is the run_id string an event's payload carries, or "".
func eventRunID(ev *wire.SSEEvent) string {
	id, _ := payload(ev)["run_id"].(string)
	return id
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// needRunnable is met where status predicts a valid run reaches the agent.
var needRunnable = Need{Name: "runnable", Check: func(e *Env) string {
	if why := needEntitled.Check(e); why != "" {
		return why
	}
	if credentialPublishedMissing(e) {
		return "status publishes a missing credential: a valid run is refused 424 before the agent starts, so there is no result to judge"
	}
	return ""
}}

func runNeeds() []Need { return []Need{NeedExecute, NeedStatus, NeedDescribe, needRunnable} }

func keyedNeeds() []Need {
	return append(runNeeds(), needIdempotentRetry)
}

// quoted is s in quotes, or "none" where it is empty.
func quoted(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// validRun is the check's ordinary run (a rule reading it requires
// ordinaryRun): its answer and its body, or it skips the rule where there
// is no result to read (see runBody).
func validRun(t *T) (*wire.Exchange, map[string]any, bool) {
	ex := ordinaryRun.Of(t).ex
	body, ok := runBody(t, ex)
	return ex, body, ok
}

// validOrSkip is validInputs, or false after skipping the rule where no
// valid inputs can be built.
func validOrSkip(t *T, optionals bool) (map[string]any, bool) {
	inputs, why := validInputs(t.Env.Describe.Obj, optionals)
	if why != "" {
		t.NotApplicable("%s", why)
		return nil, false
	}
	return inputs, true
}

// acceptedValid judges whether a valid request to verb was answered 200,
// and returns the answer it judged. It fails the answers a runner cannot
// give such a request, and skips the ones it may (at capacity, the agent
// failed or timed out, or any other refusal the request itself did not
// cause, which status and the §2.1 rules judge).
//
// No answer at all is told apart by whose doing it was. Where the
// checker's own deadline cut the wait short, the run may still be under
// way (a runner declaring no max_run_seconds imposes no bound, §4.5): it
// warns. Where the runner closed the connection (or answered something
// that is not HTTP), no run is under way that the client will hear of:
// that is confirmed on a second request, one more agent start, and then
// fails; where the second is answered, that answer is judged instead.
func acceptedValid(t *T, ex *wire.Exchange, verb string) (*wire.Exchange, bool) {
	if !ex.Answered() && cutByRunner(ex) {
		spend(t, 1)
		again := admittedRun(t, t.Ctx, lifeRequest(t, verb, "", "a valid "+verb+" again: does the runner close its connection with no answer again?"))
		t.Cite(again)
		if !again.Answered() && cutByRunner(again) {
			t.Fail(again, "two valid %s requests got no answer: the runner closed the connection %s and %s after they were sent, with no status line (%v); §4.2 answers a valid %s with its result or a §2.1 refusal, and a runner that stops runs at a time limit declares it as limits.max_run_seconds and answers 504 run_timeout (§4.5)",
				verb, ms(ex.Elapsed), ms(again.Elapsed), again.Err, verb)
			return again, false
		}
		t.Note("the first valid %s's connection was closed with no answer after %s; a second was answered %s after %s, which is judged", verb, ms(ex.Elapsed), again.Brief(), ms(again.Elapsed))
		ex = again
	}
	switch {
	case !ex.Answered():
		t.Warn(ex, "a valid %s request got no answer within %s; §4.2 requires the result (inferred: a runner declaring no max_run_seconds imposes no bound of its own (§4.5), so the run may still be under way past the checker's deadline)", verb, ms(ex.Elapsed))
	case ex.Status == http.StatusOK:
		return ex, true
	case ex.Status >= 200 && ex.Status < 300:
		t.Fail(ex, "a valid %s request was answered %s; a successful %s answers 200 (§4.1.4, §4.3, §4.5)", verb, ex.Brief(), verb)
	case ex.Status == http.StatusBadRequest:
		var inputs map[string]any
		if m, ok := Path(mustObject(ex.ReqBody), "inputs"); ok {
			inputs, _ = m.(map[string]any)
		}
		if unsure := readInputs(t.Env.Describe.Obj).unreadablePatterns(inputs); len(unsure) > 0 {
			t.NotApplicable("a valid-looking %s was refused %s; the pattern of %s is in a dialect this checker cannot evaluate, so the refusal may be right",
				verb, ex.Brief(), strings.Join(unsure, ", "))
			return ex, false
		}
		t.Warn(ex, "a %s request whose every input passes its declared validation was refused %s (%q); §4.2 refuses only a missing or invalid input (inferred: §4.1.1 leaves validation open and does not say what max_length counts, so what this checker built as valid a careful runner may read otherwise)",
			verb, ex.Brief(), ex.ErrorMessage())
	default:
		skipRefused(t, ex, "a valid %s request was refused %s, which its own body did not cause (at capacity, the agent failed, or the runner not ready); no result to judge",
			verb, ex.Brief())
	}
	return ex, false
}

// cutByRunner reports whether ex ended before a complete answer by the
// runner's doing: the connection closed or reset under it, or what came
// was not HTTP. The checker's own deadlines, the end of the run and its
// deliberate hang-ups are classed otherwise (wire.ErrNoAnswer,
// wire.ErrRunDeadline, wire.ErrHungUp) and are never the runner's.
func cutByRunner(ex *wire.Exchange) bool {
	return errors.Is(ex.Err, wire.ErrReset) || errors.Is(ex.Err, wire.ErrMalformed)
}

func mustObject(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// runBody is the body of a run answered 200, read as a JSON object whatever
// its label. Any other answer skips the rule: 4.2/run-response judges it.
func runBody(t *T, ex *wire.Exchange) (map[string]any, bool) {
	if ex.Status == http.StatusOK && skipTruncated(t, ex, "run") {
		return nil, false
	}
	if ex.Status == http.StatusOK && ex.Err == nil {
		if m := ex.Object(); m != nil {
			return m, true
		}
	}
	t.SkipFor(ex, "the run was answered %s, not 200 with a JSON object, so there is no result to judge; 4.2/run-response judges the answer", ex.Brief())
	return nil, false
}

// skipTruncated skips the rule where the body of a 200 answer to what ran
// past the checker's body cap, so it cannot be read whole (a large bytes
// output, base64-encoded, outgrows it).
func skipTruncated(t *T, ex *wire.Exchange, what string) bool {
	if !ex.Truncated {
		return false
	}
	t.Undecided("the %s answer ran past the checker's body cap of %d bytes, so it cannot be read whole; no result to judge", what, ex.Cap)
	return true
}

// outputMismatch says how an output disagrees with describe's output
// declaration (probs), and notes what differs without breaking a rule: a
// bytes output's media_type (§4.1.4 and §4.2 bind the type only). Shape
// problems are left to the schema.
func outputMismatch(describe map[string]any, output any) (probs, notes []string) {
	out, ok := output.(map[string]any)
	want := Str(describe, "output", "type")
	if !ok || want == "" {
		return nil, nil
	}
	got, _ := out["type"].(string)
	if got != want {
		return []string{fmt.Sprintf("output.type is %s where describe declares %q", quoted(got), want)}, nil
	}
	if want == "bytes" {
		wantMT := Str(describe, "output", "media_type")
		gotMT, _ := out["media_type"].(string)
		if wantMT != "" && gotMT != "" && !strings.EqualFold(wantMT, gotMT) {
			notes = append(notes, fmt.Sprintf("output.media_type is %q where describe declares %q; only the type must agree", gotMT, wantMT))
		}
	}
	return nil, notes
}
