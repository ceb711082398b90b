package checks

import "bytes"

// §4.1 GET /postern/v0/describe.
var section4_1 = []*Rule{
	{
		ID: "4.1/answers-unconditionally", Section: "4.1", Level: 1, Keyword: Must,
		Title: "describe answers 200 without credentials or an entitlement",
		Probe: func(t *T) { answersRule("describe", t) },
	},
	{
		ID: "4.1/json", Section: "4.1", Level: 1, Keyword: Must,
		Title: "describe is a JSON object served as application/json",
		Probe: func(t *T) { jsonRule("describe", t) },
	},
	{
		ID: "4.1/schema", Section: "4.1", Level: 1, Keyword: Must,
		Title: "describe matches the describe schema",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) { schemaRule("describe", t) },
	},
	{
		ID: "4.1/stable", Section: "4.1", Level: 1, Keyword: Must, Advisory: true,
		Title: "describe is side-effect free: two reads give the same document",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			first := t.Env.Describe.Ex
			second := refetch(t, "describe")
			if !bytes.Equal(first.Body, second.Body) {
				t.Fail(second, "two reads of describe differed (%d and %d bytes); a side effect cannot be proven from outside, so this warns",
					len(first.Body), len(second.Body))
			}
		},
	},
}
