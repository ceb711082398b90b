package levels

import (
	"testing"

	"github.com/sigrix-io/postern-conformance/checks"
	"gotest.tools/v3/assert"
)

func result(id string, level int, o checks.Outcome) checks.Result {
	return checks.Result{Rule: &checks.Rule{ID: id, Level: level, Keyword: checks.Must}, Outcome: o}
}

func TestDecide(t *testing.T) {
	ok := []checks.Result{result("a/x", 1, checks.Pass), result("a/y", 2, checks.Warn), result("a/z", 3, checks.Skip)}
	assert.Equal(t, Decide(3, ok, nil).Text, "Conformant at Level 3.")

	broken := append(ok, result("b/x", 1, checks.Fail), result("b/y", 3, checks.Fail))
	v := Decide(3, broken, nil)
	assert.Equal(t, v.Text, "Nonconformant at declared Level 3: 2 MUST rules broken.")
	assert.Equal(t, v.Broken, 2)
	assert.Assert(t, !v.Conformant)

	v = Decide(3, broken, map[string]bool{"b/y": true})
	assert.Equal(t, v.Broken, 1)
	assert.Equal(t, v.Baselined, 1)
	assert.Equal(t, v.Text, "Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)")

	v = Decide(0, ok, nil)
	assert.Assert(t, !v.Conformant, "no declared level is never conformant")
}
