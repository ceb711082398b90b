package report

import (
	"fmt"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report/baseline"
)

// AssembleDistributor builds the report of a distributor check
// (checks/distributor), for the same writers and exit policy as a check.
// Its verdict is the mode's own: every binding rule checked held, or how
// many did not. (A bridge like AssembleWalk, until report renders any
// mode's results itself.)
func AssembleDistributor(results []distributor.Result, o distributor.Options, bl *baseline.Baseline, run Run) *Report {
	rs := make([]checks.Result, len(results))
	for i, res := range results {
		rs[i] = checks.Result{Rule: DescribedDistributor(res.Rule), Outcome: res.Outcome, Findings: res.Findings,
			Reason: res.Reason, Notes: res.Notes, Exchanges: res.Exchanges, Elapsed: res.Elapsed}
	}
	r := &Report{
		ToolVersion: run.ToolVersion, Target: o.Target, Schemas: "embedded",
		Options: Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline, AllEvidence: run.AllEvidence},
		Started: run.Started, Elapsed: run.Elapsed, Results: rs,
		Baseline: bl.Set(), Stale: bl.Compare(rs).Stale,
	}
	for name := range o.Headers {
		r.Options.Headers = append(r.Options.Headers, name)
	}
	v := levels.Verdict{}
	for _, res := range rs {
		switch {
		case res.Outcome != checks.Fail:
		case r.Baseline[res.Rule.ID]:
			v.Baselined++
		default:
			v.Broken++
		}
	}
	c := r.Counts()
	v.Conformant = v.Broken == 0 && c.Pass+c.Warn+c.Fail+c.Baselined > 0
	v.Text = "Distributor conformant: every MUST of §5 it was checked on held."
	if v.Broken == 0 && !v.Conformant {
		v.Text = "No rule of the distributor check could be decided (see each SKIP's reason)."
	}
	if v.Broken > 0 {
		v.Text = fmt.Sprintf("Distributor nonconformant: %s broken.", count(v.Broken, "MUST rule", "MUST rules"))
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", count(v.Baselined, "known failure", "known failures"))
	}
	r.Verdict = v
	return r
}

// DescribedDistributor is a distributor rule's description in the shape
// the writers and the catalogue read.
func DescribedDistributor(h *distributor.Rule) *checks.Rule {
	return &checks.Rule{ID: h.ID, Section: h.Section, Level: h.Level, Keyword: h.Keyword, Binding: h.Binding,
		Chain: h.Chain, Title: h.Title, Advisory: h.Advisory}
}
