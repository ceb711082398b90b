package entitlement_test

// The harness's proof, walked against the bundled reference runner with
// its real entitlement client, in process, on a fake clock shared by the
// harness, its distributor and the runner, so a window of seconds passes
// at once:
//   - the conformant runner walks with zero FAIL;
//   - every entitlement fault makes the rule it names FAIL (WARN for a
//     SHOULD or an inferred rule), its Also rules FAIL or WARN, and no
//     other rule's outcome changes;
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

func walk(t testing.TB, faults ...string) map[string]entitlement.Result {
	t.Helper()
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	_, results, err := entitlement.Walk(context.Background(), entitlement.Options{Launcher: inProcess(c, faults...), Clock: c,
		Timeout: 2 * time.Second, CheckGrace: 50 * time.Millisecond})
	assert.NilError(t, err)
	out := map[string]entitlement.Result{}
	for _, r := range results {
		out[r.Rule.ID] = r
	}
	return out
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
)

func baseline(t *testing.T) map[string]entitlement.Result {
	baseOnce.Do(func() { base = walk(t) })
	return base
}

func TestTheReferenceRunnerWalksClean(t *testing.T) {
	for _, r := range baseline(t) {
		if r.Outcome == engine.Fail || r.Outcome == engine.Error {
			t.Errorf("conformant walk: %s", describe(r))
		}
		if r.Outcome == engine.Skip {
			t.Logf("skipped: %s", describe(r))
		}
	}
}

func TestEachEntitlementFaultIsCaughtByItsRule(t *testing.T) {
	for _, f := range fixtures.EntitlementFaults() {
		t.Run(f.Name, func(t *testing.T) {
			rule := entitlement.Lookup(f.Rule)
			assert.Assert(t, rule != nil, "fault %s names no harness rule %s", f.Name, f.Rule)
			b := baseline(t)
			t.Parallel()
			got := walk(t, f.Name)
			if r := got[f.Rule]; r.Outcome != rule.Strength() {
				t.Errorf("fault %s: want %s on %s, got %s", f.Name, rule.Strength(), f.Rule, describe(r))
			}
			also := map[string]bool{}
			for _, id := range f.Also {
				also[id] = true
				if r := got[id]; r.Outcome != engine.Fail && r.Outcome != engine.Warn {
					t.Errorf("fault %s lists %s as broken too, got %s", f.Name, id, describe(r))
				}
			}
			starved := map[string]bool{}
			for _, id := range f.Starves {
				starved[id] = true
			}
			for id, r := range got {
				if id == f.Rule || also[id] {
					continue
				}
				if (starved[id] || starved["*"]) && r.Outcome == engine.Skip {
					continue
				}
				if b[id].Outcome != r.Outcome {
					t.Errorf("fault %s also changed %s: %s → %s", f.Name, id, b[id].Outcome, describe(r))
				}
			}
		})
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
