package runner

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// §4.4 GET /postern/v0/status.
var section4_4 = []*Rule{
	{
		ID: "4.4/answers-unconditionally", Section: "4.4", Level: 1, Keyword: MustNot,
		Title: "status answers 200 without credentials, whatever the runner's state",
		Probe: func(t *T) { answersRule("status", t) },
	},
	{
		ID: "4.4/json", Section: "4.4", Level: 1, Keyword: Must, Binding: Chain, Chain: "REQUIRED members need an object",
		Title: "status is a JSON object",
		Probe: func(t *T) { objectRule("status", t) },
	},
	{
		ID: "4.4/content-type", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2",
		Title: "status is labelled application/json",
		Probe: func(t *T) { contentTypeRule("status", t) },
	},
	{
		ID: "4.4/schema", Section: "4.4", Level: 1, Keyword: Must,
		Title: "status matches the status schema (a constraint no keyword binds only warns, and says it is inferred)",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) { schemaRule("status", t) },
	},
	{
		ID: "4.4/conditional-members", Section: "4.4", Level: 1, Keyword: Required,
		Title:  "an active or revoked entitlement carries checked_at and stale_after_seconds",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/entitlement/checked_at"}, {Doc: "status", Path: "/entitlement/stale_after_seconds"}},
		Probe: func(t *T) {
			switch Str(t.Env.Status.Obj, "entitlement", "state") {
			case "active", "revoked":
				schemaFindings(t, "status", t.Env.Status.Ex, t.Env.Status.Obj)
			default:
				t.NotApplicable("entitlement.state is %s; the members are required only for active and revoked",
					quoteOr(Str(t.Env.Status.Obj, "entitlement", "state")))
			}
		},
	},
	{
		ID: "4.4/degraded-iff-missing", Section: "4.4", Level: 1, Keyword: Required, Binding: Chain, Chain: "the REQUIRED state, read as §4.4 defines degraded",
		Title:    "state is degraded exactly when a credential describe declares is unset, as status.credentials says",
		Needs:    []Need{NeedStatus, NeedDescribe},
		Evidence: true,
		Probe:    degradedRule,
	},
	{
		ID: "4.4/level1-ready", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "a Level 1 runner reports state ready, having no run to be degraded about",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			if t.Env.Level != 1 {
				t.NotApplicable("applies to a Level 1 runner; this one declares Level %d", t.Env.Level)
				return
			}
			if st := Str(t.Env.Status.Obj, "state"); st != "ready" {
				t.Fail(t.Env.Status.Ex, "a Level 1 runner reports state %s; §4.4: with no run to serve it reports ready", quoteOr(st))
			}
		},
	},
	{
		ID: "4.4/level1-no-idempotent", Section: "4.4", Level: 1, Keyword: ShouldNot,
		Title: "a Level 1 runner does not declare idempotent_retry, having no run to repeat",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			if t.Env.Level != 1 {
				t.NotApplicable("applies to a Level 1 runner; this one declares Level %d", t.Env.Level)
				return
			}
			if v, ok := t.Env.Status.Obj["idempotent_retry"]; ok {
				t.Fail(t.Env.Status.Ex, "a Level 1 runner declares idempotent_retry: %v; §4.2 says a runner without run leaves the field out", v)
			}
		},
	},
	{
		ID: "4.4/max-concurrent-runs", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title:  "limits.max_concurrent_runs, where given, is a whole number of at least 1",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/limits/max_concurrent_runs"}},
		Probe: func(t *T) {
			statusClaims(t, "§4.4: max_concurrent_runs is at least 1; a runner that runs nothing says so with its level")
			v, ok := Path(t.Env.Status.Obj, "limits", "max_concurrent_runs")
			switch n, whole := wholeNumber(v); {
			case t.Failed():
			case !ok:
				t.NotApplicable("status declares no limits.max_concurrent_runs")
			case !whole || n < 1:
				t.Fail(t.Env.Status.Ex, "limits.max_concurrent_runs is %v; §4.4: at least 1 (a runner that runs nothing says so with its level)", v)
			default:
				t.Note("at most %v runs at once", v)
			}
		},
	},
	{
		ID: "4.4/update-current", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title:  "update.current is present whenever knowable and is describe's agent.version",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/update/current"}},
		Probe: func(t *T) {
			u := updateBlock(t, "§4.4: current is the runner's own describe.agent.version, present whatever the check found")
			if u == nil {
				return
			}
			cur, has := u["current"]
			version := Str(t.Env.Describe.Obj, "agent", "version")
			switch s, isStr := cur.(string); {
			case t.Failed():
			case !has && Str(u, "state") == "not_required":
				t.Warn(t.Env.Status.Ex, "update.state is not_required and update.current is absent; §4.4 has current present whenever knowable (inferred: §4.4 also has update present only where a version check ran, and \"unreachable included\" reads as a list of the states in which one ran, which not_required is not)")
			case !has:
				t.Fail(t.Env.Status.Ex, "update.state is %s and update.current is absent; §4.4: a runner always knows the version it runs, so current is there whatever the check found (unreachable included)",
					quoteOr(Str(u, "state")))
			case !isStr:
				t.Fail(t.Env.Status.Ex, "update.current is %v, not a version string", cur)
			case version == "":
				t.Note("update.current is %q; describe gives no agent.version to compare it with", s)
			case s != version:
				t.Fail(t.Env.Status.Ex, "update.current is %q but describe.agent.version is %q; §4.4: current is the runner's own describe version", s, version)
			default:
				t.Note("update.current %q matches describe", s)
			}
		},
	},
	{
		ID: "4.4/update-latest", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title:  "update.latest is present under current and update_available, and only there",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/update/latest"}},
		Probe: func(t *T) {
			u := updateBlock(t, "§4.4: latest is what a distributor answered, so it exists only under current and update_available")
			if u == nil {
				return
			}
			st := Str(u, "state")
			_, has := u["latest"]
			switch {
			case t.Failed():
			case (st == "current" || st == "update_available") && !has:
				t.Fail(t.Env.Status.Ex, "update.state is %s but update.latest is absent; §4.4: latest is what the distributor answered, present in both answered states", st)
			case (st == "not_required" || st == "unreachable") && has:
				t.Fail(t.Env.Status.Ex, "update.state is %s yet update.latest is %v; §4.4: no distributor answered, so there is no latest", st, u["latest"])
			}
		},
	},
	{
		ID: "4.4/update-state", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title:  "update.state is one of its four values, and current against update_available follows current == latest",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/update/state"}},
		Probe: func(t *T) {
			u := updateBlock(t, "§4.4: update.state is not_required, unreachable, current or update_available")
			if u == nil {
				return
			}
			st := Str(u, "state")
			cur, okC := u["current"].(string)
			lat, okL := u["latest"].(string)
			switch {
			case t.Failed():
			case st != "current" && st != "update_available":
				t.NotApplicable("update.state is %s; the comparison applies to current and update_available", quoteOr(st))
			case !okC || !okL:
				t.NotApplicable("update.current or update.latest is missing (4.4/update-current and 4.4/update-latest judge that)")
			case st == "current" && cur != lat:
				t.Fail(t.Env.Status.Ex, "update.state is current but current %q differs from latest %q; §4.4: they are equal exactly when the state is current", cur, lat)
			case st == "update_available" && cur == lat:
				t.Fail(t.Env.Status.Ex, "update.state is update_available but current and latest are both %q; §4.4: that is the state current", cur)
			default:
				t.Note("update.state %s, current %q, latest %q", st, cur, lat)
			}
		},
	},
	{
		ID: "4.4/update-not-required", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "update.state not_required (no distributor) stands only beside entitlement.state not_required",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			u := updateBlock(t, "")
			if u == nil {
				return
			}
			us, es := Str(u, "state"), Str(t.Env.Status.Obj, "entitlement", "state")
			switch {
			case us == "" || es == "":
				t.NotApplicable("update.state or entitlement.state is not a string (4.4/schema judges that)")
			case us == "not_required" && es != "not_required":
				// Only this direction is decided: a free agent (entitlement
				// not_required) may still ask a distributor for versions.
				t.Fail(t.Env.Status.Ex, "update.state is not_required, which means no distributor is configured, beside entitlement.state %s, which only a configured distributor produces (§4.4, §5.1)", es)
			default:
				t.Note("update.state %s beside entitlement.state %s", us, es)
			}
		},
	},
	{
		ID: "4.4/not-required-no-checked-at", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "a not_required entitlement leaves checked_at out, since no check took place",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			ent, _ := t.Env.Status.Obj["entitlement"].(map[string]any)
			if st := Str(ent, "state"); st != "not_required" {
				t.NotApplicable("entitlement.state is %s; applies to not_required", quoteOr(st))
				return
			}
			if v, ok := ent["checked_at"]; ok {
				t.Fail(t.Env.Status.Ex, "entitlement.state is not_required yet checked_at is %v; §4.4: with no distributor there was no check to date", v)
			}
		},
	},
	{
		ID: "4.4/unknown-shapes", Section: "4.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.4",
		Title: "a bare unknown (never checked) carries nothing a distributor declared",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			ent, _ := t.Env.Status.Obj["entitlement"].(map[string]any)
			if st := Str(ent, "state"); st != "unknown" {
				t.NotApplicable("entitlement.state is %s; applies to unknown", quoteOr(st))
				return
			}
			if at, ok := ent["checked_at"]; ok {
				t.Note("unknown with checked_at %v: inside a grace period (§5.7.1)", at)
				return
			}
			var stray []string
			// grace_seconds and access_ends_at are what a distributor told the
			// runner; stale_after_seconds may be the runner's own cadence
			// (§5.7.4 lets it supply one), so it is not judged here.
			for _, m := range []string{"grace_seconds", "access_ends_at"} {
				if _, ok := ent[m]; ok {
					stray = append(stray, m)
				}
			}
			if len(stray) > 0 {
				t.Fail(t.Env.Status.Ex, "entitlement is unknown with no checked_at, yet carries %s; §4.4, §5.7.3: without checked_at the runner has never had an answer, so it holds nothing a distributor declared",
					strings.Join(stray, ", "))
				return
			}
			t.Note("unknown with no checked_at: never checked, cannot start (§5.7.3)")
		},
	},
}

// statusClaims reports the status schema violations the rule claims, each
// followed by why (see ownClaims).
func statusClaims(t *T, why string) { ownClaims(t, "status", t.Env.Status, why) }

// updateBlock is status.update, or nil after skipping the rule where there
// is none: a runner with no version check configured omits it (§4.4). Where
// there is one, it reports the status violations the rule claims,
// each followed by why (see ownClaims; a rule claiming none reports none).
func updateBlock(t *T, why string) map[string]any {
	u, ok := t.Env.Status.Obj["update"].(map[string]any)
	if !ok {
		if _, present := t.Env.Status.Obj["update"]; present {
			t.NotApplicable("status.update is not an object (4.4/schema judges that)")
		} else {
			t.NotApplicable("status reports no update check")
		}
		return nil
	}
	statusClaims(t, why)
	return u
}

// degradedRule: §4.4 — degraded means a declared credential is unset,
// running outranks it, and a Level 1 runner reports ready. Where status
// publishes credentials, its two members agree with each other, name only
// declared credentials, and agree with state.
func degradedRule(t *T) {
	ex := t.Env.Status.Ex
	declared := credentialNames(t.Env.Describe.Obj)
	creds, _ := t.Env.Status.Obj["credentials"].(map[string]any)
	missing, listed := creds["missing"].([]any)
	satisfied, told := creds["satisfied"].(bool)
	published := listed || told

	if listed && told && satisfied == (len(missing) > 0) {
		t.Fail(ex, "credentials.satisfied is %v beside missing %v; §4.4: satisfied is true exactly when nothing is missing", satisfied, missing)
	}
	for _, m := range missing {
		if name, _ := m.(string); !slices.Contains(declared, name) {
			t.Fail(ex, "credentials.missing names %v, which describe does not declare (it declares %v); §4.4: missing names the declared credentials that are unset", m, declared)
		}
	}

	lacking := (listed && len(missing) > 0) || (told && !satisfied)
	state := Str(t.Env.Status.Obj, "state")
	judged := published
	switch {
	case state == "running":
		t.Note("state is running, which outranks degraded while a run is in flight")
	case t.Env.Level == 1:
		t.Note("a Level 1 runner reports ready whatever it lacks (4.4/level1-ready judges its state)")
	case state == "degraded" && len(declared) == 0:
		t.Fail(ex, "state is degraded but describe declares no credential; §4.4: degraded means a declared credential is unset")
	case state == "degraded" && published && !lacking:
		t.Fail(ex, "state is degraded but status.credentials reports nothing missing; §4.4: degraded means a declared credential is unset")
	case state == "ready" && lacking:
		t.Fail(ex, "state is ready though status.credentials reports %s; §4.4: a Level %d runner lacking a declared credential reports degraded", lackingWords(missing, listed), t.Env.Level)
	case state == "degraded" && !published:
		judged = true
		t.Note("degraded, with %d credentials declared in describe and no detail in status to contradict it", len(declared))
	case published:
		t.Note("state %s agrees with status.credentials", state)
	}
	// What status said is also held against what run answered: the rule is
	// a sweep, so every request of the run (a valid one under --execute)
	// has been sent by now.
	if state == "ready" && t.Env.Level >= 2 {
		for _, r := range t.Evidence() {
			if r.Is(http.StatusFailedDependency, "missing_credential") {
				t.Fail(r, "status said ready, yet %s was refused 424 missing_credential; §4.4: a runner lacking a declared credential reports degraded", r.RequestLine())
				return
			}
		}
	}
	if !judged && !t.Failed() {
		t.NotApplicable("status publishes no credentials detail, and state %s alone cannot be held against describe here", quoteOr(state))
	}
}

func lackingWords(missing []any, listed bool) string {
	if listed && len(missing) > 0 {
		return fmt.Sprintf("%v missing", missing)
	}
	return "satisfied false"
}
