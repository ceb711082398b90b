package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// TestMaxRunsFlag: --max-runs caps the agent starts of demo --execute,
// which the report states, and
// a budget below one start is refused.
func TestMaxRunsFlag(t *testing.T) {
	code, out := run(t, "demo", "--execute", "--max-runs", "3", "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Assert(t, strings.Contains(out, "The agent was started 3 times (--max-runs 3)."), out)
	assert.Assert(t, strings.Contains(out, "needs --max-runs "), out)

	code, out = run(t, "demo", "--execute", "--max-runs", "0")
	assert.Equal(t, code, 2, out)
}
