package report_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// without drops the results of the rules ids from r.
func without(r *report.Report, ids ...string) *report.Report {
	var kept []engine.Record
	for _, res := range r.Results {
		drop := false
		for _, id := range ids {
			drop = drop || res.Rule.ID == id
		}
		if !drop {
			kept = append(kept, res)
		}
	}
	r.Results = kept
	return r
}

func TestExitInOrder(t *testing.T) {
	strict := report.Strictness{Warn: true, Baseline: true}
	r := fixture() // a FAIL, an excused FAIL, a WARN, an ERROR
	code, msg := r.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitBroken)
	assert.Equal(t, msg, "1 rule FAILs not excused by a baseline: 2.3/media-type-run")
	code, _ = r.Exit(strict)
	assert.Equal(t, code, report.ExitBroken, "a FAIL comes first")

	r = without(fixture(), "2.3/media-type-run")
	code, msg = r.Exit(strict)
	assert.Equal(t, code, report.ExitCannotCheck, "then a rule the checker could not evaluate")
	assert.Equal(t, msg, "1 rule could not be evaluated (the checker failed; see ERROR in the report): 4.6/order")

	r = without(fixture(), "2.3/media-type-run", "4.6/order")
	code, msg = r.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitOK)
	assert.Equal(t, msg, "no rule FAILs but the 1 known failure the baseline excuses")
	code, msg = r.Exit(report.Strictness{Warn: true})
	assert.Equal(t, code, report.ExitBroken, "a WARN fails a strict run")
	assert.Equal(t, msg, "1 rule WARNs, and a WARN fails a strict run: 2.3/no-wildcard")

	r = without(fixture(), "2.3/media-type-run", "4.6/order", "2.3/no-wildcard", "5/revoked")
	r.Stale = []baseline.Stale{{File: "b.txt", Line: 3, ID: "4.4/level", Outcome: runner.Pass}, {File: "b.txt", Line: 7, ID: "2.3/vary", Outcome: runner.Warn}}
	code, msg = r.Exit(report.Strictness{Warn: true})
	assert.Equal(t, code, report.ExitOK, "a stale entry fails only a strict baseline")
	assert.Equal(t, msg, "no rule FAILs")
	code, msg = r.Exit(report.Strictness{Baseline: true})
	assert.Equal(t, code, report.ExitBroken)
	assert.Equal(t, msg, "the baseline is stale, and a strict baseline fails the run: 4.4/level (now PASS), 2.3/vary (now WARN) no longer fail; delete their lines")
	r.Stale = r.Stale[:1]
	_, msg = r.Exit(report.Strictness{Baseline: true})
	assert.Check(t, is.Contains(msg, "4.4/level (now PASS) no longer fails; delete its line"))
}

func TestExitNamesAFewAndCountsTheRest(t *testing.T) {
	r := &report.Report{}
	for i := 0; i < 8; i++ {
		r.Results = append(r.Results, runner.Result{Rule: &runner.Rule{ID: "x/" + string(rune('a'+i))}, Outcome: runner.Fail}.Record())
	}
	r.Results = append(r.Results, runner.Result{Outcome: runner.Fail}.Record()) // no rule: still counted
	code, msg := r.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitBroken)
	assert.Equal(t, msg, "9 rules FAIL not excused by a baseline: x/a, x/b, x/c, x/d, x/e and 4 more")
}

// TestAssemble checks a real runner with one fault planted and assembles
// its report with a baseline that excuses the fault's rule and lists a rule
// that passes.
func TestAssemble(t *testing.T) {
	fault, err := fixtures.LookupFault("bare-405")
	assert.NilError(t, err)
	srv, err := fixtures.Start(fixtures.Config{Faults: []string{fault.Name}, Posture: fault.Posture, Level: fault.Level}, 0)
	assert.NilError(t, err)
	defer srv.Close()

	o := runner.Options{
		Target:  srv.URL,
		Timeout: 5 * time.Second,
		Rules:   []string{fault.Rule, "4.4"},
		Headers: http.Header{"X-Zeta": {"secret-1"}, "X-Alpha": {"secret-2"}},
	}
	started := time.Now()
	env, results, err := runner.Check(context.Background(), o)
	assert.NilError(t, err)
	var passing string
	for _, res := range results {
		if res.Outcome == runner.Pass {
			passing = res.Rule.ID
			break
		}
	}
	assert.Assert(t, passing != "", "some §4.4 rule passes on the reference runner")

	bl := baseline.Of(fault.Rule, passing)
	rep := report.Assemble(env, results, o, bl, report.Run{ToolVersion: "9.9.9", Started: started, Elapsed: time.Second, AllEvidence: true})
	assert.Check(t, strings.HasPrefix(rep.Target, srv.URL), rep.Target)
	assert.Equal(t, rep.ToolVersion, "9.9.9")
	assert.Equal(t, rep.Schemas, "embedded")
	assert.Equal(t, rep.Started, started)
	assert.Equal(t, rep.Elapsed, time.Second)
	assert.DeepEqual(t, rep.Options.Headers, []string{"X-Alpha", "X-Zeta"})
	assert.Check(t, rep.Options.AllEvidence)
	assert.Equal(t, rep.Options.Deadline, runner.DefaultDeadline(o.Timeout, false), "the default deadline, resolved")
	assert.Equal(t, len(rep.Results), len(results))
	assert.Equal(t, rep.Verdict.Declared, srv.Runner.Level())
	assert.Equal(t, rep.Verdict.Baselined, 1)
	assert.DeepEqual(t, rep.Baseline, map[string]bool{fault.Rule: true, passing: true})
	assert.Assert(t, is.Len(rep.Stale, 1))
	assert.Equal(t, rep.Stale[0].ID, passing)
	assert.Equal(t, rep.Counts().Baselined, 1)

	code, _ := rep.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitOK, "the fault is excused")
	code, msg := rep.Exit(report.Strictness{Baseline: true})
	assert.Equal(t, code, report.ExitBroken)
	assert.Check(t, is.Contains(msg, passing+" (now PASS)"))

	rep = report.Assemble(env, results, o, nil, report.Run{})
	code, msg = rep.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitBroken, "without the baseline, the fault fails the run")
	assert.Check(t, is.Contains(msg, fault.Rule))
	assert.Check(t, rep.Baseline == nil && rep.Stale == nil)

	o.Deadline = time.Minute
	rep = report.Assemble(nil, nil, o, nil, report.Run{})
	assert.Equal(t, rep.Options.Deadline, time.Minute)
	assert.Equal(t, rep.Target, srv.URL, "without an env, the target as given")
	assert.Equal(t, rep.Verdict.Declared, 0)
}
