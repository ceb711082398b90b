package posterntest_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/sigrix-io/postern-conformance/checks/posterntest"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// TestMaxRuns: posterntest.MaxRuns caps the agent starts of an Execute
// check as --max-runs does, the report counts them as the runner does, and
// the rules it could not pay for skip, saying which budget would do.
func TestMaxRuns(t *testing.T) {
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	rep, err := posterntest.Check(context.Background(), rn, posterntest.Origin(fixtures.AllowedOrigin), posterntest.Execute(), posterntest.MaxRuns(2))
	assert.NilError(t, err)
	assert.Assert(t, rep.AgentStarts != nil)
	assert.Equal(t, *rep.AgentStarts, int(rn.Executions()))
	assert.Assert(t, *rep.AgentStarts <= 2, "%d agent starts under MaxRuns(2)", *rep.AgentStarts)
	skipped := 0
	for _, r := range rep.Results {
		if r.Outcome == runner.Skip && strings.Contains(r.Reason, "needs --max-runs ") {
			skipped++
		}
	}
	assert.Assert(t, skipped > 0, "no rule skipped as needing a larger budget")
}
