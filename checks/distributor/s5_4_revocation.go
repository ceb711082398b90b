package distributor

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// reversal is what the hooks showed: the buyer's purchase of --agent
// reversed, watched until the check says so, then restored, watched again.
type reversal struct {
	revoked, restored time.Time        // when each hook returned
	afterRevoke       []*wire.Exchange // the checks of --agent after --revoke
	afterRestore      []*wire.Exchange // … and after --restore
	seenRevoked       *wire.Exchange   // the first answer revoked (or 404)
	seenActive        *wire.Exchange   // the first answer active after --restore
	primed            time.Time        // checked_at of the answer just before --revoke, if it carried one
	bound             time.Duration    // stale_after_seconds + the earned slack
	skip              string
}

// poll is how often the timed rules ask: a twentieth of the declared
// window, within what the distributor's own answers earn and a quarter of
// a second.
func (e *Env) poll(s *engine.Session) time.Duration {
	return min(max(e.Stale/20, s.Wait()), 250*time.Millisecond)
}

// reverse runs the hooks once for every timed rule (they run one at a
// time, after the others), restoring the purchase whatever was seen.
func (e *Env) reverse(t *T) reversal {
	e.reversalOnce.Do(func() { e.rev = e.watchReversal(t) })
	return e.rev
}

func (e *Env) watchReversal(t *T) reversal {
	s := t.Session()
	var r reversal
	interval := e.poll(s)
	r.bound = e.Stale + 2*s.Wait() + interval
	hook := func(name string, h Hook) bool {
		ctx, cancel := contextWithTimeout(t, hookTimeout(e.Timeout))
		defer cancel()
		if err := h.Run(ctx); err != nil {
			if e.HookErr == nil {
				e.HookErr = fmt.Errorf("the %s hook failed: %w", name, err)
			}
			return false
		}
		return true
	}
	// watch asks until done says so, or the bound has passed; a would-be
	// failure is asked once more, after the bound, before it stands.
	watch := func(since time.Time, note string, done func(*wire.Exchange) bool) ([]*wire.Exchange, *wire.Exchange) {
		var exs []*wire.Exchange
		for {
			req := e.checkRequest(e.Agent, bearer(e.Token), note)
			req.Unreplayable = unreplayable
			ex := s.Do(t.Ctx, req)
			exs = append(exs, ex)
			if done(ex) {
				return exs, ex
			}
			if t.Ctx.Err() != nil || time.Since(since) > r.bound {
				return exs, nil
			}
			select {
			case <-time.After(interval):
			case <-t.Ctx.Done():
			}
		}
	}
	// Asked once just before the reversal, so that a cache in front of the
	// authority holds an answer when it happens: what 5.3/checked-at-read-time
	// needs to see one stamped after it. Its checked_at is a read before the
	// reversal, whatever the clocks say.
	if obj, _ := answerOf(s.Do(t.Ctx, e.checkRequest(e.Agent, bearer(e.Token), "before --revoke: the answer a cache then holds"))); obj != nil {
		st, _ := obj["checked_at"].(string)
		r.primed, _ = protocol.ParseStamp(st)
	}
	if !hook("--revoke", e.Revoke) {
		r.skip = "the --revoke hook failed"
		return r
	}
	r.revoked = time.Now()
	r.afterRevoke, r.seenRevoked = watch(r.revoked, "after --revoke: waiting for revoked (or 404)", func(ex *wire.Exchange) bool {
		obj, _ := answerOf(ex)
		return ex.Is(http.StatusNotFound, "not_found") || (obj != nil && obj["state"] == protocol.StateRevoked)
	})
	if !hook("--restore", e.Restore) {
		r.skip = "the --restore hook failed: the buyer's purchase of --agent may still be reversed"
		return r
	}
	r.restored = time.Now()
	r.afterRestore, r.seenActive = watch(r.restored, "after --restore: waiting for active", func(ex *wire.Exchange) bool {
		obj, _ := answerOf(ex)
		return obj != nil && obj["state"] == protocol.StateActive
	})
	return r
}

func (r reversal) cite(t *T, exs []*wire.Exchange) {
	for _, ex := range exs {
		t.Cite(ex)
	}
}

// §5.4 Revocation, and the window every answer declares.
var section5_4 = []*Rule{
	{
		ID: "5.4/window-honest", Section: "5.4", Level: 1, Keyword: MustNot,
		Title:    "no answer is older than it declares: now − checked_at never exceeds stale_after_seconds, over every answer of the run",
		Evidence: true,
		Probe: func(t *T) {
			off, dated := clockOffset(t.Evidence())
			eachRead(t, func(a checkAnswer, s string, at time.Time) {
				n, num := wire.Number(a.obj["stale_after_seconds"])
				if !num {
					return
				}
				earliest := a.ex.Sent.Add(off.lo) // the distributor's clock as it answered, at its earliest
				age, window := earliest.Sub(at), time.Duration(n)*time.Second
				if age > window+stampSlack(s) {
					t.Fail(a.ex, "%s: checked_at %s was at least %s old when the answer came, past the stale_after_seconds of %d it declares (%s): §5.4 forbids declaring a window shorter than the staleness the caches produce",
						a.ex.RequestLine(), s, age.Round(time.Millisecond), int(n), clockWords(off, dated))
				}
			})
		},
	},
	observed("5.4/revocation-observed", "after --revoke returns, the check answers revoked (or 404, §5.5) within stale_after_seconds and the earned slack",
		"--revoke", "revoked", "§5.4 revokes a reversed purchase within the declared window",
		func(r reversal) ([]*wire.Exchange, *wire.Exchange, time.Time) {
			return r.afterRevoke, r.seenRevoked, r.revoked
		}),
	observed("5.4/restore-observed", "after --restore returns, the check answers active again within the same bound",
		"--restore", "active again", "§5.4 restores an entitlement whose reversal is reversed, within the declared window",
		func(r reversal) ([]*wire.Exchange, *wire.Exchange, time.Time) {
			return r.afterRestore, r.seenActive, r.restored
		}),
	{
		ID: "5.3/checked-at-read-time", Section: "5.3", Level: 1, Keyword: Must, Binding: Chain, Chain: "a read after the reversal reads revoked", Agent: true,
		Title: "an answer stamped after the reversal does not say active: checked_at is the authority's read time, not the reply's",
		Needs: []engine.Need[*Env]{needHooks},
		Probe: func(t *T) {
			r := t.Env.reverse(t)
			if r.skip != "" {
				t.Undecided("%s", r.skip)
			}
			r.cite(t, r.afterRevoke)
			if r.seenRevoked == nil {
				t.NotApplicable("the revocation never showed (5.4/revocation-observed judges that), so nothing shows when the authority recorded it")
			}
			off, dated := clockOffset(t.Session().Exchanges())
			var undecided *wire.Exchange
			for _, ex := range r.afterRevoke {
				obj, _ := answerOf(ex)
				if obj == nil || obj["state"] != protocol.StateActive {
					continue
				}
				s, _ := obj["checked_at"].(string)
				at, ok := protocol.ParseStamp(s)
				if !ok {
					continue
				}
				// No later than the read behind an answer that came before
				// --revoke ran (the same cache entry): a read before it.
				if !r.primed.IsZero() && !at.After(r.primed) {
					continue
				}
				// The earliest moment of ours the stamp can stand for.
				after := r.revoked.Add(10 * time.Millisecond)
				if local := at.Add(-off.hi); local.After(after) {
					t.Fail(ex, "answered active with checked_at %s, %s after --revoke had returned (%s): a read of the authority then would have read the reversal, so checked_at is the reply's time, not the read's (§5.3)",
						s, local.Sub(r.revoked).Round(time.Millisecond), clockWords(off, dated))
					return
				}
				// … and the latest: within the clocks' uncertainty, the stamp
				// may stand for a moment after --revoke, or before it.
				if undecided == nil && at.Add(stampSlack(s)-off.lo).After(after) {
					undecided = ex
				}
			}
			if undecided != nil {
				t.Undecided("an active answer came after --revoke with a checked_at that, as far as the distributor's Date headers place its clock (%s), may stand for a moment before --revoke returned or after it: undecided, not passed",
					clockWords(off, dated))
			}
		},
	},
}

// observed is a timed rule: after hook returned, the checks of --agent
// showed what it did (seen, one of them) within the bound.
func observed(id, title, hook, what, why string, pick func(reversal) (after []*wire.Exchange, seen *wire.Exchange, since time.Time)) *Rule {
	return &Rule{
		ID: id, Section: "5.4", Level: 1, Keyword: Must, Agent: true, Title: title,
		Needs: []engine.Need[*Env]{needHooks},
		Probe: func(t *T) {
			r := t.Env.reverse(t)
			if r.skip != "" {
				t.Undecided("%s", r.skip)
			}
			after, seen, since := pick(r)
			r.cite(t, after)
			if seen == nil {
				last := after[len(after)-1]
				t.Fail(last, "%s after %s returned, the check of --agent still answered %s (%d checks): %s (%s, with the slack)",
					time.Since(since).Round(time.Millisecond), hook, last.Brief(), len(after), why, r.bound.Round(time.Millisecond))
				return
			}
			t.Note("%s %s after %s returned", what, seen.Sent.Sub(since).Round(time.Millisecond), hook)
		},
	}
}
