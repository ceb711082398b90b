// Package levels turns rule results into a level verdict: the level the
// runner declares in status (§3, §4.4), and whether every binding rule at or
// below it held.
package levels

import (
	"fmt"

	"github.com/sigrix-io/postern-conformance/checks"
)

// Names are the §3 level names.
var Names = map[int]string{1: "Describe", 2: "Execute", 3: "Stream"}

// Verbs are the verbs each level requires.
var Verbs = map[int]string{1: "describe, status", 2: "describe, status, run", 3: "describe, status, run, stream"}

// Verdict is the line a report ends on.
type Verdict struct {
	Declared   int  `json:"declared_level"` // 0: status declared no level 1–3
	Conformant bool `json:"conformant"`
	Broken     int  `json:"must_broken"` // binding rules at or below the declared level that failed
	// Baselined counts failures excused by a baseline file.
	Baselined int    `json:"baselined"`
	Text      string `json:"text"`
}

// Decide reads the results. excused names rule IDs whose failure a baseline
// accepts; they are counted apart and do not break conformance.
func Decide(declared int, results []checks.Result, excused map[string]bool) Verdict {
	v := Verdict{Declared: declared}
	for _, r := range results {
		if r.Outcome != checks.Fail {
			continue
		}
		if declared != 0 && r.Rule.Level > declared {
			continue
		}
		if excused[r.Rule.ID] {
			v.Baselined++
			continue
		}
		v.Broken++
	}
	v.Conformant = declared != 0 && v.Broken == 0
	switch {
	case declared == 0:
		v.Text = fmt.Sprintf("No conformance level declared: status must carry level 1, 2 or 3 (§3). %s broken.", plural(v.Broken))
	case v.Conformant:
		v.Text = fmt.Sprintf("Conformant at Level %d.", declared)
	default:
		v.Text = fmt.Sprintf("Nonconformant at declared Level %d: %s broken.", declared, plural(v.Broken))
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%d known failure%s excused by the baseline.)", v.Baselined, s(v.Baselined))
	}
	return v
}

func plural(n int) string { return fmt.Sprintf("%d MUST rule%s", n, s(n)) }

func s(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
