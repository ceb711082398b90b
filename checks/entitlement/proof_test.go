package entitlement_test

// The harness's proof, walked against the bundled reference runner with
// its real entitlement client, in process, on a fake clock shared by the
// harness, its distributor and the runner, so a window of seconds passes
// at once:
//   - the conformant runner walks with zero FAIL, and every rule PASSes
//     but those listed in neverPasses, each with its reason;
//   - every entitlement fault makes the rule it names FAIL (WARN for a
//     SHOULD or an inferred rule), its Also rules FAIL or WARN, and no
//     other rule's outcome changes, and every fault declares what it
//     touches in rules that exist (fixtures.Fault.Declaration);
//   - every rule has a fault.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
)

// inProcess launches the reference runner in this process.
func inProcess(c clock.Clock, faults ...string) entitlement.Launcher {
	return entitlement.Func(func(_ context.Context, v entitlement.Vars) (entitlement.Instance, error) {
		srv, err := fixtures.Start(fixtures.Config{Faults: faults, Distributor: v.Distributor, Token: v.Token,
			Cache: filepath.Join(v.State, "cache.json"), Clock: c, DistributorTimeout: 200 * time.Millisecond}, 0)
		if err != nil {
			return nil, err
		}
		return entitlement.Started{Addr: srv.URL, Halt: srv.Close}, nil
	})
}

// walk walks the reference runner carrying faults. It reports through its
// error, never through a testing.T, so that the shared baseline can be
// computed on behalf of every test that reads it.
func walk(faults ...string) (map[string]entitlement.Result, error) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	_, results, err := entitlement.Walk(context.Background(), entitlement.Options{Launcher: inProcess(c, faults...), Clock: c,
		Timeout: 2 * time.Second, CheckGrace: 50 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	out := map[string]entitlement.Result{}
	for _, r := range results {
		out[r.Rule.ID] = r
	}
	return out, nil
}

func describe(r entitlement.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Outcome, r.Rule.ID)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", strings.SplitN(r.Reason, "\n", 2)[0])
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n      %s", f.Message)
	}
	return b.String()
}

var (
	baseOnce sync.Once
	base     map[string]entitlement.Result
	baseErr  error
)

// baseline is the conformant walk, shared by every test that reads it; its
// error is each reader's to report.
func baseline(t *testing.T) map[string]entitlement.Result {
	t.Helper()
	baseOnce.Do(func() { base, baseErr = walk() })
	assert.NilError(t, baseErr, "the conformant walk")
	return base
}

// neverPasses lists the walk's rules the conformant walk does not show
// passing, each with the reason; TestTheReferenceRunnerWalksClean keeps
// it honest both ways.
var neverPasses = map[string]string{}

func TestTheReferenceRunnerWalksClean(t *testing.T) {
	got := baseline(t)
	for _, r := range entitlement.All() {
		res, ok := got[r.ID]
		why, listed := neverPasses[r.ID]
		switch {
		case !ok:
			t.Errorf("the conformant walk has no result for %s", r.ID)
		case res.Outcome == engine.Fail || res.Outcome == engine.Error:
			t.Errorf("conformant walk: %s", describe(res))
		case listed && res.Outcome == engine.Pass:
			t.Errorf("%s is listed as never passing (%s), and it PASSes: take it off the list", r.ID, why)
		case !listed && res.Outcome != engine.Pass:
			t.Errorf("conformant walk: unexpected %s: nothing shows the rule can pass", describe(res))
		}
	}
	for id := range neverPasses {
		if entitlement.Lookup(id) == nil {
			t.Errorf("neverPasses names no rule %s", id)
		}
	}
}

func known(id string) bool { return entitlement.Lookup(id) != nil }

func noClauses(string) []string { return nil }

func TestEachEntitlementFaultIsCaughtByItsRule(t *testing.T) {
	for _, f := range fixtures.EntitlementFaults() {
		t.Run(f.Name, func(t *testing.T) {
			assert.NilError(t, f.Declaration(known, noClauses))
			rule := entitlement.Lookup(f.Rule)
			b := baseline(t)
			t.Parallel()
			got, err := walk(f.Name)
			assert.NilError(t, err)
			if r := got[f.Rule]; r.Outcome != rule.Strength() {
				t.Errorf("fault %s: want %s on %s, got %s", f.Name, rule.Strength(), f.Rule, describe(r))
			}
			also := map[string]bool{}
			for _, id := range f.Also {
				also[id] = true
				if r := got[id]; r.Outcome != engine.Fail && r.Outcome != engine.Warn {
					t.Errorf("fault %s lists %s as broken too (%s), got %s", f.Name, id, f.AlsoWhy, describe(r))
				}
			}
			starved := map[string]bool{}
			for _, id := range f.Starves {
				starved[id] = true
			}
			for id, r := range got {
				if id == f.Rule || also[id] || b[id].Outcome == r.Outcome {
					continue
				}
				if starved[id] || starved["*"] {
					if r.Outcome != engine.Skip {
						t.Errorf("fault %s should leave %s nothing to judge, got %s", f.Name, id, describe(r))
					}
					continue
				}
				t.Errorf("fault %s also changed %s: %s → %s", f.Name, id, b[id].Outcome, describe(r))
			}
		})
	}
}

// TestEntitlementFaultDeclarationsAreChecked proves the declarations are
// validated against the walk's registry.
func TestEntitlementFaultDeclarationsAreChecked(t *testing.T) {
	id := entitlement.All()[0].ID
	other := entitlement.All()[1].ID
	assert.NilError(t, fixtures.Fault{Name: "x", Rule: id, Also: []string{other}, AlsoWhy: "why"}.Declaration(known, noClauses))
	for _, c := range []struct {
		f    fixtures.Fault
		want string
	}{
		{fixtures.Fault{Name: "x", Rule: "2.1/wrong-method"}, "names no rule 2.1/wrong-method"},
		{fixtures.Fault{Name: "x", Rule: id, Also: []string{"9.9/none"}, AlsoWhy: "why"}, "Also names no rule"},
		{fixtures.Fault{Name: "x", Rule: id, Also: []string{other}}, "AlsoWhy does not say why"},
		{fixtures.Fault{Name: "x", Rule: id, AlsoWhy: "why"}, "Also lists no rule"},
		{fixtures.Fault{Name: "x", Rule: id, Starves: []string{"9.9/none"}}, "Starves names no rule"},
		{fixtures.Fault{Name: "x", Rule: id, Also: []string{other}, AlsoWhy: "why", Starves: []string{other}}, "in both Also and Starves"},
		{fixtures.Fault{Name: "x", Rule: id, Starves: []string{id}}, "in both Rule and Starves"},
	} {
		assert.ErrorContains(t, c.f.Declaration(known, noClauses), c.want)
	}
}

func TestEveryHarnessRuleHasAFault(t *testing.T) {
	faulted := map[string]bool{}
	for _, f := range fixtures.EntitlementFaults() {
		faulted[f.Rule] = true
	}
	for _, r := range entitlement.All() {
		assert.NilError(t, r.Validate())
		if !faulted[r.ID] {
			t.Errorf("harness rule %s has no planted fault: nothing proves it can fail", r.ID)
		}
	}
}
