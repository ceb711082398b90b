package runner

import (
	"fmt"
	"net/http"
)

// §5 Entitlement, as a runner reports it to its own client: what run and
// stream answer in each entitlement state status declares. Every probe is a
// body no runner could execute; the entitlement refusal comes before the
// body matters (§4.6 step 2), so it is what a conforming runner answers.
var section5 = []*Rule{
	{
		ID: "5.1/not-required-runs", Section: "5.1", Level: 2, Keyword: MustNot,
		Title: "with no distributor, run and stream never refuse on entitlement grounds",
		Needs: []Need{NeedStatus, needStatusField("entitlement-not-required", "not_required", "entitlement", "state")},
		Probe: func(t *T) {
			for _, verb := range verbsServed(t) {
				ex := t.Do(notAnObject(t, verb))
				switch {
				case ex.Is(http.StatusForbidden, "not_entitled"):
					t.Fail(ex, "status reports entitlement not_required, yet POST %s answered %s: §5.1 forbids an entitlement refusal where no distributor is configured",
						verb, ex.Brief())
				case ex.Is(http.StatusServiceUnavailable, "unavailable"):
					// §4.5's capacity refusal shares this answer; it is
					// plausible only while runs are in flight.
					if st := refetch(t, "status").Object(); Str(st, "state") == "running" {
						t.Undecided("POST %s answered 503 unavailable while status reports runs in flight: a capacity refusal (§4.5) looks the same", verb)
						return
					}
					t.Warn(ex, "status reports entitlement not_required and no run in flight, yet POST %s answered %s: with no distributor there is nothing to wait for (§5.1; inferred: a 503 is not shown to be on entitlement grounds)",
						verb, ex.Brief())
				default:
					t.Note("POST %s answered %s", verb, ex.Brief())
				}
			}
		},
	},
	{
		ID: "5.3/access-ends-at", Section: "5.3", Level: 2, Keyword: Must, Binding: Contract, Chain: "§5.6",
		Title:  "an access_ends_at carried on a not_entitled refusal is an RFC 3339 timestamp",
		Needs:  []Need{NeedStatus, needRevoked},
		Claims: []Claim{{Doc: "error", Path: "/error/detail/access_ends_at"}},
		Probe: func(t *T) {
			ex := t.Do(notAnObject(t, "run"))
			if !ex.Is(http.StatusForbidden, "not_entitled") {
				t.SkipFor(ex, "run answered %s, not the 403 not_entitled that may carry the date (5.7.4/revoked-run judges that)", ex.Brief())
				return
			}
			detail, _ := ex.ErrorDetail().(map[string]any)
			v, has := detail["access_ends_at"]
			if !has {
				t.NotApplicable("the 403 carries no error.detail.access_ends_at, which §5.3 leaves optional")
				return
			}
			// The schema's date-time format is RFC 3339's own grammar (lower
			// case t and z, and a leap second, included); this rule claims
			// its findings at the member.
			body, _ := ex.JSON()
			if schemaFindings(t, "error", ex, body); t.Failed() {
				t.Note("§5.3 and §5.6 write access_ends_at as an RFC 3339 timestamp, such as 2026-10-31T00:00:00Z")
			}
			s, _ := v.(string)
			if want := Str(t.Env.Status.Obj, "entitlement", "access_ends_at"); want != "" && s != "" && want != s {
				t.Note("the refusal's access_ends_at (%s) differs from status.entitlement.access_ends_at (%s)", s, want)
			}
		},
	},
	entitlementRule(revokedCase, "run", 2),
	entitlementRule(revokedCase, "stream", 3),
	entitlementRule(neverCase, "run", 2),
	entitlementRule(neverCase, "stream", 3),
}

var (
	needRevoked = needStatusField("entitlement-revoked", "revoked", "entitlement", "state")
	needNever   = Need{Name: "entitlement-never-checked", Check: func(e *Env) string {
		if entitlementStance(e) == entNever {
			return ""
		}
		return fmt.Sprintf("applies where status reports the entitlement unknown with no checked_at; this runner reports %s",
			entitlementWords(e))
	}}
)

// entitlementCase is one row of §5.7.4's table where run and stream stop.
type entitlementCase struct {
	id, section, state string // rule ID prefix, section, what status reports
	chain              string // how the section's keyword reaches the refusal
	need               Need
	status             int
	code, why          string
}

var (
	revokedCase = entitlementCase{
		id: "5.7.4/revoked", section: "5.7.4", state: "revoked", need: needRevoked,
		status: http.StatusForbidden, code: "not_entitled",
		why:   "the distributor declined, so no retry can help",
		chain: "the bullets of §5.7.4's MUST name the refusal",
	}
	neverCase = entitlementCase{
		id: "5.7.3/never-checked", section: "5.7.3", state: "unknown with no checked_at", need: needNever,
		status: http.StatusServiceUnavailable, code: "unavailable",
		why:   "nothing has been refused yet, and a retry may succeed once the distributor is reached",
		chain: "the bullets of §5.7.3's MUST NOT name the refusal",
	}
)

// entitlementRule: in c's posture, verb answers c's refusal, ahead of any
// fault in the body (§4.6 step 2).
func entitlementRule(c entitlementCase, verb string, level int) *Rule {
	return &Rule{
		ID: c.id + "-" + verb, Section: c.section, Level: level, Keyword: Must, Binding: Chain, Chain: c.chain,
		Title: fmt.Sprintf("with the entitlement %s, %s answers %d %s", c.state, verb, c.status, c.code),
		Needs: []Need{NeedStatus, c.need},
		Probe: func(t *T) {
			ex := t.Do(notAnObject(t, verb))
			if !ex.Is(c.status, c.code) {
				t.Fail(ex, "status reports the entitlement %s; POST %s answered %s, not %d %s (§%s: %s; §4.6 puts it ahead of any fault in the body)",
					c.state, verb, ex.Brief(), c.status, c.code, c.section, c.why)
			}
		},
	}
}
