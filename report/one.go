package report

// One result at a time, for a caller that reports each rule on its own,
// as the Go test API (checks/posterntest) does with one subtest per rule.

import (
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// ResultText is res, a result of r, as WriteText draws it under its
// section, without the report's indentation: the outcome (KNOWN for a
// FAIL the baseline excuses), title and rule ID on the first line, then
// why a MUST only warned, the findings and their evidence, the reason of a
// SKIP or an ERROR, and the notes. Text from the runner is made safe as in
// the text report.
func ResultText(r *Report, res engine.Record, style Style) string {
	t := newText(style)
	t.timeout = r.Options.Timeout
	t.result(r, res, 0)
	var b strings.Builder
	for _, l := range strings.SplitAfter(t.b.String(), "\n") {
		b.WriteString(strings.TrimPrefix(l, indentResult))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Known reports whether res is a FAIL the baseline of r excuses.
func (r *Report) Known(res engine.Record) bool { return r.baselined(res) }

// String is the tally as the text report's footer writes it:
// "34 pass  0 fail  0 warn  2 skip", errors and known failures added
// where there are any.
func (c Counts) String() string { return countsLine(c) }

// WarnsOnly says why res, a rule under a MUST-class keyword, warned
// rather than failed, as the text report says it; "" otherwise.
func WarnsOnly(res engine.Record) string { return warnsOnly(res) }

// SkipReason is a SKIP's reason as the reports show it, marked
// "undecided — " where the checker could not decide the rule.
func SkipReason(res engine.Record) string { return skipReason(res) }

// Sections groups the results of r by section, in order of first
// appearance: the order every report draws them in, and each section's
// result indexes.
func (r *Report) Sections() (order []string, by map[string][]int) { return sections(r.Results) }

// RuleOf is the rule res describes, or a stand-in where it carries none,
// so that a malformed result is still reported.
func RuleOf(res engine.Record) engine.About { return ruleOf(res) }
