package runner

// §2.2 One agent per runner.
var section2_2 = []*Rule{
	{
		ID: "2.2/same-agent-id", Section: "2.2", Level: 1, Keyword: Must, Binding: Chain, Chain: "one agent, one identifier",
		Title: "describe and status report the same agent.id, octet for octet",
		Needs: []Need{NeedStatus, NeedDescribe},
		Probe: func(t *T) {
			d, s := Str(t.Env.Describe.Obj, "agent", "id"), Str(t.Env.Status.Obj, "agent", "id")
			switch {
			case d == "" || s == "":
				t.NotApplicable("describe or status carries no agent.id string (their schema rules say so)")
			case d != s:
				t.Fail(t.Env.Describe.Ex, "describe.agent.id is %q but status.agent.id is %q", d, s)
			default:
				t.Note("both say %q", d)
			}
		},
	},
}
