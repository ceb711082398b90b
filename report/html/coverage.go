package html

import (
	"fmt"
	"sync"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
)

// coverage says how much of SPEC this run checked, from the traceability
// matrix (checks.TraceCoverage): of every obligation of §1–§8, those a
// rule this run decided checks; and of those on the party this run
// checked (the subject most of them bind: a runner, a distributor, a
// client), the same. The suite's own reach is given beside each figure.
func coverage(r *report.Report) []string {
	rows, err := checks.Trace()
	if err != nil || len(rows) == 0 {
		return nil
	}
	decided := map[string]bool{}
	for _, res := range r.Results {
		switch res.Outcome {
		case engine.Pass, engine.Fail, engine.Warn:
			decided[res.Rule.ID] = true
		}
	}
	run := make([]checks.TraceRow, len(rows))
	for i, row := range rows {
		run[i] = row
		run[i].Checks = nil
		for _, id := range row.Checks {
			if decided[id] {
				run[i].Checks = append(run[i].Checks, id)
			}
		}
	}
	all, this := suiteCoverage(rows), checks.TraceCoverage(run)
	party := ""
	for subject, n := range this.BySubject {
		if n[1] > this.BySubject[party][1] || (n[1] == this.BySubject[party][1] && subject < party) {
			party = subject
		}
	}
	out := []string{fmt.Sprintf("This run checked %d of SPEC's %d obligations (%s); the suite can check %d of them.",
		this.Checked, this.Rows, percent(this.Checked, this.Rows), all.Checked)}
	if n := this.BySubject[party]; party != "" && party != "any" && n[1] > 0 {
		out = append(out, fmt.Sprintf("Of the %d on a %s, it checked %d (%s); the suite can check %d.",
			n[0], party, n[1], percent(n[1], n[0]), all.BySubject[party][1]))
	}
	return out
}

// suiteCoverage is what the whole suite covers, counted once.
var suiteCoverage = sync.OnceValue(func() func([]checks.TraceRow) checks.Coverage {
	var c checks.Coverage
	var once sync.Once
	return func(rows []checks.TraceRow) checks.Coverage {
		once.Do(func() { c = checks.TraceCoverage(rows) })
		return c
	}
})()

func percent(n, of int) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%d%%", n*100/of)
}
