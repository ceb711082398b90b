package entitlement

import (
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §5.3 The check, and §4.4's report of it: the request the runner sends,
// the answer status carries, and access_ends_at, which is not a deadline.
var section5_3 = []*Rule{
	{
		ID: "4.4/status-answers-throughout", Section: "4.4", Level: 1, Keyword: Must, Binding: Chain, Chain: "status and describe MUST answer (§4.4, §4.1)",
		Title: "status and describe answer 200 whatever the entitlement: never checked, the distributor unreachable",
		Probe: func(t *T) {
			s := begin(t, scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			for _, verb := range []string{"status", "describe"} {
				r := wire.Get(verb)
				r.Note = "the distributor has never answered: the entitlement is unknown"
				ex := s.do(r)
				if ex.Status != http.StatusOK {
					t.Fail(ex, "with the entitlement unknown, GET %s answered %s; §4.4 and §4.1 have both answer whatever the entitlement, and §5.7.4 leaves them unaffected throughout", verb, ex.Brief())
				}
			}
		},
	},
	{
		ID: "5.3.1/two-raw-segments", Section: "5.3.1", Level: 1, Keyword: Must, Binding: Chain, Chain: "the check is that request",
		Title: "the check is GET …/postern/v0/entitlements/{owner}/{name}: the identifier in two path segments, never percent-encoded",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.finish()
			c := s.anyCheck()
			switch {
			case c.Method != http.MethodGet:
				t.Fail(nil, "the check was %s %s; §5.3 defines it as a GET", c.Method, c.Target)
			case !c.TwoSegments():
				t.Fail(nil, "the check asked for %q: §5.3.1 addresses the identifier as two raw path segments after entitlements/, with no percent-encoding", c.Target)
			}
		},
	},
	{
		ID: "5.3.1/addresses-own-agent", Section: "5.3.1", Level: 1, Keyword: Must, Binding: Chain, Chain: "one agent, one identifier",
		Title: "the check addresses the agent describe names, octet for octet (§1.5, §2.2)",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.finish()
			c := s.anyCheck()
			r := wire.Get("describe")
			r.Note = "the agent the runner serves, to compare with the one it checked"
			ex := s.do(r)
			id, _ := ex.Object()["agent"].(map[string]any)["id"].(string)
			if id == "" {
				t.NotApplicable("describe gave no agent.id to compare with (the runner check judges describe)")
			}
			if c.Addressed() != id {
				t.Fail(ex, "the check addressed %q while describe names %q; §1.5 spells one agent one way everywhere, the entitlement path included", c.Addressed(), id)
			}
		},
	},
	{
		ID: "4.4/checked-at-unchanged", Section: "4.4", Level: 1, Keyword: Must,
		Title: "status.entitlement carries the distributor's checked_at unchanged, never re-stamped",
		Probe: func(t *T) {
			// An answer read from the distributor's cache a minute ago, so
			// that a runner stamping its own clock shows: its receipt time
			// of any answer is a minute later than every checked_at sent.
			a := active(t.Env)
			a.Age = time.Minute
			a.StaleAfterSeconds = int(a.Age/time.Second) + int(t.Env.Window/time.Second) + 3
			s := begin(t, a)
			defer s.finish()
			s.firstCheck()
			e := s.status("after the check, to read what status reports of it")
			// Judged against every answer given so far: a runner that asked
			// again carries the newer answer's checked_at (given.go).
			g := s.given()
			switch got, ok := protocol.ParseStamp(e.checkedAt); {
			case e.state != "active":
				t.Fail(e.ex, "after an active answer status reports the entitlement %q; §4.4 reports the state the distributor gave", e.state)
			case !ok:
				t.Fail(e.ex, "status.entitlement.checked_at is %q, not an RFC 3339 timestamp; the distributor sent %s (§4.4, §5.3)", e.checkedAt, g.stamps())
			case !g.sent(got):
				t.Fail(e.ex, "status.entitlement.checked_at is %s, which no answer the distributor gave this runner carried (it sent %s): §4.4 carries it unchanged, never re-stamped with the runner's clock", e.checkedAt, g.stamps())
			}
			if n, ok := e.block["stale_after_seconds"]; !ok {
				t.Fail(e.ex, "status.entitlement has no stale_after_seconds, which §4.4 makes REQUIRED for an active entitlement")
			} else if asInt(n) != a.StaleAfterSeconds {
				t.Warn(e.ex, "status.entitlement.stale_after_seconds is %v where the distributor declared %d (inferred: §4.4 says it declares the distributor's bound, without a keyword on the value)", n, a.StaleAfterSeconds)
			}
		},
	},
	{
		ID: "5.3/access-ends-at-not-a-deadline", Section: "5.3", Level: 2, Keyword: MustNot,
		Title: "an active answer whose access_ends_at has passed does not refuse runs on the date alone",
		Probe: func(t *T) {
			// The date passes well within the window: nothing else changes.
			a := active(t.Env)
			a.StaleAfterSeconds = int(t.Env.Window/time.Second) + 6
			ends := t.Env.Clock.Now().Add(2 * time.Second)
			a.AccessEndsAt = ends
			s := begin(t, a)
			defer s.finish()
			s.firstCheck()
			s.waitUntil(ends.Add(s.slack()))
			expectInForce(t, s.refusals("the access_ends_at date has passed, within the window of an active answer"),
				"with the entitlement active and only access_ends_at passed,", "§5.3: the date alone never refuses a run, a later revoked does")
		},
	},
	{
		ID: "5.3/refusal-access-ends-at", Section: "5.3", Level: 2, Keyword: Must, Binding: Contract, Chain: "§5.6",
		Title: "a refusal carrying error.detail.access_ends_at carries the date the distributor gave, unchanged",
		Probe: func(t *T) {
			// Access ran out on its date: §5.3's revoked carrying a past date.
			a := scripted.Answer{Kind: scripted.Revoked, StaleAfterSeconds: int(t.Env.Window.Seconds()), GraceSeconds: int(t.Env.Grace.Seconds()),
				AccessEndsAt: t.Env.Clock.Now().Add(-36 * time.Hour)}
			s := begin(t, a)
			defer s.finish()
			c := s.firstCheck()
			want := c.Sent.AccessEndsAt
			carried := 0
			for _, ex := range s.refusals("revoked, the distributor having given an access_ends_at") {
				detail, _ := ex.ErrorDetail().(map[string]any)
				v, has := detail["access_ends_at"]
				if !refusedAs(ex, "not_entitled") || !has {
					continue
				}
				carried++
				str, _ := v.(string)
				if at, ok := protocol.ParseStamp(str); !ok || !at.Equal(want) {
					t.Fail(ex, "POST %s answered not_entitled with error.detail.access_ends_at %v where the distributor gave %s: §5.3 and §5.6 make the member the distributor's date, which a buyer plans by", verbOf(ex), v, scripted.Stamp(want))
				}
			}
			if carried == 0 {
				t.NotApplicable("no not_entitled refusal carries error.detail.access_ends_at, which §5.3 leaves optional")
			}
		},
	},
	{
		ID: "5.3/other-agent-unreachable", Section: "5.3", Level: 1, Keyword: Should,
		Title: "an answer naming another agent counts as a failed check, not as an answer",
		Probe: func(t *T) {
			s, c := pastWindow(t, active(t.Env), scripted.Answer{Kind: scripted.OtherAgent, StaleAfterSeconds: int(t.Env.Window / time.Second), GraceSeconds: int(t.Env.Grace / time.Second)})
			defer s.finish()
			renewed := func(e ent) bool {
				at, ok := protocol.ParseStamp(e.checkedAt)
				return e.state == "active" && (!ok || !s.given().sent(at))
			}
			e := s.statusUntil("past the window, the distributor now answering for another agent", func(e ent) bool { return !renewed(e) })
			if renewed(e) {
				t.Fail(e.ex, "an answer for another agent renewed the entitlement (active, checked_at %s, where the last answer for this agent carried %s); §5.3 has a runner treat it as a failed check", e.checkedAt, scripted.Stamp(c.Sent.CheckedAt))
			}
		},
	},
}

func asInt(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case interface{ Int64() (int64, error) }:
		i, _ := n.Int64()
		return int(i)
	}
	return -1
}
