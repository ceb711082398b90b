package runner

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §4.3 POST /postern/v0/stream, judged on the events of a real run, and
// §4.1.4's one stream rule (no delta for a bytes output).
//
// Every rule judges the check's one ordinary stream (ordinaryStream, in
// runfacts.go: so each needs --execute, checked before anything is sent),
// read with wire.ParseSSE, which keeps what a lenient reader would drop. Each
// rule reads the events as leniently as it can apart from the one thing it
// judges, so that one breach is reported by one rule: framing is judged
// only by 4.3/framing, order only by 4.3/start-first and 4.3/ends-once,
// and so on.
var section4_3 = []*Rule{
	{
		ID: "4.3/media-type", Section: "4.3", Level: 3, Keyword: Must, Binding: Contract, Chain: "§4.3",
		Title: "a valid stream request is answered 200 text/event-stream",
		Needs: runNeeds(),
		Probe: func(t *T) {
			ex, ok := acceptedValid(t, ordinaryStream.Of(t).ex, "stream")
			if !ok {
				return
			}
			if mt := ex.MediaType(); mt != "text/event-stream" {
				t.Fail(ex, "a valid stream request was answered 200 labelled %q; §4.3 answers text/event-stream", ex.Header.Get("Content-Type"))
			}
		},
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/framing", Section: "4.3", Level: 3, Keyword: Must,
		Title: "every event has an event: name and a JSON data: payload and ends with a blank line, in UTF-8",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			if !utf8.Valid(ex.Body) {
				t.Fail(ex, "the stream is not valid UTF-8; §4.3 keeps to the event-stream format, which is UTF-8")
			}
			for i, ev := range s.Events {
				var probs []string
				if ev.Name == "" {
					probs = append(probs, "it has no event: field")
				}
				switch {
				case ev.DataLines == 0:
					probs = append(probs, "it has no data: field")
				case !json.Valid([]byte(ev.Data)):
					probs = append(probs, "its data is not JSON")
				}
				if !ev.Terminated {
					probs = append(probs, "no blank line ends it (a browser never dispatches it)")
				}
				// §4.3's MUST is the event-stream shape, and its JSON data:
				// payload is the event grammar §4.3 defines (Contract).
				if len(probs) > 0 {
					t.Fail(ex, "event %d of %d (%s): %s; §4.3 writes each event as event:, data: and a blank line, with JSON data",
						i+1, len(s.Events), oneLine(ev.Raw), strings.Join(probs, "; "))
				}
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/start-first", Section: "4.3", Level: 3, Keyword: Must,
		Title: "the first event of a stream is start",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			switch {
			case len(s.Events) == 0:
				t.Fail(ex, "the 200 stream carried no event; §4.3 opens every stream with start")
			case s.Events[0].Name != "start":
				t.Fail(ex, "the first event is %s, not start (§4.3)", eventWord(s.Events[0]))
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/ends-once", Section: "4.3", Level: 3, Keyword: Must,
		Title:    "a stream ends with exactly one done or error, and nothing after it",
		Needs:    runNeeds(),
		Probe:    endsOnce,
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/done-run-id", Section: "4.3", Level: 3, Keyword: MustNot,
		Title: "a stream names one run: done repeats start's run_id",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			id := eventRunID(firstEvent(s, "start"))
			if id == "" {
				t.NotApplicable("no start event carries a run_id string to compare with; 4.3/start-first and 4.3/event-payloads judge that")
				return
			}
			compared := 0
			for i, ev := range s.Events {
				got := eventRunID(&s.Events[i])
				if (ev.Name != "start" && ev.Name != "done") || got == "" {
					continue
				}
				compared++
				if got != id {
					t.Fail(ex, "start gave run_id %q and a later %s gives %q: two identifiers for one run, which §4.3 forbids", id, ev.Name, got)
				}
			}
			if compared < 2 {
				t.NotApplicable("no done event carries a run_id to compare with start's (the stream ended in error, or done lacks it: 4.3/done-body judges that)")
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/delta-concat", Section: "4.3", Level: 3, Keyword: Must,
		Title: "where deltas are emitted, their text joined in order is done's output.value",
		Needs: append(runNeeds(), needTextOutput),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			value, ok := Path(payload(lastEvent(s, "done")), "output", "value")
			want, isString := value.(string)
			if !ok || !isString {
				t.NotApplicable("the stream has no done carrying an output.value string, so there is no final output for deltas to add up to (§4.5); 4.3/ends-once and 4.3/done-body judge the ending")
				return
			}
			var b strings.Builder
			n := 0
			for i, ev := range s.Events {
				if ev.Name == "delta" {
					n++
					text, _ := payload(&s.Events[i])["text"].(string)
					b.WriteString(text)
				}
			}
			if n == 0 {
				t.Note("no delta was emitted, so there is nothing to add up")
				return
			}
			if got := b.String(); got != want {
				t.Fail(ex, "the deltas (%d) join to %q but done's output.value is %q; §4.3 requires them equal", n,
					wire.Excerpt([]byte(got), 120), wire.Excerpt([]byte(want), 120))
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/no-retry", Section: "4.3", Level: 3, Keyword: MustNot,
		Title: "a stream carries no retry: field",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			if i := eventWhere(s, func(ev wire.SSEEvent) bool { return ev.Retry != nil }); i >= 0 {
				t.Fail(ex, "event %d (%s) carries retry: %s; §4.3 forbids the field, which invites a reconnection that starts a new run (§4.5)",
					i+1, eventWord(s.Events[i]), *s.Events[i].Retry)
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/no-id", Section: "4.3", Level: 3, Keyword: ShouldNot,
		Title: "a stream carries no id: field",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			if i := eventWhere(s, func(ev wire.SSEEvent) bool { return ev.ID != nil }); i >= 0 {
				t.Fail(ex, "event %d (%s) carries id: %s; Postern reads no Last-Event-ID, so §4.3 asks runners to leave the field out",
					i+1, eventWord(s.Events[i]), *s.Events[i].ID)
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/no-latency-on-started", Section: "4.3", Level: 3, Keyword: MustNot,
		Title:  "a step event with status started carries no latency_ms",
		Needs:  runNeeds(),
		Claims: []Claim{{Doc: "stream-event/step", Path: "/latency_ms", Keyword: "false"}},
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			for i, ev := range s.Events {
				p := payload(&s.Events[i])
				if _, has := p["latency_ms"]; ev.Name == "step" && p["status"] == "started" && has {
					t.Fail(ex, "event %d, a started step %s, carries latency_ms %v; §4.3 reports elapsed time on finished only",
						i+1, quoted(fmt.Sprint(p["name"])), p["latency_ms"])
				}
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/event-payloads", Section: "4.3", Level: 3, Keyword: Must, Binding: Contract, Chain: "§4.3",
		Title: "start, step and delta payloads have the members §4.3 gives them",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			for _, ev := range s.Events {
				if ev.Name != "start" && ev.Name != "step" && ev.Name != "delta" {
					continue
				}
				v, err := decodeJSON(ev.Data)
				if err != nil {
					continue // 4.3/framing judges a payload that is not JSON
				}
				schemaFindings(t, "stream-event/"+ev.Name, ex, v)
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/done-body", Section: "4.3", Level: 3, Keyword: Must,
		Title: "done carries a run response body, its output of the type describe declares",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			// The streams the capacity rules started at once end in done
			// events too, where they ran to an end.
			if o, ok := overlapRuns.Peek(t); ok && o != nil {
				for _, other := range o.all {
					if other.SSE != nil && other.Status == http.StatusOK {
						judgeDone(t, other, *other.SSE)
					}
				}
			}
			if judgeDone(t, ex, s) == 0 {
				t.NotApplicable("the stream carried no done event with a JSON payload (it ended in error, or without an ending: 4.3/ends-once judges that)")
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.3/one-data-line", Section: "4.3", Level: 3, Keyword: Should,
		Title: "each event's payload is written on a single data: line",
		Needs: runNeeds(),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			for i, ev := range s.Events {
				if ev.DataLines > 1 {
					t.Fail(ex, "event %d (%s) spreads its payload over %d data: lines; §4.3 asks for one, since JSON needs no line break",
						i+1, eventWord(ev), ev.DataLines)
				}
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.1.4/bytes-no-delta", Section: "4.1.4", Level: 3, Keyword: MustNot,
		Title: "a run whose output is bytes streams no delta event",
		Needs: append(runNeeds(), needBytesOutput),
		Probe: streamProbe(func(t *T, ex *wire.Exchange, s wire.SSEStream) {
			n := 0
			for _, ev := range s.Events {
				if ev.Name == "delta" {
					n++
				}
			}
			if n > 0 {
				t.Fail(ex, "describe declares a bytes output, and the stream carried %d delta event(s); §4.1.4 allows none (progress goes on step)", n)
			}
		}),
		Requires: []Dep{ordinaryStream},
	},
}

// judgeDone judges every done event of s, a stream ex answered, as a run
// response whose output has the type describe declares, and returns how
// many there were with a JSON payload.
func judgeDone(t *T, ex *wire.Exchange, s wire.SSEStream) int {
	n := 0
	for i, ev := range s.Events {
		if ev.Name != "done" {
			continue
		}
		v, err := decodeJSON(ev.Data)
		if err != nil {
			continue // 4.3/framing judges a payload that is not JSON
		}
		n++
		for _, viol := range t.Env.Violations("run-response", v) {
			finding(t, viol.Inferred)(ex, "done (event %d) is not a run response (§4.3, §4.2): %s: %s", i+1, violationAt(viol), viol.Message)
		}
		m, _ := v.(map[string]any)
		probs, notes := outputMismatch(t.Env.Describe.Obj, m["output"])
		for _, p := range probs {
			t.Fail(ex, "done (event %d): %s (§4.1.4, §4.3)", i+1, p)
		}
		for _, n := range notes {
			t.Note("done (event %d): %s", i+1, n)
		}
	}
	return n
}

// needBytesOutput and needTextOutput split runners by describe's output.type.
var (
	needBytesOutput = Need{Name: "bytes-output", Check: func(e *Env) string {
		if e.Describe.Obj == nil || Str(e.Describe.Obj, "output", "type") != "bytes" {
			return "applies where describe declares output.type bytes"
		}
		return ""
	}}
	needTextOutput = Need{Name: "not-bytes-output", Check: func(e *Env) string {
		if e.Describe.Obj != nil && Str(e.Describe.Obj, "output", "type") == "bytes" {
			return "describe declares a bytes output, which streams no delta at all; 4.1.4/bytes-no-delta judges that"
		}
		return ""
	}}
)

// endsOnce judges how the check's ordinary stream ended (4.3/ends-once).
// A stream the runner cut, its connection closed before done or error
// came, ends with neither: §4.5's disconnect, the one ending that
// satisfies §4.3 with neither, is a connection that is gone, not a live
// one the runner closes. The cut is confirmed on a second stream (one
// more agent start) before it fails. A stream the checker's own deadline
// cut short stays undecided.
func endsOnce(t *T) {
	ex := ordinaryStream.Of(t).ex
	if cutUnended(ex) {
		spend(t, 1)
		again := admittedRun(t, t.Ctx, lifeRequest(t, protocol.Stream, "", "a valid stream again: does the runner close it again with neither done nor error?"))
		t.Cite(again)
		if cutUnended(again) {
			t.Fail(again, "the runner closed the stream's connection %s after it was sent, after %d events, without done or error, and did so again on a second stream (%s, %d events; %v); §4.3 ends every stream with exactly one, and a runner that stops runs at a time limit ends the stream with an error event carrying run_timeout (§4.5)",
				ms(ex.Elapsed), len(ex.SSE.Events), ms(again.Elapsed), len(again.SSE.Events), again.Err)
			return
		}
		t.Note("the first stream's connection was closed after %s with neither done nor error; a second was answered %s, which is judged", ms(ex.Elapsed), again.Brief())
		ex = again
	}
	streamJudged(judgeEnds)(t, ex)
}

// judgeEnds judges the ending events of a stream read to its end.
func judgeEnds(t *T, ex *wire.Exchange, s wire.SSEStream) {
	var ends []string
	last := -1
	for i, ev := range s.Events {
		if ev.Name == "done" || ev.Name == "error" {
			ends = append(ends, fmt.Sprintf("%s (event %d)", ev.Name, i+1))
			last = i
		}
	}
	switch {
	case len(ends) == 0:
		t.Fail(ex, "the stream ended after %d events without done or error; §4.3 ends every stream with exactly one", len(s.Events))
	case len(ends) > 1:
		t.Fail(ex, "the stream carried %d ending events, %s; §4.3 allows exactly one", len(ends), strings.Join(ends, ", "))
	case last != len(s.Events)-1:
		t.Fail(ex, "%s is followed by %d more event(s); §4.3 makes the ending event the last", ends[0], len(s.Events)-1-last)
	}
}

// cutUnended reports whether ex is a stream answered 200 whose connection
// the runner closed (cutByRunner) before any done or error came.
func cutUnended(ex *wire.Exchange) bool {
	return ex.Status == http.StatusOK && ex.SSE != nil && cutByRunner(ex) &&
		firstEvent(*ex.SSE, "done") == nil && firstEvent(*ex.SSE, "error") == nil
}

// streamProbe hands the events of the check's ordinary stream to judge;
// where there are none to judge it skips the rule.
func streamProbe(judge func(t *T, ex *wire.Exchange, s wire.SSEStream)) func(*T) {
	return func(t *T) { streamJudged(judge)(t, ordinaryStream.Of(t).ex) }
}

// streamJudged hands the events of the stream ex to judge; where there
// are none to judge it skips the rule.
func streamJudged(judge func(t *T, ex *wire.Exchange, s wire.SSEStream)) func(*T, *wire.Exchange) {
	return func(t *T, ex *wire.Exchange) {
		if ex.Status != http.StatusOK {
			t.SkipFor(ex, "the stream was answered %s, not 200, so there are no events to judge; 4.3/media-type judges the answer", ex.Brief())
			return
		}
		if s, ok := readStream(t, ex); ok {
			judge(t, ex, s)
		}
	}
}

// oneLine is an event's text for a message, its line ends shown as \n.
func oneLine(raw string) string {
	return strings.ReplaceAll(wire.Excerpt([]byte(raw), 160), "\n", `\n`)
}

// eventWord names an event for a message.
func eventWord(ev wire.SSEEvent) string {
	if ev.Name == "" {
		return "an event with no name"
	}
	return ev.Name
}
