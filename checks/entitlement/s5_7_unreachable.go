package entitlement

import (
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
)

// §5.7 When the distributor cannot be reached, and its §5.7.4 table: a 404
// is an answer, unreachable within the window changes nothing, past it
// grace runs with unknown, past grace runs stop, a runner never told
// anything does not run, and a restart is not a new window.
var section5_7 = []*Rule{
	unreachableRule("5.7/invalid-answer-unreachable", scripted.Invalid,
		"a body that is no check answer counts as unreachable: past the window, unknown, not renewed",
		"a 200 whose body is no check answer"),
	unreachableRule("5.7/reset-unreachable", scripted.Refuse,
		"a dropped connection counts as unreachable: past the window, unknown, not revoked",
		"a connection reset without an answer"),
	unreachableRule("5.7/timeout-unreachable", scripted.Hang,
		"a check that times out counts as unreachable: past the window, unknown, not renewed",
		"nothing at all, the connection held open"),
	{
		ID: "5.7.4/404-revokes-at-once", Section: "5.7.4", Level: 2, Keyword: Must,
		Title: "a 404 to the check revokes at once, with no grace: status revoked, run 403 not_entitled",
		Probe: func(t *T) {
			s, _ := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.NotFound})
			defer s.stop()
			e := s.status("after the window, the distributor now answering 404")
			if e.state != "revoked" {
				t.Fail(e.ex, "after a 404 status reports %q; §5.7.4: a 404 is an answer, and the entitlement is revoked at once, grace or not", e.state)
			}
			if ex := s.refusal("after a 404"); !ex.Is(http.StatusForbidden, "not_entitled") {
				t.Fail(ex, "after a 404 run answered %s; §5.7.4 refuses it 403 not_entitled", ex.Brief())
			}
		},
	},
	{
		ID: "5.7.4/404-supplies-window", Section: "5.7.4", Level: 1, Keyword: Required, Binding: Chain, Chain: "revoked needs checked_at and stale_after_seconds",
		Title: "revoked after a 404 still shows checked_at (the runner's own receipt) and stale_after_seconds",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.NotFound})
			defer s.stop()
			s.firstCheck()
			e := s.status("after a first-ever check answered 404")
			if e.state != "revoked" {
				t.NotApplicable("after a 404 status reports %q, not revoked (5.7.4/404-revokes-at-once judges that)", e.state)
			}
			if _, err := time.Parse(time.RFC3339, e.checkedAt); err != nil {
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
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.NotFound})
			defer s.stop()
			e := s.status("after the window, the distributor now answering 404")
			if e.state != "revoked" {
				t.NotApplicable("after a 404 status reports %q, not revoked (5.7.4/404-revokes-at-once judges that)", e.state)
			}
			if n := asInt(e.block["stale_after_seconds"]); n != c.Sent.StaleAfterSeconds {
				t.Fail(e.ex, "after a 404 stale_after_seconds is %v where the distributor last declared %d; §5.7.4 asks a runner to reuse it", e.block["stale_after_seconds"], c.Sent.StaleAfterSeconds)
			}
		},
	},
	{
		ID: "5.7.4/unreachable-within-window-active", Section: "5.7.4", Level: 2, Keyword: Must, Binding: Inferred,
		Title: "an unreachable distributor within the window changes nothing: active, and runs (inferred: §5.7.4's table carries no keyword)",
		Probe: func(t *T) {
			a := active(t.Env)
			a.StaleAfterSeconds = int(t.Env.Window/time.Second) + 6
			s := begin(t, a)
			defer s.stop()
			s.firstCheck()
			s.script(scripted.Answer{Kind: scripted.ServerError})
			e := s.status("within the window, the distributor now failing")
			if e.state != "active" {
				t.Fail(e.ex, "within the window of an active answer, with the distributor failing, status reports %q; §5.7.4's table keeps it active (inferred: the table has no keyword)", e.state)
			}
			if ex := s.refusal("within the window, the distributor failing"); !ex.Is(http.StatusBadRequest, "") {
				t.Fail(ex, "within the window, run answered %s where a runner in force refuses this body 400 (inferred: §5.7.4's table has no keyword)", ex.Brief())
			}
		},
	},
	{
		ID: "5.7.1/unknown-within-grace", Section: "5.7.1", Level: 1, Keyword: Must,
		Title: "unreachable past the window, within grace: unknown, with the distributor's checked_at",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.ServerError})
			defer s.stop()
			e := s.status("past the window, within grace, the distributor failing")
			if e.state != "unknown" {
				t.Fail(e.ex, "past the window, within grace, with the distributor failing, status reports %q; §5.7.1 requires unknown for the whole grace period", e.state)
			}
			if e.checkedAt != scripted.Stamp(c.Sent.CheckedAt) {
				if at, err := time.Parse(time.RFC3339, e.checkedAt); err != nil || !at.Equal(c.Sent.CheckedAt) {
					t.Fail(e.ex, "within grace status.entitlement.checked_at is %q where the last answer carried %s; the unknown of a runner in grace keeps it (§4.4, §5.7.1)", e.checkedAt, scripted.Stamp(c.Sent.CheckedAt))
				}
			}
			if ex := s.refusal("within grace"); ex.Is(http.StatusServiceUnavailable, "unavailable") {
				t.Note("within grace run answered 503 unavailable: allowed, running on is a MAY (§5.7.1)")
			}
		},
	},
	{
		ID: "5.7.1/stops-after-grace", Section: "5.7.1", Level: 2, Keyword: Must,
		Title: "unreachable past the window and grace: run refused 503 unavailable, status unknown",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.stop()
			c := s.firstCheck()
			s.script(scripted.Answer{Kind: scripted.ServerError})
			s.waitUntil(graceEnds(c).Add(s.slack()))
			if ex := s.refusal("past the window and grace, the distributor failing"); !ex.Is(http.StatusServiceUnavailable, "unavailable") {
				t.Fail(ex, "past the window and grace (ended %s), with the distributor failing, run answered %s; §5.7.1 stops the agent, and §5.7.4 answers 503 unavailable", scripted.Stamp(graceEnds(c)), ex.Brief())
			}
			if e := s.status("past grace"); e.state != "unknown" {
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
			s, _ := pastWindow(t, a, scripted.Answer{Kind: scripted.ServerError})
			defer s.stop()
			if ex := s.refusal("past the window, grace 0, the distributor failing"); !ex.Is(http.StatusServiceUnavailable, "unavailable") {
				t.Fail(ex, "with grace_seconds 0, past the window, run answered %s; §5.7.1: 0 means stop at the window, 503 unavailable", ex.Brief())
			}
		},
	},
	{
		ID: "5.7.1/keeps-attempting", Section: "5.7.1", Level: 1, Keyword: Should,
		Title: "through the grace period the runner keeps trying: a distributor back within grace is seen",
		Probe: func(t *T) {
			s, _ := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.ServerError})
			defer s.stop()
			s.status("past the window, the distributor failing")
			s.script(active(t.Env))
			s.wait(s.slack())
			if e := s.status("still within grace, the distributor back"); e.state != "active" {
				t.Fail(e.ex, "the distributor answered again within grace, yet status reports %q; §5.7.1 asks a runner to keep attempting through grace", e.state)
			}
		},
	},
	{
		ID: "5.7.3/never-checked-unavailable", Section: "5.7.3", Level: 2, Keyword: MustNot, Binding: Chain, Chain: "the bullets of §5.7.3's MUST NOT name the refusal",
		Title: "a runner never answered does not run: unknown with no checked_at, run 503 unavailable, never 403",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.ServerError})
			defer s.stop()
			s.firstCheck()
			e := s.status("no check has ever been answered")
			if e.state != "unknown" || e.hasAt {
				t.Fail(e.ex, "never answered, status reports %q with checked_at %v; §5.7.3 reports unknown with no checked_at", e.state, e.block["checked_at"])
			}
			if ex := s.refusal("never answered"); !ex.Is(http.StatusServiceUnavailable, "unavailable") {
				t.Fail(ex, "never answered, run answered %s; §5.7.3 answers 503 unavailable, never 403 (nothing was refused) and never a run", ex.Brief())
			}
		},
	},
	{
		ID: "5.7.2/restart-no-fresh-window", Section: "5.7.2", Level: 1, Keyword: MustNot,
		Title: "a restart while the distributor is unreachable gives no fresh window and no later checked_at",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.ServerError})
			defer s.stop()
			s.restart()
			e := s.status("restarted past the window, the distributor failing")
			switch at, err := time.Parse(time.RFC3339, e.checkedAt); {
			case e.state == "active":
				t.Fail(e.ex, "restarted past the window with the distributor failing, status reports active: §5.7.2, a restart is not a new window")
			case e.hasAt && (err != nil || at.After(c.Sent.CheckedAt)):
				t.Fail(e.ex, "restarted, status reports checked_at %q, later than the %s the distributor gave: §5.7.2 forbids a later checked_at", e.checkedAt, scripted.Stamp(c.Sent.CheckedAt))
			case !e.hasAt:
				t.Note("after the restart the runner holds no answer (unknown, never checked): allowed, persisting is a MAY (§5.7.2)")
			}
		},
	},
}

// unreachableRule: past the window, the distributor answering kind, status
// must say unknown with the last checked_at: §5.7 counts kind as
// unreachable, and §5.7.1 reports unknown for the whole grace.
func unreachableRule(id string, kind scripted.Kind, title, what string) *Rule {
	return &Rule{
		ID: id, Section: "5.7", Level: 1, Keyword: Must, Binding: Chain, Chain: "unreachable is defined so",
		Title: title,
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: kind})
			defer s.stop()
			ex := s.sess.Do(t.Ctx, statusRequest("past the window, within grace, the distributor answering "+what))
			if !ex.Answered() {
				t.Cite(ex)
				t.Undecided("status got no answer within --timeout (%s) while the runner's own check waited on the distributor: a runner that holds status on its check needs a --timeout longer than its own check's", t.Env.Timeout)
			}
			e := s.status("past the window, within grace, the distributor answering " + what)
			switch at, _ := time.Parse(time.RFC3339, e.checkedAt); {
			case e.state == "unknown" && at.Equal(c.Sent.CheckedAt):
			case e.state == "unknown":
				t.Fail(e.ex, "past the window, the distributor answering %s, status reports unknown with checked_at %q where the last answer carried %s (§4.4, §5.7.1)", what, e.checkedAt, scripted.Stamp(c.Sent.CheckedAt))
			default:
				t.Fail(e.ex, "past the window, the distributor answering %s, status reports %q: §5.7 counts that as unreachable, and §5.7.1 reports unknown within grace", what, e.state)
			}
		},
	}
}
