package report

import (
	"fmt"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report/baseline"
)

// AssembleWalk builds the report of an entitlement walk (the harness,
// checks/entitlement), for the same writers and exit policy as a check.
// Its verdict is the walk's own: every binding rule of §5 held, or how
// many did not.
func AssembleWalk(results []engine.Result[*entitlement.Env], o entitlement.Options, bl *baseline.Baseline, run Run) *Report {
	rs := make([]checks.Result, len(results))
	for i, res := range results {
		rs[i] = asCheckResult(res)
	}
	r := &Report{
		ToolVersion: run.ToolVersion,
		Target:      "launched: " + o.Launch,
		Schemas:     "embedded",
		Options:     Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline, AllEvidence: run.AllEvidence},
		Started:     run.Started,
		Elapsed:     run.Elapsed,
		Results:     rs,
		Baseline:    bl.Set(),
		Stale:       bl.Compare(rs).Stale,
		Walk:        true,
	}
	if o.Launch == "" {
		r.Target = "the bundled reference runner, in process"
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
	v.Text = "Entitlement handled as §5 requires."
	if v.Broken == 0 && !v.Conformant {
		v.Text = "No step of the walk could be decided (see each SKIP's reason): does the launch command map " +
			entitlement.VarDistributor + " and " + entitlement.VarToken + " onto the runner's own settings?"
	}
	if v.Broken > 0 {
		v.Text = fmt.Sprintf("Entitlement mishandled: %s of §5 broken.", count(v.Broken, "MUST rule", "MUST rules"))
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", count(v.Baselined, "known failure", "known failures"))
	}
	r.Verdict = v
	return r
}

// asCheckResult carries a harness result into the shape the writers read:
// the rule's description and the outcome, evidence and notes unchanged.
// (The writers read rules through checks.Rule; a harness rule is
// described by the same fields.)
func asCheckResult(res engine.Result[*entitlement.Env]) checks.Result {
	return checks.Result{
		Rule:    Described(res.Rule),
		Outcome: res.Outcome, Findings: res.Findings, Reason: res.Reason, Notes: res.Notes,
		Exchanges: res.Exchanges, Elapsed: res.Elapsed,
	}
}

// Described is a harness rule's description in the shape the writers and
// the catalogue read (a checks.Rule with no probe).
func Described(h *entitlement.Rule) *checks.Rule {
	return &checks.Rule{ID: h.ID, Section: h.Section, Level: h.Level, Keyword: h.Keyword, Binding: h.Binding,
		Chain: h.Chain, Title: h.Title, Advisory: h.Advisory}
}
