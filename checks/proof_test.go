package checks_test

// The suite's proof, run against the bundled reference runner:
//   - every conformant posture, at every level, gives zero FAIL and starts
//     the agent zero times without --execute;
//   - every planted fault makes the rule it names FAIL (WARN for a SHOULD),
//     makes each rule it lists in Also FAIL or WARN, may leave the rules it
//     starves SKIP, and changes no other rule's outcome;
//   - every rule has a fault.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

type outcome struct {
	results    map[string]checks.Result
	executions int64
}

func checkFixture(t testing.TB, level int, posture string, execute bool, faults ...string) outcome {
	t.Helper()
	return checkRunner(t, fixtures.Config{Level: level, Posture: posture, Faults: faults}, execute)
}

// checkRunner checks the reference runner cfg describes, with the rules
// selected by rules (all where none).
func checkRunner(t testing.TB, cfg fixtures.Config, execute bool, rules ...string) outcome {
	t.Helper()
	srv, err := fixtures.Start(cfg, 0)
	assert.NilError(t, err)
	defer srv.Close()
	p := srv.Runner.Posture()
	o := checks.Options{Target: srv.URL, Timeout: 5 * time.Second, Patience: 400 * time.Millisecond, Execute: execute, Rules: rules}
	if len(p.Origins) > 0 {
		o.Origin = fixtures.AllowedOrigin
	}
	if p.Auth {
		o.Headers = http.Header{"Authorization": {"Bearer " + fixtures.AuthToken}}
	}
	_, results, err := checks.Check(context.Background(), o)
	assert.NilError(t, err)
	out := outcome{results: map[string]checks.Result{}, executions: srv.Runner.Executions()}
	for _, r := range results {
		out.results[r.Rule.ID] = r
	}
	return out
}

func describe(r checks.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Outcome, r.Rule.ID)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", firstLine(r.Reason))
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n      %s", f.Message)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func TestConformantPostures(t *testing.T) {
	for _, p := range fixtures.Postures() {
		for level := 1; level <= 3; level++ {
			p, level := p, level
			t.Run(fmt.Sprintf("%s/L%d", p.Name, level), func(t *testing.T) {
				t.Parallel()
				got := checkFixture(t, level, p.Name, false)
				for _, r := range got.results {
					if r.Outcome == checks.Fail || r.Outcome == checks.Error {
						t.Errorf("conformant posture: %s", describe(r))
					}
				}
				assert.Equal(t, got.executions, int64(0), "the agent ran without --execute")
				if p.AgentTime > 0 {
					return // a slow agent's --execute check is TestLifeOfARun's
				}

				got = checkFixture(t, level, p.Name, true)
				for _, r := range got.results {
					if r.Outcome == checks.Fail || r.Outcome == checks.Error {
						t.Errorf("conformant posture, --execute: %s", describe(r))
					}
				}
			})
		}
	}
}

var (
	baselineMu sync.Mutex
	baselines  = map[string]*baselineEntry{}
)

type baselineEntry struct {
	once sync.Once
	out  outcome
}

func baseline(t *testing.T, level int, posture string, execute bool) outcome {
	key := fmt.Sprintf("%s/%d/%v", posture, level, execute)
	baselineMu.Lock()
	e := baselines[key]
	if e == nil {
		e = &baselineEntry{}
		baselines[key] = e
	}
	baselineMu.Unlock()
	e.once.Do(func() { e.out = checkFixture(t, level, posture, execute) })
	return e.out
}

func TestEachFaultIsCaughtByItsRuleAlone(t *testing.T) {
	for _, f := range fixtures.Faults() {
		f := f
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			assert.Assert(t, checks.Lookup(f.Rule) != nil, "fault %s names no rule %s", f.Name, f.Rule)
			assert.NilError(t, faultDeclaration(f))
			level := f.Level
			if level == 0 {
				level = 3
			}
			base := baseline(t, level, f.Posture, f.Execute)
			got := checkFixture(t, level, f.Posture, f.Execute, f.Name)
			for _, problem := range faultProblems(f, base, got) {
				t.Error(problem)
			}
		})
	}
}

// faultProblems is what is wrong with a check of a runner carrying f (got)
// beside the same check of it without (base): f's rule must come out at
// its strength, each rule in Also FAIL or WARN, each rule f starves SKIP
// where it changed, and every other rule as in base.
func faultProblems(f fixtures.Fault, base, got outcome) []string {
	var out []string
	rule := checks.Lookup(f.Rule)
	if r := got.results[f.Rule]; r.Outcome != rule.Strength() {
		out = append(out, fmt.Sprintf("fault %s: want %s on %s, got %s", f.Name, rule.Strength(), f.Rule, describe(r)))
	}
	also := map[string]bool{}
	for _, id := range f.Also {
		also[id] = true
		if r := got.results[id]; r.Outcome != checks.Fail && r.Outcome != checks.Warn {
			out = append(out, fmt.Sprintf("fault %s lists %s as also broken (%s), got %s", f.Name, id, f.AlsoWhy, describe(r)))
		}
	}
	starved := map[string]bool{}
	for _, id := range f.Starves {
		starved[id] = true
	}
	for id, r := range got.results {
		if id == f.Rule || also[id] {
			continue
		}
		b := base.results[id]
		if (starved[id] || starved["*"]) && b.Outcome != r.Outcome {
			if r.Outcome != checks.Skip {
				out = append(out, fmt.Sprintf("fault %s should leave %s nothing to judge, got %s", f.Name, id, describe(r)))
			}
			continue
		}
		if b.Outcome != r.Outcome {
			out = append(out, fmt.Sprintf("fault %s also changed %s: %s → %s", f.Name, id, b.Outcome, describe(r)))
		}
	}
	return out
}

// faultDeclaration says what is wrong with how f declares the rules it
// touches, or nil: every rule it names must exist, a rule sits in one list
// at most, and Also comes with its reason.
func faultDeclaration(f fixtures.Fault) error {
	seen := map[string]string{f.Rule: "Rule"}
	for _, list := range []struct {
		name string
		ids  []string
	}{{"Also", f.Also}, {"Starves", f.Starves}} {
		for _, id := range list.ids {
			if id == "*" && list.name == "Starves" {
				continue
			}
			if checks.Lookup(id) == nil {
				return fmt.Errorf("fault %s: %s names no rule %s", f.Name, list.name, id)
			}
			if prev, dup := seen[id]; dup {
				return fmt.Errorf("fault %s: %s is in both %s and %s", f.Name, id, prev, list.name)
			}
			seen[id] = list.name
		}
	}
	if len(f.Also) > 0 && strings.TrimSpace(f.AlsoWhy) == "" {
		return fmt.Errorf("fault %s: Also lists %s but AlsoWhy does not say why the breach breaks them", f.Name, strings.Join(f.Also, ", "))
	}
	if len(f.Also) == 0 && f.AlsoWhy != "" {
		return fmt.Errorf("fault %s: AlsoWhy is set but Also lists no rule", f.Name)
	}
	return nil
}

// TestFaultDeclarationsAreChecked proves faultDeclaration refuses what it
// is there to refuse.
func TestFaultDeclarationsAreChecked(t *testing.T) {
	ok := fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Also: []string{"2.1/envelope"}, AlsoWhy: "one handler"}
	assert.NilError(t, faultDeclaration(ok))
	for _, c := range []struct {
		f    fixtures.Fault
		want string
	}{
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Also: []string{"9.9/no-such-rule"}, AlsoWhy: "why"}, "Also names no rule 9.9/no-such-rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Also: []string{"2.1/envelope"}}, "AlsoWhy does not say why"},
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", AlsoWhy: "why"}, "Also lists no rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Also: []string{"2.1/wrong-method"}, AlsoWhy: "why"}, "in both Rule and Also"},
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Also: []string{"2.1/envelope"}, AlsoWhy: "why", Starves: []string{"2.1/envelope"}}, "in both Also and Starves"},
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method", Starves: []string{"9.9/no-such-rule"}}, "Starves names no rule"},
	} {
		assert.ErrorContains(t, faultDeclaration(c.f), c.want)
	}
}

func TestEveryRuleHasAFault(t *testing.T) {
	faulted := map[string]bool{}
	names := map[string]bool{}
	for _, f := range append(fixtures.Faults(), fixtures.LifeFaults()...) {
		faulted[f.Rule] = true
		assert.Assert(t, !names[f.Name], "fault name %s used twice", f.Name)
		names[f.Name] = true
	}
	for _, r := range checks.All() {
		if !faulted[r.ID] {
			t.Errorf("rule %s has no planted fault: nothing proves it can fail", r.ID)
		}
	}
}

func TestRegistryIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range checks.All() {
		assert.NilError(t, checks.Validate(r))
		assert.Assert(t, !seen[r.ID], "duplicate rule ID %s", r.ID)
		seen[r.ID] = true
	}
}
