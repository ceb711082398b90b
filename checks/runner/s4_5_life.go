package runner

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §4.5 The life of a run, and the rules of §4.2, §4.3 and §4.4 that only
// a run observed over time can decide: status while a run is in flight,
// concurrency, the time limit, events written as they happen, a client
// going away, and a repeat arriving while its first run is in flight.
//
// Every rule here runs the agent (--execute) and decides from timings it
// measured: each SKIPs, with the numbers, where the runs were too quick to
// tell, and each timing threshold comes from what the runner showed or is
// stated in the finding. These rules run alone (engine.Rule.Alone), so the
// runs a rule watches are the only ones the checker has in flight, and
// they watch the runs the other rules share where they can (runfacts.go):
// the ordinary run and stream, the runs started at once, the stream
// abandoned right after its start.
var section4_5 = []*Rule{
	{
		ID: "4.4/running-in-flight", Section: "4.4", Level: 2, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "status reports state running while a run is in flight",
		Needs: runNeeds(),
		Probe: func(t *T) {
			verbs := []string{protocol.Run}
			if t.Env.Level >= 3 {
				verbs = append(verbs, protocol.Stream)
			}
			var notes []string
			polled := false
			for _, verb := range verbs {
				w := ordinaryRun.Of(t)
				if verb == protocol.Stream {
					w = ordinaryStream.Of(t)
				}
				sp, polls := w.lived(t, verb)
				// A stream's run is in flight from its start event to its
				// terminal one, so every poll between says running. A run's
				// start is unseen: the runner may still be deciding its
				// request (a distributor's answer, say) when the first polls
				// come, so the window opens a tenth of the way in, and only
				// polls that all say otherwise show the state untracked.
				// Each end is kept clear by half a poll interval or, where
				// the runner's answers have earned a longer wait (a loaded
				// machine, whose answers and events reach us late), by that
				// wait, up to a quarter of the span: a poll sent just inside
				// an end as we saw it may reach the runner outside it.
				margin := max(pollEvery(t)/2, min(t.Session().Wait(), sp.length()/4))
				from := sp.began.Add(margin)
				if verb == protocol.Run {
					from = sp.began.Add(max(margin, sp.length()/10))
				}
				mid := within(polls, from, sp.ended.Add(-margin))
				if len(mid) == 0 {
					notes = append(notes, fmt.Sprintf("none of the %d polls (one every %s) fell wholly inside the %s %s",
						len(polls), ms(pollEvery(t)), ms(sp.length()), verb))
					continue
				}
				polled = true
				var off []poll
				for _, p := range mid {
					if p.state != "running" {
						off = append(off, p)
					}
				}
				if len(off) > 0 && (verb == protocol.Stream || len(off) == len(mid)) {
					p := off[0]
					t.Cite(p.ex)
					t.Fail(p.ex, "status answered state %q %s into a %s that ended only after %s (%d of the %d polls inside it said other than running); §4.4 reports running while a run is in flight",
						p.state, ms(p.sent().Sub(sp.began)), verb, ms(sp.length()), len(off), len(mid))
					return
				}
				notes = append(notes, fmt.Sprintf("%d of %d polls inside the %s %s said running", len(mid)-len(off), len(mid), ms(sp.length()), verb))
			}
			if !polled {
				t.NotApplicable("no run lasted long enough to be polled: %s", strings.Join(notes, "; "))
			}
			t.Note("%s", strings.Join(notes, "; "))
		},
		Requires: lifeRuns(),
	},
	{
		ID: "4.4/running-ends", Section: "4.4", Level: 2, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "status leaves state running once no run is in flight",
		Needs: runNeeds(),
		Probe: func(t *T) {
			w := lifeRun(t)
			ex := w.ex
			if _, ok := spanOf(ex); !ok {
				t.SkipFor(ex, "the valid request was answered %s, so no run was in flight to end", ex.Brief())
			}
			p, ok := w.after, w.settled
			t.Cite(p.ex)
			if !ok {
				t.Cite(p.ex)
				t.Fail(p.ex, "status still answered %s %s after the run ended, with nothing else of the checker's in flight; §4.4 reports running only while a run is",
					orAnswer(p), ms(p.sent().Sub(endOf(ex))))
			}
		},
		Requires: lifeRuns(),
	},
	{
		ID: "4.5/concurrency-limit", Section: "4.5", Level: 2, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "a runner declaring max_concurrent_runs N does not run N+1 at once",
		Needs: append(runNeeds(), needLimit("max_concurrent_runs")),
		Probe: func(t *T) {
			n, _ := declaredLimit(t.Env, "max_concurrent_runs")
			o := overlapRuns.Of(t)
			switch {
			case o.refused != nil:
				t.Note("of %d runs started at once, one was refused %s after %s", n+1, o.refused.Brief(), ms(o.refused.Elapsed))
			case len(o.other) > 0:
				t.NotApplicable("of %d runs started at once, one was answered %s, which only 503 unavailable means for a runner at capacity (§4.5); the §2.1 rules judge that answer", n+1, o.other[0].Brief())
			case !o.truly:
				t.NotApplicable("all %d runs started at once were accepted, but they did not overlap: %s", n+1, o.why)
			default:
				// Timings read by the client stretch under load: confirmed
				// on a second set of runs before it is reported.
				spend(t, n+1)
				if again := overlapping(t, n+1, ""); again.refused != nil || len(again.other) > 0 || !again.truly {
					t.NotApplicable("%d runs started at once overlapped (%s), and a second set did not: not confirmed", n+1, o.why)
					return
				}
				t.Fail(o.last, "status declares max_concurrent_runs %d, yet %d runs were in flight at once and all were accepted, twice (%s); §4.5 makes the declared number the ceiling", n, n+1, o.why)
			}
		},
		Requires: []Dep{overlapRuns},
	},
	{
		ID: "4.5/overlap-declared", Section: "4.5", Level: 2, Keyword: Should,
		Title: "a runner that lets runs overlap declares limits.max_concurrent_runs",
		Needs: append(runNeeds(), needNoLimit("max_concurrent_runs")),
		Probe: func(t *T) {
			o := overlapRuns.Of(t)
			switch {
			case o.refused != nil:
				t.Note("of two runs started at once, one was refused %s: this runner does not let runs overlap", o.refused.Brief())
			case len(o.other) > 0:
				t.NotApplicable("of two runs started at once, one was answered %s, so no overlap was shown", o.other[0].Brief())
			case !o.truly:
				t.NotApplicable("both runs started at once were accepted, but they did not overlap: %s", o.why)
			default:
				spend(t, 2)
				if again := overlapping(t, 2, ""); again.refused != nil || len(again.other) > 0 || !again.truly {
					t.NotApplicable("two runs started at once overlapped (%s), and a second pair did not: not confirmed", o.why)
					return
				}
				t.Fail(o.last, "two runs were in flight at once, twice (%s), and status declares no limits.max_concurrent_runs; §4.5 asks a runner permitting overlap to say how much", o.why)
			}
		},
		Requires: []Dep{overlapRuns},
	},
	{
		ID: "4.5/max-run-enforced", Section: "4.5", Level: 2, Keyword: Required, Binding: Chain,
		Chain: "§4.4 requires max_run_seconds where a limit is imposed and absent where none is: a run let past it shows the declared limit imposed nowhere",
		Title: "no run goes on past the max_run_seconds status declares",
		Needs: append(runNeeds(), needLimit("max_run_seconds")),
		Probe: func(t *T) {
			l := maxRunLimit(t)
			ex := ordinaryRun.Of(t).ex
			switch {
			case errors.Is(ex.Err, wire.ErrNoAnswer):
				t.Fail(ex, "a valid run was still unanswered after %s, past the declared max_run_seconds of %d plus %s slack; a runner imposing that limit stops the run and answers 504 (§4.4, §4.5)", ms(ex.Elapsed), l, ms(limitSlack(t, l)))
			case ex.Status == http.StatusOK && ex.Elapsed > limitReach(t, l):
				spend(t, 1)
				again := t.Do(lifeRequest(t, protocol.Run, "", "a valid run again, timed against the declared max_run_seconds: is the first one's overrun confirmed?"))
				if again.Status != http.StatusOK || again.Elapsed <= limitReach(t, l) {
					t.NotApplicable("a run answered 200 after %s, past the declared max_run_seconds of %d, but a second took %s and was answered %s: not confirmed", ms(ex.Elapsed), l, ms(again.Elapsed), again.Brief())
				}
				t.Fail(again, "two valid runs were answered 200 after %s and %s, past the declared max_run_seconds of %d plus %s slack: the limit status declares is not imposed (§4.4, §4.5)",
					ms(ex.Elapsed), ms(again.Elapsed), l, ms(limitSlack(t, l)))
			case ex.Status == http.StatusOK:
				t.NotApplicable("the run took %s, within the declared max_run_seconds of %d: nothing shows whether the limit is imposed", ms(ex.Elapsed), l)
			case !ex.Answered() || ex.Elapsed < nearLimit(l):
				t.NotApplicable("the run was answered %s after %s, before it could reach the declared limit of %d s", ex.Brief(), ms(ex.Elapsed), l)
			default:
				t.Note("the run was stopped %s after it was sent (%s), against a declared limit of %d s", ms(ex.Elapsed), ex.Brief(), l)
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.5/run-timeout-code", Section: "4.5", Level: 2, Keyword: Must, Binding: Contract, Chain: "§4.5",
		Title: "a run stopped at max_run_seconds is answered 504 run_timeout",
		Needs: append(runNeeds(), needLimit("max_run_seconds")),
		Probe: func(t *T) {
			l := maxRunLimit(t)
			ex := ordinaryRun.Of(t).ex
			switch {
			case ex.Status == http.StatusOK:
				t.NotApplicable("the run was answered 200 after %s, so it was not stopped at the limit (4.5/max-run-enforced judges a run let past it)", ms(ex.Elapsed))
			case !ex.Answered() || ex.Elapsed < nearLimit(l):
				t.NotApplicable("the run was answered %s after %s, before it could reach the declared limit of %d s", ex.Brief(), ms(ex.Elapsed), l)
			case ex.Is(http.StatusGatewayTimeout, "run_timeout"):
			case ex.Elapsed > stopWindow(l):
				t.NotApplicable("the run was answered %s after %s, well past the declared limit of %d s: not a stop at the limit", ex.Brief(), ms(ex.Elapsed), l)
			default:
				t.Fail(ex, "a run was answered %s after %s, as its declared max_run_seconds of %d ran out; a run stopped at its limit is answered 504 run_timeout, which tells a client its agent did not fail (§4.5, §2.1)",
					ex.Brief(), ms(ex.Elapsed), l)
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.5/run-timeout-detail", Section: "4.5", Level: 2, Keyword: Should,
		Title: "a run_timeout names the limit as error.detail.max_run_seconds, the value status declares",
		Needs: append(runNeeds(), needLimit("max_run_seconds")),
		Probe: func(t *T) {
			l := maxRunLimit(t)
			ex := ordinaryRun.Of(t).ex
			if !ex.Is(http.StatusGatewayTimeout, "run_timeout") {
				t.NotApplicable("the run was answered %s after %s, not stopped at its limit", ex.Brief(), ms(ex.Elapsed))
			}
			d, _ := ex.ErrorDetail().(map[string]any)
			if v, ok := wholeNumber(d["max_run_seconds"]); !ok || int(v) != l {
				t.Fail(ex, "the 504 run_timeout carries error.detail.max_run_seconds %s; §4.5 asks for the limit status declares, %d", show(d["max_run_seconds"]), l)
			}
		},
		Requires: []Dep{ordinaryRun},
	},
	{
		ID: "4.5/stream-timeout-event", Section: "4.5", Level: 3, Keyword: Must, Binding: Contract, Chain: "§4.5",
		Title: "a stream stopped at max_run_seconds ends with an error event carrying run_timeout",
		Needs: append(runNeeds(), needLimit("max_run_seconds")),
		Probe: func(t *T) {
			l := maxRunLimit(t)
			ex := ordinaryStream.Of(t).ex
			if ex.Status != http.StatusOK {
				if ex.Answered() && ex.Elapsed >= nearLimit(l) && ex.Status >= 400 {
					t.Fail(ex, "the stream was answered %s after %s, as its declared limit of %d s ran out; on a stream a run is under way once start is written, and the timeout arrives as an error event (§4.5)", ex.Brief(), ms(ex.Elapsed), l)
					return
				}
				t.NotApplicable("the stream was answered %s after %s; no run reached the limit", ex.Brief(), ms(ex.Elapsed))
			}
			sp, ok := spanOf(ex)
			if !ok {
				t.NotApplicable("the stream carried no start event (4.3/start-first judges that)")
			}
			end := sp.ended.Sub(ex.Sent)
			switch {
			case sp.terminal == nil && end >= nearLimit(l) && end <= stopWindow(l):
				t.Fail(ex, "the stream ended %s after it was sent, as the declared limit of %d s ran out, with no error event; §4.5 ends a stream stopped at its limit with an error event carrying run_timeout", ms(end), l)
			case sp.terminal == nil:
				t.Undecided("the stream did not end with done or error within what the checker read (%v)", ex.Err)
			case end < nearLimit(l):
				t.NotApplicable("the stream ended with %s after %s, before it could reach the declared limit of %d s", sp.terminal.Name, ms(end), l)
			case sp.terminal.Name == "done":
				t.Fail(ex, "the stream ran %s, past the declared max_run_seconds of %d, and ended with done; §4.5 stops it at the limit with an error event carrying run_timeout", ms(end), l)
			default:
				code, _ := Path(payload(sp.terminal), "error", "code")
				if code != "run_timeout" {
					t.Fail(ex, "the stream ended %s after it was sent, as the declared limit of %d s ran out, with an error event carrying code %s; §4.5 gives a stream stopped at its limit run_timeout", ms(end), l, show(code))
				}
			}
		},
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.5/max-run-declared", Section: "4.5", Level: 2, Keyword: Required,
		Title: "a runner that stops runs at a time limit declares it as limits.max_run_seconds",
		Needs: append(runNeeds(), needNoLimit("max_run_seconds")),
		Probe: func(t *T) {
			var seen, ended []string
			for _, w := range []*watchedRun{ordinaryRun.Of(t), ordinaryStream.Of(t)} {
				if w == nil {
					continue
				}
				if timedOut(w.ex) {
					t.Fail(w.ex, "the runner stopped a run with run_timeout after %s, and status declares no limits.max_run_seconds; §4.4 requires the field wherever a runner imposes a limit", ms(w.ex.Elapsed))
					return
				}
				line := fmt.Sprintf("the %s was answered %s after %s", verbOf(w.ex), w.ex.Brief(), ms(w.ex.Elapsed))
				seen = append(seen, line)
				if w.ex.Status == http.StatusOK && (w.ex.SSE == nil || firstEvent(*w.ex.SSE, "done") != nil) {
					ended = append(ended, line)
				}
			}
			if len(ended) > 0 {
				t.Note("%s: ran to its end, and no undeclared time limit stopped it", strings.Join(ended, "; "))
				return
			}
			t.NotApplicable("%s, not stopped at a time limit: nothing shows an undeclared one", strings.Join(seen, "; "))
		},
		Requires: lifeRuns(),
	},
	{
		ID: "4.3/events-as-completed", Section: "4.3", Level: 3, Keyword: Must,
		Title: "a stream's events are written as each is complete, not held until the run ends",
		Needs: runNeeds(),
		Probe: func(t *T) {
			ex := ordinaryStream.Of(t).ex
			held, looks := heldBack(t, ex)
			switch {
			case held != "":
				spend(t, 1)
				again := t.Stream(lifeRequest(t, protocol.Stream, "", "a valid stream again, each event's arrival timed: are the first one's held-back events confirmed?"), wire.StreamLimits{})
				if held2, _ := heldBack(t, again); held2 != "" {
					t.Fail(again, "%s (seen on two streams; the first: %s)%s; §4.3 writes each event as soon as it is complete", held2, held, codedWords(ex, again))
					return
				}
				t.NotApplicable("the first stream showed held-back events (%s), the second did not: not confirmed", held)
			case looks != "":
				t.Warn(ex, "%s%s; §4.3 writes each event as soon as it is complete (inferred: nothing the runner sent shows when its events were complete)", looks, codedWords(ex))
			}
		},
		Requires: []Dep{ordinaryStream},
	},
	{
		ID: "4.5/abort-on-disconnect", Section: "4.5", Level: 2, Keyword: Should,
		Title: "a runner aborts a run whose client went away: status stops reporting it running",
		Needs: runNeeds(),
		Probe: func(t *T) {
			verb := lifeVerb(t)
			full := tracked(t, lifeRun(t), verb)
			bound := full / 2
			if bound < 2*pollEvery(t) {
				t.NotApplicable("a whole run takes %s: too short to tell an abort from a run ending on its own", ms(full))
			}
			verbs := []string{protocol.Run}
			if verb == protocol.Stream {
				verbs = []string{protocol.Stream, protocol.Run}
			}
			for _, v := range verbs {
				var ex *wire.Exchange
				var left time.Time
				if a := abandonedStream.Of(t); v == protocol.Stream && a != nil {
					ex, left = a.ex, a.left
				} else {
					spend(t, 1)
					ex, left = hungUp(t, lifeRequest(t, v, "", "a valid "+v+", abandoned by the checker mid-run"), full/4)
					t.Cite(ex)
				}
				if !errors.Is(ex.Err, wire.ErrHungUp) {
					t.NotApplicable("the %s meant to be abandoned was answered %s after %s, before the checker hung up", v, ex.Brief(), ms(ex.Elapsed))
				}
				if _, ok := awaitState(t, left.Add(bound), notRunning); ok {
					t.Note("the %s abandoned %s after it was sent (%s) was off status within %s", v, ms(left.Sub(ex.Sent)), abandonedAt(v), ms(time.Since(left)))
					continue
				}
				p, ended := awaitState(t, left.Add(full*3/2), notRunning)
				t.Cite(p.ex)
				kept := "past the checker's wait"
				if ended {
					kept = "until " + ms(p.answered().Sub(left)) + " after"
				}
				t.Fail(p.ex, "the checker hung up on a %s %s after sending it (%s), and status kept reporting running %s (a whole run takes %s); §4.5 asks a runner to abort a run whose client went away", v, ms(left.Sub(ex.Sent)), abandonedAt(v), kept, ms(full))
				return
			}
		},
		Requires: append(lifeRuns(), abandonedStream),
	},
	{
		ID: "4.5/no-late-delivery", Section: "4.5", Level: 3, Keyword: MustNot,
		Title: "an abandoned run's output is never delivered to a later request",
		Needs: runNeeds(),
		Probe: func(t *T) {
			// Every run the checker abandoned so far, this rule's and any
			// earlier rule's: none of their run_ids may come back.
			gone := abandonedRuns(t.Session().Exchanges())
			a := abandonedStream.Of(t)
			ex := a.ex
			sp, ok := spanOf(ex)
			if !ok || sp.runID == "" || !errors.Is(ex.Err, wire.ErrHungUp) {
				t.SkipFor(ex, "the stream meant to be abandoned gave no start event with a run_id to follow (answered %s)", ex.Brief())
			}
			// The later request is the check's second run, sent with the
			// same inputs once the abandoned run would have ended (see
			// secondRun); the ordinary stream is a whole run beside it.
			whole, next := ordinaryStream.Of(t).ex, secondRun.Of(t)
			if _, ok := spanOf(next); !ok {
				t.SkipFor(next, "the run sent after the abandoned stream was answered %s, so it shows no run to compare", next.Brief())
			}
			// A run_id seen again means a late delivery only from a runner
			// that mints a fresh one per run.
			ids := map[string]bool{}
			for _, x := range []*wire.Exchange{ex, whole, next} {
				for _, id := range runIDs(x) {
					ids[id] = true
				}
			}
			if len(ids) < 2 {
				t.NotApplicable("every stream here was answered run_id %q: this runner's run_ids do not tell runs apart (4.2/run-id-unique judges that)", sp.runID)
			}
			if lateDelivery(t, ex, gone) {
				return
			}
			gone[sp.runID] = ex
			lateDelivery(t, next, gone)
		},
		Requires: []Dep{ordinaryStream, abandonedStream, secondRun},
	},
	{
		ID: "4.2/in-flight-repeat-bounded", Section: "4.2", Level: 2, Keyword: Should,
		Title: "a repeat held behind its key's first run, still in flight, waits no longer than max_run_seconds",
		Needs: append(keyedNeeds(), needLimit("max_run_seconds")),
		Probe: func(t *T) {
			l := maxRunLimit(t)
			spend(t, 2) // the first run, and the repeat, which a runner that does not hold runs again
			r := lifeRequest(t, protocol.Run, freshKey(), "a valid run under a fresh Idempotency-Key")
			first := make(chan *wire.Exchange, 1)
			go func() { first <- send(t, t.Ctx, r, nil) }()
			// The repeat goes once the first is under way: the runner's own
			// earned wait after it was sent.
			sleep(t.Ctx, pollEvery(t))
			r2 := r
			r2.Note = "the same request again, while the first is in flight"
			r2.Unreplayable = "it was sent while the same request was still in flight; sent alone, it is a first request"
			ctx, cancel := wire.HangUpAfter(t.Ctx, stopWindow(l))
			repeat := t.Session().Do(ctx, r2)
			cancel()
			ex := <-first
			t.Cite(ex)
			t.Cite(repeat)
			switch {
			case endOf(ex).Before(repeat.Sent):
				t.NotApplicable("the first run was answered %s after %s, before the repeat was sent", ex.Brief(), ms(ex.Elapsed))
			case errors.Is(repeat.Err, wire.ErrHungUp):
				t.Fail(repeat, "the repeat of a key whose first run was in flight was still unanswered after %s, past the declared max_run_seconds of %d plus %s slack (the first was answered %s after %s); §4.2 asks a runner holding a repeat to bound the wait by that limit",
					ms(repeat.Elapsed), l, ms(stopWindow(l)-time.Duration(l)*time.Second), ex.Brief(), ms(ex.Elapsed))
			case !repeat.Answered():
				t.Undecided("the repeat got no answer (%v)", repeat.Err)
			case repeat.Status == http.StatusOK && ex.Status == http.StatusOK && repeat.Object()["run_id"] != ex.Object()["run_id"]:
				t.Note("the repeat ran the agent again (run_id %s beside %s), which §4.2 allows a runner that does not hold", show(repeat.Object()["run_id"]), show(ex.Object()["run_id"]))
			default:
				t.Note("the repeat was answered %s after %s (the first: %s after %s)", repeat.Brief(), ms(repeat.Elapsed), ex.Brief(), ms(ex.Elapsed))
			}
		},
	},
}

// abandonedRuns are the run_ids of the streams in log the checker hung up
// on, each with its exchange.
func abandonedRuns(log []*wire.Exchange) map[string]*wire.Exchange {
	gone := map[string]*wire.Exchange{}
	for _, ex := range log {
		if sp, ok := spanOf(ex); ok && sp.runID != "" && errors.Is(ex.Err, wire.ErrHungUp) {
			gone[sp.runID] = ex
		}
	}
	return gone
}

// lateDelivery fails the rule where ex, a stream without a key, was
// answered as one of the abandoned runs.
func lateDelivery(t *T, ex *wire.Exchange, gone map[string]*wire.Exchange) bool {
	for _, id := range runIDs(ex) {
		if was := gone[id]; was != nil && was != ex {
			t.Cite(was)
			t.Fail(ex, "the checker abandoned a stream right after its start (run_id %q); a later stream without an Idempotency-Key was answered as that run: its output went to another request, which §4.5 forbids", id)
			return true
		}
	}
	return false
}

// runIDs are the run_ids a stream's start and terminal events carry.
func runIDs(ex *wire.Exchange) []string {
	sp, ok := spanOf(ex)
	if !ok {
		return nil
	}
	var ids []string
	if sp.runID != "" {
		ids = append(ids, sp.runID)
	}
	if sp.terminal != nil {
		if id, _ := payload(sp.terminal)["run_id"].(string); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// abandonedAt says when the checker hangs up on verb.
func abandonedAt(verb string) string {
	if verb == protocol.Stream {
		return "right after its start event"
	}
	return "a quarter of a whole run's length in"
}

// timedOut reports whether ex shows a run stopped at a time limit: a 504
// run_timeout, or a stream's error event carrying run_timeout.
func timedOut(ex *wire.Exchange) bool {
	if ex.Is(http.StatusGatewayTimeout, "run_timeout") {
		return true
	}
	if ex.SSE == nil {
		return false
	}
	for i := range ex.SSE.Events {
		ev := &ex.SSE.Events[i]
		if code, _ := Path(payload(ev), "error", "code"); ev.Name == "error" && code == "run_timeout" {
			return true
		}
	}
	return false
}

// lived is the span of a watched run and the polls read while it lived,
// skipping the rule where the answer shows no run (a refusal).
func (w *watchedRun) lived(t *T, verb string) (span, []poll) {
	sp, ok := spanOf(w.ex)
	if !ok {
		t.SkipFor(w.ex, "the valid %s was answered %s, so no run was in flight to observe", verb, w.ex.Brief())
	}
	return sp, w.polls
}

// tracked is the length of a whole watched run of verb, skipping the rule
// where status cannot show a run's life: it never said running inside the
// run, or still said so after it ended.
func tracked(t *T, w *watchedRun, verb string) time.Duration {
	sp, polls := w.lived(t, verb)
	running := false
	for _, p := range within(polls, sp.began, sp.ended) {
		running = running || p.state == "running"
	}
	if !running {
		t.NotApplicable("status never answered running during a whole %s run of %s (%d polls), so it cannot show what became of an abandoned one", verb, ms(sp.length()), len(polls))
	}
	if !w.settled {
		t.NotApplicable("status still answered %s after a whole run ended (4.4/running-ends judges that), so it cannot show an abort", orAnswer(w.after))
	}
	return sp.length()
}

// orAnswer names what a poll saw: its state, or its answer where it gave
// none.
func orAnswer(p poll) string {
	if p.state != "" {
		return "state " + p.state
	}
	return p.ex.Brief()
}

// heldBack reads a stream's arrival times. held is a finding the events
// prove: the whole stream, start included, arrived in one burst at its
// end, though a step it reports took longer than that burst (§4.3's own
// picture of a stream that arrives whole when the agent finishes). looks
// is a finding they only suggest: the same burst with no step to show how
// long the run took, or every event after start held to the end (an agent
// might report its steps only once each is over). Both are "" where the
// events arrived spread out, or the run was too quick to tell.
func heldBack(t *T, ex *wire.Exchange) (held, looks string) {
	if ex.Status != http.StatusOK || ex.SSE == nil {
		t.NotApplicable("the valid stream was answered %s, so there are no events to time", ex.Brief())
	}
	var evs []*wire.SSEEvent
	for i := range ex.SSE.Events {
		if ev := &ex.SSE.Events[i]; ev.Name != "" || ev.Data != "" {
			evs = append(evs, ev)
		}
	}
	if len(evs) < 2 {
		t.NotApplicable("the stream carried %d event(s): nothing to time", len(evs))
	}
	last := evs[len(evs)-1]
	total := last.At
	if total < minTimedRun {
		t.NotApplicable("the stream ended %s after it was sent, under the %s it takes to tell events written as they happen from events held back", ms(total), ms(minTimedRun))
	}
	burst := max(50*time.Millisecond, total/10)
	// The longest step the runner itself reports: the run lasted at least
	// that long after its start event, which was complete before it.
	var step string
	var longest time.Duration
	for _, ev := range evs {
		p := payload(ev)
		if lat, ok := floatOf(p["latency_ms"]); ok && ev.Name == "step" && p["status"] == "finished" && time.Duration(lat)*time.Millisecond > longest {
			step, longest = show(p["name"]), time.Duration(lat)*time.Millisecond
		}
	}
	first := evs[0]
	switch {
	case first.At >= total-burst && longest >= 5*burst/2:
		return fmt.Sprintf("the whole stream, start included, arrived within %s of its end, %s after the request, yet step %s reports latency_ms %d: start, which comes before every step, was complete that long before and was held back",
			ms(total-first.At), ms(total), step, longest.Milliseconds()), ""
	case first.At >= total-burst:
		return "", fmt.Sprintf("all %d events arrived within %s of the end, %s after the request was sent", len(evs), ms(total-first.At), ms(total))
	case len(evs) > 2 && evs[1].At >= total-burst && total-first.At >= minTimedRun:
		return "", fmt.Sprintf("start arrived %s after the request, and every later event (%d) within %s of the end, %s later", ms(first.At), len(evs)-1, ms(total-evs[1].At), ms(total-first.At))
	}
	return "", ""
}

// codedWords says, where the streams were answered gzip-coded, why that
// matters: the checker asks Accept-Encoding: gzip as a browser does
// (wire.Client.Stream), and a compressor that is not flushed after each
// event holds them all, where a client offering no coding (curl, say)
// sees them written as they happen.
func codedWords(exs ...*wire.Exchange) string {
	for _, ex := range exs {
		if ex.Coding != "" {
			return fmt.Sprintf(". The answer was %s-coded (Content-Encoding: %s), for the Accept-Encoding: gzip the checker sends as every browser does: a compressor not flushed after each event holds them all, while a client offering no coding may see them as they happen",
				ex.Coding, ex.Header.Get("Content-Encoding"))
		}
	}
	return ""
}

// minTimedRun is the shortest stream whose arrival times can show events
// held back rather than written as they happened.
const minTimedRun = 500 * time.Millisecond
