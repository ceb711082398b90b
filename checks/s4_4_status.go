package checks

// §4.4 GET /postern/v0/status.
var section4_4 = []*Rule{
	{
		ID: "4.4/answers-unconditionally", Section: "4.4", Level: 1, Keyword: MustNot,
		Title: "status answers 200 without credentials, whatever the runner's state",
		Probe: func(t *T) { answersRule("status", t) },
	},
	{
		ID: "4.4/json", Section: "4.4", Level: 1, Keyword: Must,
		Title: "status is a JSON object served as application/json",
		Probe: func(t *T) { jsonRule("status", t) },
	},
	{
		ID: "4.4/schema", Section: "4.4", Level: 1, Keyword: Must,
		Title: "status matches the status schema",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) { schemaRule("status", t) },
	},
	{
		ID: "4.4/conditional-members", Section: "4.4", Level: 1, Keyword: Required,
		Title: "an active or revoked entitlement carries checked_at and stale_after_seconds",
		Needs: []Need{NeedStatus},
		Owns:  []string{"status:/entitlement/checked_at", "status:/entitlement/stale_after_seconds"},
		Probe: func(t *T) {
			switch Str(t.StatusDoc(), "entitlement", "state") {
			case "active", "revoked":
				t.schemaFindings("status", t.Env.Status.Ex, t.StatusDoc())
			default:
				t.Skip("entitlement.state is %s; the members are required only for active and revoked",
					quoteOr(Str(t.StatusDoc(), "entitlement", "state")))
			}
		},
	},
}
