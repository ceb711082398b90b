package entitlement

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
)

// §5.4 Revocation: the runner re-checks on the first request after the
// declared window, holds no answer past it, and re-checks a revoked answer
// too, so that a restored entitlement runs again.
var section5_4 = []*Rule{
	{
		ID: "5.4/re-check-after-window", Section: "5.4", Level: 1, Keyword: Must,
		Title: "the first request after checked_at + stale_after_seconds makes the runner check again",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.finish()
			c := s.firstCheck()
			// From here the distributor serves that read from its cache
			// until its window ends, as §5.3 allows: a runner asking again
			// early (a refresh ahead of the window) is given the window it
			// holds, and a request past it still finds that window ended.
			cached := active(t.Env)
			cached.CheckedAt, cached.Cached = c.Sent.CheckedAt, true
			s.script(cached)
			c = s.anchor(c)
			s.waitUntil(windowEnds(c).Add(s.slack()))
			n := t.Env.Dist.Count(s.token)
			e := s.status("the first request after the window")
			// On that request: while answering it, or as it answers (a check
			// started then reaches the distributor within the earned wait, or
			// the time a runner checking in the background is given for its
			// first check, whichever is longer, within half the grace). A
			// check that comes only later, on a timer of the runner's own, is
			// not the one §5.4 requires.
			within := min(max(2*s.slack(), t.Env.CheckGrace), t.Env.Grace/2)
			ctx, cancel := context.WithTimeout(t.Ctx, within)
			defer cancel()
			if _, err := t.Env.Dist.Await(ctx, s.token, n); err != nil && !checkedSince(s, windowEnds(c)) {
				t.Fail(e.ex, "the window of the answer checked at %s ended at %s, and status was asked for after it, yet the runner sent no new check while answering it, nor within %s after (%d in all); §5.4 requires one on the first request after the window",
					scripted.Stamp(c.Sent.CheckedAt), scripted.Stamp(windowEnds(c)), within, t.Env.Dist.Count(s.token))
			}
		},
	},
	{
		ID: "5.4/no-answer-past-window", Section: "5.4", Level: 2, Keyword: MustNot,
		Title: "an answer is not relied on past its window: a revocation the distributor gives then is honoured at once",
		Probe: func(t *T) {
			a := active(t.Env)
			s, _ := pastWindow(t, a, scripted.Answer{Kind: scripted.Revoked, StaleAfterSeconds: a.StaleAfterSeconds, GraceSeconds: a.GraceSeconds})
			defer s.finish()
			e := s.statusUntil("after the window, the distributor now answering revoked", is("revoked"))
			if e.state != "revoked" {
				t.Fail(e.ex, "after the window the distributor answers revoked, yet status reports %q; §5.4: no answer is cached past the window it declared", e.state)
			}
			expect(t, s.refusals("after the window, the entitlement revoked"), "not_entitled",
				"after the window, the distributor answering revoked,", "§5.4 holds no answer past its window, and §5.7.4 refuses a revoked entitlement 403 not_entitled")
		},
	},
	{
		ID: "5.4/revoked-re-checked", Section: "5.4", Level: 2, Keyword: Must,
		Title: "a revoked answer is re-checked after its window too: a restored entitlement runs again",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.Revoked, StaleAfterSeconds: int(t.Env.Window.Seconds()), GraceSeconds: int(t.Env.Grace.Seconds())})
			defer s.finish()
			c := s.firstCheck()
			if ex := s.refusals("while revoked")[0]; !refusedAs(ex, "not_entitled") {
				t.NotApplicable("while revoked, run answered %s rather than 403 not_entitled; 5.4/no-answer-past-window judges that refusal", ex.Brief())
			}
			s.script(active(t.Env))
			// The window of the last revoked answer it was given: a runner
			// asking while refusing those runs holds a newer one (given.go).
			c = s.anchor(c)
			s.waitUntil(windowEnds(c).Add(s.slack()))
			e := s.statusUntil("after the revoked answer's window, the entitlement restored", is("active"))
			if e.state != "active" {
				t.Fail(e.ex, "the entitlement was restored after the window of the last revoked answer (checked at %s) ended at %s, yet status reports %q: §5.4 binds a revoked answer to the same re-check, so restoration is seen", scripted.Stamp(c.Sent.CheckedAt), scripted.Stamp(windowEnds(c)), e.state)
			}
			expectInForce(t, s.refusals("restored"), "after the restoration,", "§5.4 binds a revoked answer to the re-check that sees it restored")
		},
	},
}

// checkedSince reports whether the step's runner sent a check at or after
// at (a runner may re-check ahead of the request that needs it).
func checkedSince(s *step, at time.Time) bool {
	for _, c := range s.checks() {
		if !c.At.Before(at) {
			return true
		}
	}
	return false
}

// expect fails the answers of exs not refused with code: what is the
// step's situation, why the section that gives the code. Verbs answering
// alike are one finding.
func expect(t *T, exs []*wire.Exchange, code, what, why string) {
	failEach(t, exs, func(ex *wire.Exchange) bool { return !refusedAs(ex, code) }, func(verbs, answer string) string {
		return fmt.Sprintf("%s %s answered %s, not %s: %s", what, verbs, answer, code, why)
	})
}

// expectInForce fails the answers of exs that are not the 400 of a runner
// whose entitlement is in force (§4.6: the inputs are judged only then).
func expectInForce(t *T, exs []*wire.Exchange, what, why string) {
	failEach(t, exs, func(ex *wire.Exchange) bool { return !inForce(ex) }, func(verbs, answer string) string {
		return fmt.Sprintf("%s %s answered %s where a runner in force refuses this body 400: %s", what, verbs, answer, why)
	})
}

// failEach records one finding per distinct answer among the exchanges
// bad picks, naming the verbs that gave it ("POST run and stream").
// A stream answering otherwise than run is judged once, across the walk,
// by 4.6/walk-stream-as-run, so here run's answer is the situation's.
func failEach(t *T, exs []*wire.Exchange, bad func(*wire.Exchange) bool, say func(verbs, answer string) string) {
	exs = asRun(exs)
	var order []string
	by := map[string][]*wire.Exchange{}
	for _, ex := range exs {
		if !bad(ex) {
			continue
		}
		if _, seen := by[ex.Brief()]; !seen {
			order = append(order, ex.Brief())
		}
		by[ex.Brief()] = append(by[ex.Brief()], ex)
	}
	for _, answer := range order {
		var verbs []string
		for _, ex := range by[answer] {
			verbs = append(verbs, verbOf(ex))
		}
		t.Fail(by[answer][0], "%s", say("POST "+strings.Join(verbs, " and "), answer))
	}
}
