package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"

	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/markdown"
)

// TestAgentStartsInEveryWriter: an --execute check's count of agent
// starts is in the text summary, the JSON report (valid against the
// schema, strictly), a JUnit property and the Markdown summary; a check
// without --execute says nothing of it.
func TestAgentStartsInEveryWriter(t *testing.T) {
	r := fixture()
	r.Options.Execute, r.Options.MaxRuns = true, 20
	n := 9
	r.AgentStarts = &n

	var text, junit, md bytes.Buffer
	assert.NilError(t, report.WriteText(&text, r, report.Style{}))
	assert.NilError(t, report.WriteJUnit(&junit, r))
	assert.NilError(t, markdown.Write(&md, r))
	out := writeJSON(t, r)
	for _, c := range []struct{ name, doc, want string }{
		{"text", text.String(), "The agent was started 9 times (--max-runs 20)."},
		{"JSON", string(out), `"agent_starts": 9`},
		{"JSON options", string(out), `"max_runs": 20`},
		{"JUnit", junit.String(), `<property name="agent_starts" value="9">`},
		{"Markdown", md.String(), "The agent was started 9 times (--max-runs 20)."},
	} {
		assert.Check(t, strings.Contains(c.doc, c.want), "%s lacks %q", c.name, c.want)
	}
	for _, strict := range []bool{false, true} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		assert.NilError(t, err)
		assert.NilError(t, compile(t, strict).Validate(inst))
	}

	plain := fixture()
	var quiet bytes.Buffer
	assert.NilError(t, report.WriteText(&quiet, plain, report.Style{}))
	both := quiet.String() + string(writeJSON(t, plain))
	assert.Check(t, !strings.Contains(both, "agent_starts") && !strings.Contains(both, "agent was started"), "a check without --execute reports agent starts")
}
