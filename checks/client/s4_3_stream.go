package client

import (
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §4.3: a client reads the stream with the text/event-stream grammar of
// the HTML Living Standard, not a grammar of its own; it skips event
// names it does not know, ignores id: and retry:, prefers done over the
// deltas, and ignores latency_ms on a started step. Each grammar rule is
// observed in a scenario whose runner uses that one latitude, and holds
// where the client still ends as the plain stream does: exit 0, done's
// value on stdout.

var section4_3 = []*Rule{
	observed(&Rule{ID: "4.3/client-plain-stream", Section: "4.3", Level: 3, Keyword: Must,
		Title: "a client that streams reads the plainest stream: done's value printed, exit 0",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.PlainStream)
			finished(t, tr)
			served(t, tr)
			if len(tr.sent(protocol.Stream)) == 0 {
				t.NotApplicable("the client does not stream: asked for a stream, it sent %s", tr.brief())
			}
			printsValue(t, tr, "reading a stream of LF-ended lines, one data: line an event, nothing unusual")
		}}, scripted.PlainStream),
	grammar("client-comments", scripted.Comments, Must,
		"a client skips comment lines, wherever they fall",
		"with comment lines before, between and inside events (§4.3: a line beginning with a colon is a comment, which a client skips)"),
	grammar("client-multiline-data", scripted.MultilineData, Must,
		"a client joins an event's several data: lines into one payload",
		"with each payload over several data: lines (§4.3: the lines join with a newline, and a client reassembles them)"),
	grammar("client-crlf", scripted.CRLF, Must,
		"a client reads CRLF line ends as the format does",
		"with every line ended CRLF (§4.3: the format's grammar, which admits CRLF, LF and CR line ends)"),
	grammar("client-lone-cr", scripted.LoneCR, Must,
		"a client reads lone CR line ends as the format does",
		"with every line ended by a lone CR (§4.3: the format's grammar, which admits CRLF, LF and CR line ends)"),
	grammar("client-no-space", scripted.NoSpace, Must,
		"a client reads a field with no space after its colon",
		"with event:name and data:payload, no space after the colon (§4.3: the format's grammar, in which the space is optional)"),
	grammar("client-unknown-field", scripted.UnknownField, Must,
		"a client ignores a field the format does not define",
		"with a trace: line in every event (§4.3: the format's grammar, which ignores a field it does not know)"),
	grammar("client-id-ignored", scripted.IDLines, Must,
		"a client ignores id: lines",
		"with an id: line in every event (§4.3: a client ignores id: where it meets it)"),
	observed(&Rule{ID: "4.3/client-retry-ignored", Section: "4.3", Level: 3, Keyword: Must,
		Title: "a client ignores retry: and opens no second stream, whether the stream ends or drops",
		Probe: func(t *T) {
			judged := 0
			for _, name := range []string{scripted.RetryLine, scripted.RetryDropped} {
				tr := t.Env.Trial(name)
				if tr == nil || tr.Err != nil || len(tr.sent(protocol.Stream)) == 0 {
					continue
				}
				judged++
				cite(t, tr)
				if n := len(tr.sent(protocol.Stream)) + tr.Dropped; n > 1 {
					fail(t, tr, tr.sent(protocol.Stream)[1].Ex, "with a retry: line in the stream, the client sent %d stream requests: it reconnected, as retry: instructs, and each stream is a new run of the agent (§4.3: a client ignores retry:; §4.5: a reopened stream starts the agent again)", n)
				}
			}
			tr := trialOf(t, scripted.RetryLine)
			finished(t, tr)
			streamed(t, tr)
			printsValue(t, tr, "with a retry: line before the first event (§4.3: a client ignores retry: where it meets it)")
			if judged == 0 {
				t.NotApplicable("the client sent no stream request in either scenario")
			}
		}}, scripted.RetryLine, scripted.RetryDropped),
	grammar("client-unknown-event", scripted.UnknownEvent, Must,
		"a client skips event names it does not know rather than aborting",
		"with events named progress and usage-estimate between the deltas (§4.3: a client ignores unrecognised event names)"),
	observed(&Rule{ID: "4.3/client-prefers-done", Section: "4.3", Level: 3, Keyword: Should,
		Title: "where the deltas and done disagree, a client shows done's value",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.DeltasDisagree)
			finished(t, tr)
			streamed(t, tr)
			if tr.Process.Exit != 0 {
				t.NotApplicable("the client called the run failed, which 4.3/client-disagreement-not-failure judges")
			}
			if !tr.printed(tr.Scenario.Value) {
				fail(t, tr, nil, "with deltas adding up to %q and done carrying %q, the client printed %s (§4.3: a client prefers done's output.value, the result; the deltas were a preview)",
					tr.Scenario.Hidden, tr.Scenario.Value, quoteTail(tr.Process.Stdout, tr.Process.StdoutCut))
			}
		}}, scripted.DeltasDisagree),
	observed(&Rule{ID: "4.3/client-disagreement-not-failure", Section: "4.3", Level: 3, Keyword: MustNot,
		Title: "a client does not call a run failed only because its deltas and done disagree",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.DeltasDisagree)
			finished(t, tr)
			streamed(t, tr)
			if p := tr.Process; p.Exit != 0 || p.Signal != "" {
				fail(t, tr, nil, "the stream ended with done after deltas that disagree with it, and the client reported a failure (%s): the run succeeded, and done carried its result intact (§4.3)", p.ending())
			}
		}}, scripted.DeltasDisagree),
	grammar("client-started-latency", scripted.StartedLatency, Must,
		"a client ignores latency_ms on a started step rather than rejecting the event",
		"with a started step carrying latency_ms (§4.3: a client ignores it rather than reject the event)"),
}

// grammar is a rule observed in one stream scenario that holds where the
// client ends as the plain stream does: exit 0, done's value printed.
func grammar(name, scenario string, kw Keyword, title, why string) *Rule {
	return observed(&Rule{ID: "4.3/" + name, Section: "4.3", Level: 3, Keyword: kw, Title: title,
		Probe: func(t *T) {
			tr := trialOf(t, scenario)
			finished(t, tr)
			streamed(t, tr)
			printsValue(t, tr, why)
		}}, scenario)
}
