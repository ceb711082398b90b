package client_test

// The suite's proof for the client check, run against the reference
// client in process (fixtures/client). It fails in both directions:
//   - the reference client, as shipped, PASSes every rule (TestConformant);
//   - every planted fault makes the rule it names FAIL (WARN for a SHOULD,
//     or a clause that warns), on the clause it names, makes each rule it
//     lists in Also FAIL or WARN, and changes no other rule's outcome but
//     to SKIP, a rule being free to step aside for the one that judges
//     the breach (TestFaults);
//   - every rule has a fault, and every clause of a rule has one
//     (TestEveryRuleHasAFault, TestEveryClauseHasAFault).

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
)

// proofTimeout is each scenario's deadline in the proof: a conforming
// client finishes in milliseconds; the faults that hang are killed at it.
const proofTimeout = 10 * time.Second

// reference runs the reference client in process, with faults planted.
func reference(faults ...string) client.Func {
	return func(ctx context.Context, env map[string]string, out, errs io.Writer) int {
		return refclient.Main(ctx, env, out, errs, faults...)
	}
}

// check runs a full check of r. A scenario the client did not finish in
// time, other than those named in hangs, is a test error with that cause
// (a machine too loaded to run it), never a verdict.
func check(t *testing.T, r client.Runner, hangs ...string) map[string]client.Result {
	t.Helper()
	env, results, err := client.Check(context.Background(), client.Options{Runner: r, ClientTimeout: proofTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range env.Trials() {
		if tr.Process.Killed && !slices.Contains(hangs, tr.Scenario.Name) {
			t.Fatalf("scenario %s: the client missed its deadline of %s (the machine is too loaded to run the proof): not a verdict", tr.Scenario.Name, proofTimeout)
		}
	}
	out := map[string]client.Result{}
	for _, res := range results {
		out[res.Rule.ID] = res
	}
	return out
}

func describe(r client.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", r.Outcome, r.Rule.ID, r.Reason)
	for _, f := range r.Findings {
		b.WriteString("\n    " + strings.ReplaceAll(f.Message, "\n", "\n    "))
	}
	return b.String()
}

var (
	baseOnce sync.Once
	base     map[string]client.Result
)

func baseline(t *testing.T) map[string]client.Result {
	baseOnce.Do(func() { base = check(t, reference()) })
	if base == nil {
		t.Fatal("the conformant check failed")
	}
	return base
}

// TestConformant: the reference client PASSes every rule.
func TestConformant(t *testing.T) {
	got := baseline(t)
	for _, r := range client.All() {
		res, ok := got[r.ID]
		switch {
		case !ok:
			t.Errorf("%s: no result", r.ID)
		case res.Outcome != engine.Pass:
			t.Errorf("%s", describe(res))
		}
	}
}

// TestFaults: each planted fault is caught by its rule, on its clause, and
// by the rules it lists; no other rule changes but to SKIP.
func TestFaults(t *testing.T) {
	was := baseline(t)
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	for _, f := range refclient.Faults() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			got := check(t, reference(f.Name), client.Observes(f.Rule)...)
			r, ok := got[f.Rule]
			if !ok {
				t.Fatalf("fault %s names %s, which is no rule", f.Name, f.Rule)
			}
			want := client.Lookup(f.Rule).Strength()
			for _, c := range client.Clauses(f.Rule) {
				if c.Name == f.Clause && c.Warns {
					want = engine.Warn
				}
			}
			if r.Outcome != want {
				t.Errorf("fault %s: %s came out %s, want %s: %s", f.Name, f.Rule, r.Outcome, want, describe(r))
			}
			if f.Clause != "" {
				mark := ""
				for _, c := range client.Clauses(f.Rule) {
					if c.Name == f.Clause {
						mark = c.Mark
					}
				}
				if mark == "" {
					t.Errorf("fault %s names clause %q, which %s does not declare", f.Name, f.Clause, f.Rule)
				} else if !slices.ContainsFunc(r.Findings, func(fd engine.Finding) bool { return strings.Contains(fd.Message, mark) }) {
					t.Errorf("fault %s: %s's findings do not show clause %s (%q): %s", f.Name, f.Rule, f.Clause, mark, describe(r))
				}
			}
			for _, id := range f.Also {
				if res := got[id]; res.Outcome != engine.Fail && res.Outcome != engine.Warn {
					t.Errorf("fault %s: %s (Also) did not catch it: %s", f.Name, id, describe(res))
				}
			}
			for id, res := range got {
				if id == f.Rule || slices.Contains(f.Also, id) {
					continue
				}
				if res.Outcome != was[id].Outcome && res.Outcome != engine.Skip {
					t.Errorf("fault %s changed %s from %s: %s", f.Name, id, was[id].Outcome, describe(res))
				}
			}
		})
	}
}

func TestEveryRuleHasAFault(t *testing.T) {
	named := map[string]bool{}
	for _, f := range refclient.Faults() {
		named[f.Rule] = true
	}
	for _, r := range client.All() {
		if !named[r.ID] {
			t.Errorf("no planted fault names %s", r.ID)
		}
	}
}

func TestEveryClauseHasAFault(t *testing.T) {
	for _, id := range client.ClausedRules() {
		if client.Lookup(id) == nil {
			t.Errorf("clauses are declared for %s, which is no rule", id)
		}
		for _, c := range client.Clauses(id) {
			if !slices.ContainsFunc(refclient.Faults(), func(f refclient.Fault) bool { return f.Rule == id && f.Clause == c.Name }) {
				t.Errorf("%s: clause %s (%s) has no fault", id, c.Name, c.What)
			}
		}
	}
	for _, f := range refclient.Faults() {
		if f.Clause == "" && len(client.Clauses(f.Rule)) > 0 {
			t.Errorf("fault %s breaks %s, which has clauses, and names none", f.Name, f.Rule)
		}
		if len(f.Also) > 0 && f.AlsoWhy == "" {
			t.Errorf("fault %s lists Also without saying why", f.Name)
		}
	}
}
