// Package report renders one checking run three ways: a text report for a
// person or a CI log (WriteText), a versioned JSON document for programs
// (WriteJSON, described in FORMAT.md and by the embedded JSON Schema), and
// JUnit XML for CI test dashboards (WriteJUnit).
//
// Every format reads the same Report and none of them judges anything: the
// outcomes come from checks, the verdict from levels. Text from the runner
// (bodies, header values, messages quoting them) is untrusted; each writer
// makes it safe for its medium — no terminal escapes in text, valid UTF-8 in
// JSON, only XML 1.0 characters in JUnit.
package report

import (
	"sort"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/levels"
)

// ToolName is the name reports carry when Report.Tool is empty.
const ToolName = "postern-conformance"

// Report is one checking run, the thing every format renders.
type Report struct {
	Tool        string // "postern-conformance"
	ToolVersion string
	Target      string // runner origin
	Schemas     string // which schema set was used: "embedded" or a directory
	Options     Options
	Started     time.Time
	Elapsed     time.Duration
	Results     []checks.Result
	Verdict     levels.Verdict
	Baseline    map[string]bool // rule IDs excused by a baseline (may be nil)
}

// Options are the choices the user made for the run, as the report shows
// them.
type Options struct {
	Origin  string
	Execute bool
	Rules   []string // selection patterns; empty means every rule
	Timeout time.Duration
	Headers []string // names of the headers sent on every request, never values
	// AllEvidence keeps every exchange in the JSON report, a PASS's too, so
	// the report records what was probed as well as what broke.
	AllEvidence bool
}

// Counts tallies outcomes. A FAIL excused by the baseline counts as
// Baselined, not Fail.
type Counts struct{ Pass, Fail, Warn, Skip, Error, Baselined int }

// Total is the number of results counted.
func (c Counts) Total() int { return c.Pass + c.Fail + c.Warn + c.Skip + c.Error + c.Baselined }

// Counts tallies the results.
func (r *Report) Counts() Counts {
	var c Counts
	for _, res := range r.Results {
		switch res.Outcome {
		case checks.Pass:
			c.Pass++
		case checks.Fail:
			if r.baselined(res) {
				c.Baselined++
			} else {
				c.Fail++
			}
		case checks.Warn:
			c.Warn++
		case checks.Skip:
			c.Skip++
		default: // checks.Error, and anything the engine never produces
			c.Error++
		}
	}
	return c
}

// baselined reports whether res is a FAIL the baseline excuses.
func (r *Report) baselined(res checks.Result) bool {
	return res.Outcome == checks.Fail && res.Rule != nil && r.Baseline[res.Rule.ID]
}

func (r *Report) tool() string {
	if r.Tool == "" {
		return ToolName
	}
	return r.Tool
}

// baselineIDs lists the baseline's rule IDs in order.
func (r *Report) baselineIDs() []string {
	ids := make([]string, 0, len(r.Baseline))
	for id, ok := range r.Baseline {
		if ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// unknownRule stands in for a result that carries no rule, so that a
// malformed result is still reported rather than crashing the report.
var unknownRule = &checks.Rule{ID: "?", Section: "?", Title: "(result without a rule)"}

func ruleOf(res checks.Result) *checks.Rule {
	if res.Rule == nil {
		return unknownRule
	}
	return res.Rule
}
