package runner

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// What the rules on the life of a run (s4_5_life.go) share: status polled
// while a run lives, the times of an exchange on one clock, the limits
// status declares, and a run abandoned on purpose.
//
// A real agent takes as long as it takes, so each of those rules decides
// from timings it measured, and every threshold below is either derived
// from what the runner showed (its own answer times, its declared limits,
// the length of its own runs) or stated in the message that uses it.

// poll is one status answer read while a run lives.
type poll struct {
	ex    *wire.Exchange
	state string
}

func (p poll) sent() time.Time     { return p.ex.Sent }
func (p poll) answered() time.Time { return endOf(p.ex) }

// endOf is when ex's answer was complete.
func endOf(ex *wire.Exchange) time.Time { return ex.Sent.Add(ex.Elapsed) }

// at is when ev arrived, on the same clock as ex.Sent.
func at(ex *wire.Exchange, ev *wire.SSEEvent) time.Time { return ex.Sent.Add(ev.At) }

// ms is a duration as a message shows it.
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// pollStatus reads status once, outside the rule's evidence (a deciding
// poll is cited where it decides).
func pollStatus(t *T) poll {
	ex := t.Session().Do(t.Ctx, wire.Request{Method: http.MethodGet, Path: wire.Prefix + protocol.Status,
		Note: "status, read while a run lives", Unreplayable: "status was read while a run lived, to see what it said then; sent alone, it finds no run"})
	st, _ := ex.Object()["state"].(string)
	return poll{ex, st}
}

// pollEvery is how often status is polled while a run lives: the
// runner's own earned wait, between twenty and ten times a second (more
// often would load the runner for nothing; less would blur what a run of
// a second shows).
func pollEvery(t *T) time.Duration {
	return min(max(t.Session().Wait(), 50*time.Millisecond), 100*time.Millisecond)
}

// maxPolls bounds the polls of one watched run.
const maxPolls = 200

// watch sends a request through send and polls status until it is
// answered. send must only send (it runs on another goroutine).
func watch(t *T, send func() *wire.Exchange) (*wire.Exchange, []poll) {
	done := make(chan *wire.Exchange, 1)
	go func() { done <- send() }()
	var polls []poll
	tick := time.NewTicker(pollEvery(t))
	defer tick.Stop()
	for {
		select {
		case ex := <-done:
			return ex, polls
		case <-tick.C:
			if len(polls) < maxPolls {
				polls = append(polls, pollStatus(t))
			}
		}
	}
}

// within are the polls sent no earlier than from and answered no later
// than to.
func within(polls []poll, from, to time.Time) []poll {
	var out []poll
	for _, p := range polls {
		if p.ex.Answered() && !p.sent().Before(from) && !p.answered().After(to) {
			out = append(out, p)
		}
	}
	return out
}

// awaitState polls status until its state satisfies is or the time runs
// out, and returns the last poll and whether is held.
func awaitState(t *T, until time.Time, is func(string) bool) (poll, bool) {
	for {
		p := pollStatus(t)
		if p.ex.Answered() && is(p.state) {
			return p, true
		}
		if !time.Now().Before(until) || t.Ctx.Err() != nil {
			return p, false
		}
		sleep(t.Ctx, pollEvery(t))
	}
}

func notRunning(s string) bool { return s != "running" }

func sleep(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// declaredLimit is status.limits.name where it is a whole number of at
// least 1.
func declaredLimit(e *Env, name string) (int, bool) {
	v, ok := Path(e.Status.Obj, "limits", name)
	if !ok {
		return 0, false
	}
	f, whole := wholeNumber(v)
	if !whole || f < 1 || f > 1e6 {
		return 0, false
	}
	return int(f), true
}

// needLimit is met where status declares limits.name.
func needLimit(name string) Need {
	return Need{Name: "limit-" + name, Check: func(e *Env) string {
		if _, ok := declaredLimit(e, name); !ok {
			return "applies where status declares limits." + name + "; this runner declares none"
		}
		return ""
	}}
}

// needNoLimit is met where status declares no limits.name.
func needNoLimit(name string) Need {
	return Need{Name: "no-limit-" + name, Check: func(e *Env) string {
		if n, ok := declaredLimit(e, name); ok {
			return fmt.Sprintf("applies where status declares no limits.%s; this runner declares %d", name, n)
		}
		return ""
	}}
}

// limitSlack is how far past a declared max_run_seconds a run may be seen
// to end before the checker calls the limit unenforced. It is derived as
// the earned waits are, from the runner's own answer times: the earned
// wait (ten times its typical answer: tens of milliseconds on loopback)
// once for the request reaching the runner before its clock starts and
// once for the answer coming back, and a hundredth of the limit for the
// runner's timer. A run seen past it is confirmed on a second run.
func limitSlack(t *T, limit int) time.Duration {
	return 2*t.Session().Wait() + time.Duration(limit)*time.Second/100
}

// limitReach is how long after its request a run let past limit is
// answered at the earliest (see limitSlack).
func limitReach(t *T, limit int) time.Duration {
	return time.Duration(limit)*time.Second + limitSlack(t, limit)
}

// stopWindow is how long after its request a run stopped at limit may be
// answered, for telling a stop at the limit from an answer that has
// nothing to do with it: a second and a tenth of the limit, wide enough
// for a loaded runner, since nothing fails on it alone. nearLimit is how
// long at the earliest.
func stopWindow(limit int) time.Duration {
	return time.Duration(limit)*time.Second + time.Second + time.Duration(limit)*time.Second/10
}
func nearLimit(limit int) time.Duration { return time.Duration(limit) * time.Second * 9 / 10 }

// maxRunLimit is the declared max_run_seconds, skipping the rule where a
// run reaching it could not be waited for within --timeout.
func maxRunLimit(t *T) int {
	l, _ := declaredLimit(t.Env, "max_run_seconds")
	if reach := stopWindow(l) + time.Second; reach > t.Env.Client.Timeout() {
		t.NeedsOption("status declares max_run_seconds %d: seeing a run reach it takes up to %s, longer than --timeout %s; raise --timeout to check it",
			l, ms(reach), t.Env.Client.Timeout())
	}
	return l
}

// lifeRequest is a valid request to verb, with key where one is given.
func lifeRequest(t *T, verb, key, note string) wire.Request {
	inputs, _ := validOrSkip(t, false)
	return runRequest(verb, inputs, key, note)
}

// lifeVerb is the verb a rule watches a run over: stream where the runner
// serves it, since its start event shows when the run began.
func lifeVerb(t *T) string {
	if t.Env.Level >= 3 {
		return protocol.Stream
	}
	return protocol.Run
}

// span is a run as the checker saw it: when it began (a stream's start
// event; a run's request) and when it ended (the terminal event; the
// answer), or ok false where it did not run to an end: a refusal, or a
// stream with no start.
type span struct {
	began, ended time.Time
	startEv      *wire.SSEEvent
	terminal     *wire.SSEEvent
	runID        string
}

func (s span) length() time.Duration { return s.ended.Sub(s.began) }

// ran reports whether a run's answer shows its agent ran: a result, a
// stop at the time limit, or the agent's own failure.
func ran(ex *wire.Exchange) bool {
	return ex.Status == http.StatusOK || ex.Is(http.StatusGatewayTimeout, "run_timeout") || ex.Is(http.StatusInternalServerError, "agent_error")
}

// spanOf reads the span of a run or stream whose agent ran (see ran), ok
// false otherwise.
func spanOf(ex *wire.Exchange) (span, bool) {
	if ex.SSE == nil {
		if ran(ex) {
			id, _ := ex.Object()["run_id"].(string)
			return span{began: ex.Sent, ended: endOf(ex), runID: id}, true
		}
		return span{}, false
	}
	s := *ex.SSE
	st := firstEvent(s, "start")
	if st == nil {
		return span{}, false
	}
	sp := span{began: at(ex, st), ended: endOf(ex), startEv: st, runID: eventRunID(st)}
	for i := len(s.Events) - 1; i >= 0; i-- {
		if n := s.Events[i].Name; n == "done" || n == "error" {
			sp.terminal = &s.Events[i]
			sp.ended = at(ex, sp.terminal)
			break
		}
	}
	return sp, true
}

// hungUp sends r and hangs up mid-run: a stream right after its start
// event, a run after the given time. It returns the exchange and when the
// checker hung up.
func hungUp(t *T, r wire.Request, after time.Duration) (*wire.Exchange, time.Time) {
	if r.Path == wire.Prefix+protocol.Stream {
		ex := send(t, t.Ctx, r, func(ev wire.SSEEvent) bool { return ev.Name == "start" })
		return ex, endOf(ex)
	}
	ctx, cancel := wire.HangUpAfter(t.Ctx, after)
	defer cancel()
	ex := t.Session().Do(ctx, r)
	return ex, endOf(ex)
}
