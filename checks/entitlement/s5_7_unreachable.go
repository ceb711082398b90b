package entitlement

import (
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §5.7 When the distributor cannot be reached, and its §5.7.4 table: a 404
// is an answer, unreachable within the window changes nothing, past it
// grace runs with unknown, past grace runs stop, a runner never told
// anything does not run, and a restart is not a new window.
var section5_7 = []*Rule{
	unreachableRule("5.7/invalid-answer-unreachable", scripted.Answer{Kind: scripted.Invalid},
		"a body that is no check answer counts as unreachable: past the window, unknown, not renewed",
		"a 200 whose body is no check answer"),
	unreachableRule("5.7/not-json-unreachable", scripted.Answer{Kind: scripted.Invalid, ContentType: "text/html; charset=utf-8",
		Body: []byte("<!doctype html><title>Maintenance</title><p>Back soon.</p>\n")},
		"a 200 whose body is not JSON counts as unreachable: past the window, unknown, neither revoked nor renewed",
		"200 with an HTML page"),
	unreachableRule("5.7/missing-member-unreachable", scripted.Answer{Kind: scripted.Active, Omit: []string{"grace_seconds"}},
		"a 200 missing a REQUIRED member (grace_seconds) counts as unreachable: past the window, unknown, not renewed with a default",
		"200 with an active answer that lacks grace_seconds"),
	unreachableRule("5.7/reset-unreachable", scripted.Answer{Kind: scripted.Refuse},
		"a dropped connection counts as unreachable: past the window, unknown, not revoked",
		"a connection reset without an answer"),
	unreachableRule("5.7/timeout-unreachable", scripted.Answer{Kind: scripted.Hang},
		"a check that times out counts as unreachable: past the window, unknown, not renewed",
		"nothing at all, the connection held open"),
	{
		ID: "5.7.4/404-revokes-at-once", Section: "5.7.4", Level: 2, Keyword: Must,
		Title: "a 404 to the check revokes at once, with no grace: status revoked, run 403 not_entitled",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.NotFound})
			defer s.finish()
			e := s.statusUntil("after the window, the distributor now answering 404", is("revoked"))
			s.reChecked(c, "the 404")
			if e.state != "revoked" {
				t.Fail(e.ex, "after a 404 status reports %q; §5.7.4: a 404 is an answer, and the entitlement is revoked at once, grace or not", e.state)
			}
			expect(t, s.refusals("after a 404"), "not_entitled", "after a 404,", "§5.7.4 refuses it 403 not_entitled")
		},
	},
	{
		ID: "5.7.4/404-supplies-window", Section: "5.7.4", Level: 1, Keyword: Required, Binding: Chain, Chain: "revoked needs checked_at and stale_after_seconds",
		Title: "revoked after a 404 still shows checked_at (the runner's own receipt) and stale_after_seconds",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.NotFound})
			defer s.finish()
			s.firstCheck()
			e := s.status("after a first-ever check answered 404")
			if e.state != "revoked" {
				t.NotApplicable("after a 404 status reports %q, not revoked (5.7.4/404-revokes-at-once judges that)", e.state)
			}
			if _, ok := protocol.ParseStamp(e.checkedAt); !ok {
				t.Fail(e.ex, "revoked after a 404 with checked_at %q: §4.4 requires one for revoked, and §5.7.4 has the runner supply its own receipt time", e.checkedAt)
			}
			if _, ok := e.block["stale_after_seconds"]; !ok {
				t.Fail(e.ex, "revoked after a 404 with no stale_after_seconds: §4.4 requires it for revoked, and §5.7.4 has the runner supply its own cadence")
			}
		},
	},
	{
		ID: "5.7.4/404-reuses-last-window", Section: "5.7.4", Level: 1, Keyword: Should,
		Title: "after a 404 stale_after_seconds is the last one the distributor gave",
		Probe: func(t *T) {
			s, c, e := revokedBy404(t)
			defer s.finish()
			if n := asInt(e.block["stale_after_seconds"]); n != c.Sent.StaleAfterSeconds {
				t.Fail(e.ex, "after a 404 stale_after_seconds is %v where the distributor last declared %d; §5.7.4 asks a runner to reuse it", e.block["stale_after_seconds"], c.Sent.StaleAfterSeconds)
			}
		},
	},
	{
		ID: "5.7.4/unreachable-within-window-active", Section: "5.7.4", Level: 2, Keyword: Must, Binding: Contract, Chain: "§5.7.4",
		Title: "an unreachable distributor within the window changes nothing: active, and runs",
		Probe: func(t *T) {
			a := active(t.Env)
			a.StaleAfterSeconds = int(t.Env.Window/time.Second) + 6
			s := begin(t, a)
			defer s.finish()
			s.firstCheck()
			s.script(scripted.Answer{Kind: scripted.ServerError})
			e := s.statusUntil("within the window, the distributor now failing", is("active"))
			if e.state != "active" {
				t.Fail(e.ex, "within the window of an active answer, with the distributor failing, status reports %q; §5.7.4's table keeps it active", e.state)
			}
			expectInForce(t, s.refusals("within the window, the distributor failing"), "within the window, with the distributor failing,",
				"§5.7.4's table has it run")
		},
	},
	{
		ID: "5.7.1/unknown-within-grace", Section: "5.7.1", Level: 1, Keyword: Must,
		Title: "unreachable past the window, within grace: unknown, carrying the checked_at the distributor gave (§4.4), whether it runs or not",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			e := s.statusUntil("past the window, within grace, the distributor failing", func(e ent) bool {
				at, ok := protocol.ParseStamp(e.checkedAt)
				return e.state == "unknown" && ok && s.given().sent(at)
			})
			s.reChecked(c, "the distributor failing")
			want := scripted.Stamp(c.Sent.CheckedAt)
			switch at, ok := protocol.ParseStamp(e.checkedAt); {
			case e.state != "unknown":
				t.Fail(e.ex, "past the window, within grace, with the distributor failing, status reports %q; §5.7.1 requires unknown for the whole grace period", e.state)
			case !e.hasAt:
				t.Fail(e.ex, "within grace status reports unknown with no checked_at, where the last answer carried %s: a client reads that as a runner never checked, which cannot start (§5.7.3), and loses the deadline grace runs to; §4.4 has the runner report the checked_at it received, unchanged", want)
			case !ok || !s.given().sent(at):
				t.Fail(e.ex, "within grace status.entitlement.checked_at is %q, which no answer the distributor gave carried (the last carried %s): §4.4 has the runner report the checked_at it received, unchanged, and a client counts grace from it", e.checkedAt, want)
			}
			for _, ex := range s.served("within grace") {
				if refusedAs(ex, "unavailable") {
					t.Note("within grace POST %s answered %s: allowed, running on is a MAY (§5.7.1)", verbOf(ex), ex.Brief())
				}
			}
		},
	},
	{
		ID: "5.7.1/stops-after-grace", Section: "5.7.1", Level: 2, Keyword: Must,
		Title: "unreachable past the window and grace: run refused 503 unavailable, status unknown",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.finish()
			c := s.firstCheck()
			s.script(scripted.Answer{Kind: scripted.ServerError})
			c = s.anchor(c)
			s.waitUntil(graceEnds(c).Add(s.slack()))
			refused := s.refusals("past the window and grace, the distributor failing")
			s.reChecked(c, "the distributor failing")
			expect(t, refused, "unavailable",
				"past the window and grace (ended "+scripted.Stamp(graceEnds(c))+"), with the distributor failing,", "§5.7.1 stops the agent, and §5.7.4 answers 503 unavailable")
			if e := s.statusUntil("past grace", is("unknown")); e.state != "unknown" {
				t.Fail(e.ex, "past the window and grace status reports %q; §5.7.4's table has unknown, with checked_at", e.state)
			}
		},
	},
	{
		ID: "5.7.1/grace-zero-stops-at-window", Section: "5.7.1", Level: 2, Keyword: Must,
		Title: "with grace_seconds 0 an unreachable distributor stops runs at the window",
		Probe: func(t *T) {
			a := active(t.Env)
			a.GraceSeconds = 0
			s, c := pastWindow(t, a, scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			refused := s.refusals("past the window, grace 0, the distributor failing")
			s.reChecked(c, "the distributor failing")
			expect(t, refused, "unavailable",
				"with grace_seconds 0, past the window,", "§5.7.1: 0 means stop at the window, 503 unavailable")
		},
	},
	{
		ID: "5.7.1/keeps-attempting", Section: "5.7.1", Level: 1, Keyword: Should,
		Title: "through the grace period the runner keeps trying: a distributor back within grace is seen, on status or on a run",
		Probe: func(t *T) {
			// A grace long enough for a runner that spaces its attempts to
			// show one (attemptGrace).
			a := active(t.Env)
			a.GraceSeconds = int(attemptGrace(t.Env) / time.Second)
			s, c := pastWindow(t, a, scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			s.status("past the window, the distributor failing")
			s.reChecked(c, "the distributor failing")
			s.script(active(t.Env))
			back, n := t.Env.Clock.Now(), t.Env.Dist.Count(s.token)
			// A runner may space its attempts (§5.7.1 asks only that it keep
			// making them), and may attempt on the requests it gates sooner
			// than on status: the walk asks status, and run with a body no
			// runner can execute, at growing intervals until grace is nearly
			// over. One re-checking on either is seen at once.
			e, statuses, runs, gated := s.status("within grace, the distributor back"), 1, 0, true
			for pause := max(s.slack(), 100*time.Millisecond); e.state != "active"; pause = min(2*pause, time.Second) {
				if gated {
					ex := s.do(refusable("run", "within grace, the distributor back: a runner attempts the check on the runs it gates"))
					gated = !ex.Is(http.StatusNotImplemented, "not_implemented") // a Level 1 runner gates none
					runs++
				}
				if e, statuses = s.status("within grace, the distributor back"), statuses+1; e.state == "active" {
					break
				}
				if !t.Env.Clock.Now().Add(pause + s.slack()).Before(graceEnds(c)) {
					break // the next answer could come only once grace is over
				}
				s.wait(pause)
			}
			if e.state != "active" {
				t.Fail(e.ex, "the distributor answered again from %s, within the grace that ended at %s (this step declared %d s of it, so that a runner spacing its attempts shows one), yet in %s of asking, status %d times and run %d, the runner sent it %d checks and status still reports %q; §5.7.1 asks a runner to keep attempting through grace",
					scripted.Stamp(back), scripted.Stamp(graceEnds(c)), c.Sent.GraceSeconds, t.Env.Clock.Now().Sub(back).Round(100*time.Millisecond), statuses, runs,
					t.Env.Dist.Count(s.token)-n, e.state)
				return
			}
			// Active, but by an attempt made within grace? On a loaded
			// machine the last status asked before grace ended may be
			// answered after it, by a runner that attempted only then: the
			// distributor's log says when its first check since came.
			var first *scripted.Request
			for _, r := range s.checks() {
				if r.N > n {
					first = &r
					break
				}
			}
			if first != nil && !first.At.Before(graceEnds(c)) {
				t.Fail(e.ex, "the distributor answered again from %s, within the grace that ended at %s (this step declared %d s of it), yet the runner's first check since came at %s, once grace was over; §5.7.1 asks a runner to keep attempting through grace",
					scripted.Stamp(back), scripted.Stamp(graceEnds(c)), c.Sent.GraceSeconds, scripted.Stamp(first.At))
			}
		},
	},
	{
		ID: "5.7.3/never-checked-unavailable", Section: "5.7.3", Level: 2, Keyword: MustNot, Binding: Chain, Chain: "the bullets of §5.7.3's MUST NOT name the refusal",
		Title: "a runner never answered does not run: unknown with no checked_at, run 503 unavailable, never 403",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			s.firstCheck()
			e := s.statusUntil("no check has ever been answered", func(e ent) bool { return e.state == "unknown" && !e.hasAt })
			if e.state != "unknown" || e.hasAt {
				t.Fail(e.ex, "never answered, status reports %q with checked_at %v; §5.7.3 reports unknown with no checked_at", e.state, e.block["checked_at"])
			}
			expect(t, s.refusals("never answered"), "unavailable",
				"never answered,", "§5.7.3 answers 503 unavailable, never 403 (nothing was refused) and never a run")
		},
	},
	{
		ID: "5.7.2/restart-no-fresh-window", Section: "5.7.2", Level: 1, Keyword: MustNot,
		Title: "a restart while the distributor is unreachable gives no fresh window and no later checked_at",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			// Before the restart: a runner still holding the answer past its
			// window holds it whether or not it restarts.
			s.status("past the window, the distributor failing, before the restart")
			s.reChecked(c, "the distributor failing")
			s.restart()
			e := s.statusUntil("restarted past the window, the distributor failing", func(e ent) bool {
				at, ok := protocol.ParseStamp(e.checkedAt)
				return e.state != "active" && (!e.hasAt || ok && s.given().sent(at))
			})
			want := scripted.Stamp(c.Sent.CheckedAt)
			switch at, ok := protocol.ParseStamp(e.checkedAt); {
			case e.state == "active":
				t.Fail(e.ex, "restarted past the window with the distributor failing, status reports active: §5.7.2, a restart is not a new window")
			case e.hasAt && (!ok || !s.given().sent(at)):
				// To the second: the distributor wrote whole seconds, and a
				// runner carrying them unchanged reports the same instant.
				t.Fail(e.ex, "restarted, status reports checked_at %q where the last answer the distributor gave carried %s: §5.7.2 persists checked_at with the answer and allows no later one, and §4.4 reports it unchanged", e.checkedAt, want)
			case !e.hasAt:
				t.Note("after the restart the runner holds no answer (unknown, never checked): allowed, persisting is a MAY (§5.7.2)")
			}
		},
	},
	{
		ID: "5.7.4/404-receipt-time", Section: "5.7.4", Level: 1, Keyword: Required, Binding: Chain, Chain: "§4.4 requires a checked_at for revoked, and §5.7.4 says which one a 404 leaves",
		Title: "revoked after a 404 reports the runner's own receipt time as checked_at, not the previous answer's",
		Probe: func(t *T) {
			s, c, e := revokedBy404(t)
			defer s.finish()
			var got *scripted.Request
			for _, r := range s.checks() {
				if r.Kind == scripted.NotFound {
					got = &r
					break
				}
			}
			if got == nil {
				t.NotApplicable("the distributor's log holds no check it answered 404")
			}
			at, ok := protocol.ParseStamp(e.checkedAt)
			if !ok {
				t.NotApplicable("checked_at %q is not an RFC 3339 timestamp (5.7.4/404-supplies-window judges that)", e.checkedAt)
			}
			// The receipt is a 404 reaching the runner: no earlier than the
			// second the distributor logged the first, no later than status.
			earliest, latest := got.At.Truncate(time.Second), t.Env.Clock.Now().Add(time.Second)
			switch {
			case !at.Before(earliest) && !at.After(latest):
			case s.given().sent(at):
				t.Fail(e.ex, "after a 404 status reports checked_at %s, an earlier answer's (the last carried %s): §5.7.4 has the runner supply its own receipt time of the 404 (at or after %s), so a client counts the re-check from the refusal, not from an answer the 404 replaced", e.checkedAt, scripted.Stamp(c.Sent.CheckedAt), scripted.Stamp(got.At))
			default:
				t.Fail(e.ex, "after a 404 received at %s, status reports checked_at %s: §5.7.4 has the runner supply its own receipt time", scripted.Stamp(got.At), e.checkedAt)
			}
		},
	},
}

// revokedBy404 walks past the window of an active answer to a 404, and
// reads status there; where it does not say revoked, the rule asking is
// skipped: 5.7.4/404-revokes-at-once judges that. The caller stops s.
func revokedBy404(t *T) (*step, scripted.Request, ent) {
	s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.NotFound})
	e := s.statusUntil("after the window, the distributor now answering 404", is("revoked"))
	if e.state != "revoked" {
		s.finish()
		t.NotApplicable("after a 404 status reports %q, not revoked (5.7.4/404-revokes-at-once judges that)", e.state)
	}
	return s, c, e
}

// unreachableRule: past the window, the distributor answering a, the
// runner must take it for unreachable (§5.7): not a refusal, so neither
// status revoked nor a 403, and not an answer, so no renewal. What shape
// its unknown takes within grace is 5.7.1/unknown-within-grace's to judge.
func unreachableRule(id string, a scripted.Answer, title, what string) *Rule {
	return &Rule{
		ID: id, Section: "5.7", Level: 1, Keyword: Must, Binding: Chain, Chain: "unreachable is defined so",
		Title: title,
		Probe: func(t *T) {
			first, then := active(t.Env), a
			if then.Kind == scripted.Active {
				then.StaleAfterSeconds, then.GraceSeconds = first.StaleAfterSeconds, first.GraceSeconds
			}
			s, c := pastWindow(t, first, then)
			defer s.finish()
			ex := s.do(statusRequest("past the window, within grace, the distributor answering " + what))
			if !ex.Answered() {
				t.Cite(ex)
				t.Undecided("status got no answer within --timeout (%s) while the runner's own check waited on the distributor: a runner that holds status on its check needs a --timeout longer than its own check's", t.Env.Timeout)
			}
			e := s.statusUntil("past the window, within grace, the distributor answering "+what, func(e ent) bool {
				at, _ := protocol.ParseStamp(e.checkedAt)
				return e.state != "revoked" && !(e.state == "active" && at.After(c.Sent.CheckedAt))
			})
			s.reChecked(c, what)
			at, _ := protocol.ParseStamp(e.checkedAt)
			switch {
			case e.state == "revoked":
				t.Fail(e.ex, "past the window, the distributor answering %s, status reports revoked: §5.7 counts that as unreachable, not as a refusal (only a 404 is one, §5.7.4)", what)
			case e.state == "active" && at.After(c.Sent.CheckedAt):
				t.Fail(e.ex, "past the window, the distributor answering %s, status reports active with checked_at %s, later than the last answer's %s: §5.7 counts that as unreachable, which renews nothing", what, e.checkedAt, scripted.Stamp(c.Sent.CheckedAt))
			case e.state == "unknown":
			default:
				t.Note("status reports %q with checked_at %q: the state within grace is 5.7.1/unknown-within-grace's to judge", e.state, e.checkedAt)
			}
			failEach(t, s.served("past the window, within grace, the distributor answering "+what), func(ex *wire.Exchange) bool {
				return refusedAs(ex, "not_entitled")
			}, func(verbs, answer string) string {
				return "past the window, the distributor answering " + what + ", " + verbs + " answered " + answer + ": §5.7 counts that as unreachable, and unreachable answers unavailable, never not_entitled (§5.7.4)"
			})
		},
	}
}
