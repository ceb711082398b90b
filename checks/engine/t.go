package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Finding is one reason a rule broke, with the exchange that shows it.
type Finding struct {
	Message string
	Ex      *wire.Exchange
	// Inferred marks a finding that rests on no bold keyword (a constraint
	// only the schema or descriptive prose states): it warns even where the
	// rule's own keyword would fail a target.
	Inferred bool
}

// T is handed to a probe (and to a fact's computation). A probe reports
// what it saw through Fail, Warn, Skip and Note; a probe that reports no
// finding passes. As with testing.T, Skip stops the probe.
type T[E any] struct {
	Ctx  context.Context
	Env  E
	Rule *Rule[E]

	run      *run[E]
	findings []Finding
	skip     string
	kind     SkipKind
	notes    []string
	sent     []*wire.Exchange
}

// Registry is the mode's whole registry, selected or not.
func (t *T[E]) Registry() []*Rule[E] { return t.run.suite.Rules }

// Session is the run's traffic with its target.
func (t *T[E]) Session() *Session { return t.run.sess }

// Do sends a request and records it as evidence of this rule. In a mode
// whose probes are refusals (Suite.HeadDecides), a POST of a rule that
// does not start the agent is one a conforming target refuses, so a 2xx
// status line decides it and its body is not waited for.
func (t *T[E]) Do(r wire.Request) *wire.Exchange {
	ex := t.run.sess.Do(t.Ctx, r)
	t.sent = append(t.sent, ex)
	return ex
}

// Stream sends a request answered with an event stream (Session.Stream)
// and records it as evidence of this rule.
func (t *T[E]) Stream(r wire.Request, lim wire.StreamLimits) *wire.Exchange {
	ex := t.run.sess.Stream(t.Ctx, r, lim)
	t.sent = append(t.sent, ex)
	return ex
}

// Withheld sends the head of a POST announcing a body of announced bytes
// and never sends the body; expect says what a conforming target does, and
// so how long to wait (see Expect).
func (t *T[E]) Withheld(path string, h http.Header, announced int, expect Expect, note string) *wire.Exchange {
	ex := t.run.sess.Withheld(t.Ctx, path, h, announced, expect, note)
	t.sent = append(t.sent, ex)
	return ex
}

// HeadFirst sends the head of a POST and sends body only if the target has
// not answered the head within the earned wait.
func (t *T[E]) HeadFirst(path string, h http.Header, body []byte, note string) *wire.Exchange {
	ex := t.run.sess.HeadFirst(t.Ctx, path, h, body, note)
	t.sent = append(t.sent, ex)
	return ex
}

// SideBySide runs send(i) for every i below n at once, within the session's
// bound on requests in flight, and records the exchanges as evidence in the
// order of i: for a probe whose requests are independent and each of which
// may have to wait. send only sends, through s and ctx; it reports nothing.
func (t *T[E]) SideBySide(n int, send func(i int, s *Session, ctx context.Context) *wire.Exchange) []*wire.Exchange {
	out := make([]*wire.Exchange, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = send(i, t.run.sess, t.Ctx)
		}()
	}
	wg.Wait()
	t.sent = append(t.sent, out...)
	return out
}

// Cite adds to this rule's evidence an exchange sent elsewhere (by a fact,
// or before the run) and already in the run's log.
func (t *T[E]) Cite(ex *wire.Exchange) { t.sent = append(t.sent, ex) }

// Evidence is every exchange the probing rules of the registry made, for a
// rule marked Evidence (it is nil for any other).
func (t *T[E]) Evidence() []*wire.Exchange {
	if !t.Rule.Evidence {
		return nil
	}
	return t.run.sess.Exchanges()
}

// Fail records that the rule is broken, shown by ex (which may be nil).
func (t *T[E]) Fail(ex *wire.Exchange, format string, args ...any) {
	t.findings = append(t.findings, Finding{Message: fmt.Sprintf(format, args...), Ex: ex})
}

// Warn records a finding that only warns whatever the rule's strength: the
// behaviour it reports is inferred, not bound by a bold keyword. The
// message should say so.
func (t *T[E]) Warn(ex *wire.Exchange, format string, args ...any) {
	t.findings = append(t.findings, Finding{Message: fmt.Sprintf(format, args...), Ex: ex, Inferred: true})
}

// NotApplicable records that the rule does not apply here (the target's
// posture makes it unobservable, or another rule judges what was seen), and
// why, and stops the probe. Findings recorded before it still stand, as
// for every kind of SKIP: a rule that failed and then found it could go no
// further has failed.
func (t *T[E]) NotApplicable(format string, args ...any) { t.skipAs(NotApplicable, format, args...) }

// NeedsOption records that deciding the rule needs an option the user did
// not give, and which, and stops the probe.
func (t *T[E]) NeedsOption(format string, args ...any) { t.skipAs(NeedsOption, format, args...) }

// Undecided records that the rule applies but could not be decided (the
// target did not answer in time, or a probe could not finish), and why,
// and stops the probe. An undecided rule keeps a verdict from being
// reached.
func (t *T[E]) Undecided(format string, args ...any) { t.skipAs(Undecided, format, args...) }

// SkipFor skips the rule for what ex showed, where another rule judges
// that answer: undecided where ex brought no whole answer (none came, its
// body never ended, it was never sent), not applicable where it did.
func (t *T[E]) SkipFor(ex *wire.Exchange, format string, args ...any) {
	kind := NotApplicable
	if !Whole(ex) {
		kind = Undecided
	}
	t.skipAs(kind, format, args...)
}

// Whole reports whether ex brought a whole answer: a status line, and a
// body that ended (or that the checker itself chose to stop reading).
func Whole(ex *wire.Exchange) bool {
	return ex != nil && ex.Answered() && (ex.Err == nil || errors.Is(ex.Err, wire.ErrHungUp))
}

func (t *T[E]) skipAs(kind SkipKind, format string, args ...any) {
	t.skip, t.kind = fmt.Sprintf(format, args...), kind
	runtime.Goexit()
}

// Note adds a line shown beside the result whatever it is.
func (t *T[E]) Note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Failed reports whether any finding has been recorded.
func (t *T[E]) Failed() bool { return len(t.findings) > 0 }

// Findings are the findings recorded so far.
func (t *T[E]) Findings() []Finding { return t.findings }

// Skipped is the SKIP the probe recorded, and its kind; "" where it
// recorded none (for a mode's Review hook).
func (t *T[E]) Skipped() (reason string, kind SkipKind) { return t.skip, t.kind }

// Sent is every exchange this rule sent or cited so far.
func (t *T[E]) Sent() []*wire.Exchange { return t.sent }

// Drop discards the findings recorded so far and records why the rule
// cannot be decided instead, and the kind of that SKIP (for a mode's
// Review hook).
func (t *T[E]) Drop(kind SkipKind, why string) { t.findings, t.skip, t.kind = nil, why, kind }
