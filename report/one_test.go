package report_test

import (
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/report"
)

// ResultText is the text report's drawing of one result, out of its
// section's indentation.
func TestResultTextIsTheTextReportsLines(t *testing.T) {
	r := fixture()
	// The same lines, but for the padding that aligns the rule IDs.
	whole := regexp.MustCompile(` {2,}\[`).ReplaceAllString(text(t, r, report.Style{}), "  [")
	for _, res := range r.Results {
		one := report.ResultText(r, res, report.Style{})
		assert.Check(t, !strings.HasPrefix(one, " "), "indented: %q", one)
		var indented []string
		for _, l := range strings.Split(one, "\n") {
			indented = append(indented, "    "+l)
		}
		assert.Check(t, is.Contains(whole, strings.Join(indented, "\n")+"\n"))
		if res.Outcome == runner.Fail {
			assert.Check(t, r.Known(res) == strings.HasPrefix(one, "KNOWN"), one)
		}
	}
	assert.Check(t, is.Contains(whole, r.Counts().String()+"\n"))
}
