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
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
)

// variant is how the reference runner is configured for a walk: its
// posture (inbound-auth requires the credential the walk then sends) and
// whether it refuses within grace.
type variant struct {
	posture  string
	cautious bool
}

// inProcess launches the reference runner in this process, on the fake
// clock c: its checks time out in 200 ms of real time (a Hang).
func inProcess(c clock.Clock, v variant, faults ...string) entitlement.Launcher {
	return inProcessWith(c, 200*time.Millisecond, v, faults...)
}

// inProcessWith is inProcess with the runner's own timeout for a check (0:
// the runner's default).
func inProcessWith(c clock.Clock, checkTimeout time.Duration, v variant, faults ...string) entitlement.Launcher {
	return entitlement.Func(func(_ context.Context, vars entitlement.Vars) (entitlement.Instance, error) {
		srv, err := fixtures.Start(fixtures.Config{Posture: v.posture, Faults: faults, Distributor: vars.Distributor, Token: vars.Token,
			Cache: filepath.Join(vars.State, "cache.json"), Clock: c, DistributorTimeout: checkTimeout, Cautious: v.cautious}, 0)
		if err != nil {
			return nil, err
		}
		halt := func() {
			srv.Close()
			executed.Add(srv.Runner.Executions())
		}
		return entitlement.Started{Addr: srv.URL, Halt: halt}, nil
	})
}

// executed counts the agent starts of every runner a walk in this package
// launched: nothing in a walk runs the agent (TestWalksStartNoAgent).
var executed atomic.Int64

// No walk starts the agent: every run and stream a step sends carries a
// body no runner can execute. Checked over every walk the package made
// before this test, and the conformant ones it waits for.
func TestWalksStartNoAgent(t *testing.T) {
	for _, v := range conformant {
		baselineOf(t, v)
	}
	assert.Equal(t, executed.Load(), int64(0), "agent starts in the package's walks")
}

// walkAs walks the reference runner, configured as v, carrying faults. It
// reports through its error, never through a testing.T, so that a shared
// baseline can be computed on behalf of every test that reads it.
func walkAs(v variant, faults ...string) (map[string]entitlement.Result, error) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	// The fake clock moves the windows; the runner's requests and its
	// first check still take real time, which a loaded machine under -race
	// stretches: 2 s and 50 ms of it, scaled by pace (at 50 ms itself, a
	// baseline walk once left 5.7.4/404-revokes-at-once undecided, and
	// every fault's walk of that posture "changed" it).
	o := entitlement.Options{Launcher: inProcess(c, v, faults...), Clock: c,
		Timeout: 2 * time.Second * pace.Slowdown(), CheckGrace: pace.Budget{Work: 50 * time.Millisecond}.Deadline()}
	if p, err := fixtures.LookupPosture(v.posture); err == nil && p.Auth {
		o.Headers = http.Header{"Authorization": {"Bearer " + fixtures.AuthToken}}
	}
	_, results, err := entitlement.Walk(context.Background(), o)
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

// baseWalk is one variant's conformant walk, walked once.
type baseWalk struct {
	once sync.Once
	got  map[string]entitlement.Result
	err  error
}

var (
	baseMu sync.Mutex
	base   = map[variant]*baseWalk{}
)

// baselineOf is the conformant walk of a variant, shared by every test that
// reads it; its error is each reader's to report.
func baselineOf(t *testing.T, v variant) map[string]entitlement.Result {
	t.Helper()
	baseMu.Lock()
	b := base[v]
	if b == nil {
		b = &baseWalk{}
		base[v] = b
	}
	baseMu.Unlock()
	b.once.Do(func() { b.got, b.err = walkAs(v) })
	assert.NilError(t, b.err, "the conformant walk of %+v", v)
	return b.got
}

// The conformant variants: as shipped; cautious, refusing within grace
// (a MAY, §5.7.1) with the checked_at it holds; requiring its own inbound
// credential (§7), which the walk sends as --header does; and each of the
// entitlement client's postures (fixtures.EntitlementPostures: asking
// again early, holding nothing at start, spacing its attempts).
var conformant = append([]variant{{}, {cautious: true}, {posture: "inbound-auth"}}, entitlementPostures()...)

func entitlementPostures() []variant {
	var out []variant
	for _, p := range fixtures.EntitlementPostures() {
		out = append(out, variant{posture: p.Name})
	}
	return out
}

// neverPasses lists the walk's rules no conformant variant shows passing,
// each with the reason; TestEveryHarnessRulePassesSomewhere keeps it honest
// both ways.
var neverPasses = map[string]string{}

func TestTheReferenceRunnerWalksClean(t *testing.T) {
	for _, v := range conformant {
		t.Run(fmt.Sprintf("%+v", v), func(t *testing.T) {
			got := baselineOf(t, v)
			for _, r := range entitlement.All() {
				res, ok := got[r.ID]
				switch {
				case !ok:
					t.Errorf("the conformant walk has no result for %s", r.ID)
				case res.Outcome == engine.Fail || res.Outcome == engine.Error:
					t.Errorf("conformant walk: %s", describe(res))
				case res.Outcome == engine.Skip:
					t.Logf("skipped: %s", describe(res))
				}
			}
		})
	}
}

// Every rule is decided somewhere: each PASSes in some conformant variant,
// unless neverPasses says why not.
func TestEveryHarnessRulePassesSomewhere(t *testing.T) {
	for _, r := range entitlement.All() {
		passed := false
		for _, v := range conformant {
			passed = passed || baselineOf(t, v)[r.ID].Outcome == engine.Pass
		}
		why, listed := neverPasses[r.ID]
		switch {
		case listed && passed:
			t.Errorf("%s is listed as never passing (%s), and it PASSes: take it off the list", r.ID, why)
		case !listed && !passed:
			t.Errorf("harness rule %s passes in no conformant variant: nothing shows the rule can pass", r.ID)
		}
	}
	for id := range neverPasses {
		if entitlement.Lookup(id) == nil {
			t.Errorf("neverPasses names no rule %s", id)
		}
	}
}

// A runner that refuses within grace (allowed) and, while it refuses,
// reports unknown without the checked_at it holds fails one rule, the one
// that judges the shape of unknown within grace, and says what a client
// loses; the same runner carrying checked_at passes it.
func TestRefusingWithinGraceWithoutCheckedAtIsOneFinding(t *testing.T) {
	const rule = "5.7.1/unknown-within-grace"
	clean := baselineOf(t, variant{cautious: true})[rule]
	assert.Equal(t, clean.Outcome, engine.Pass, describe(clean))
	assert.Assert(t, strings.Contains(strings.Join(clean.Notes, "\n"), "503 unavailable: allowed"), clean.Notes)

	var failed []string
	for id, r := range mustWalk(t, variant{cautious: true}, "ent-grace-drops-checked-at") {
		if r.Outcome == engine.Fail {
			failed = append(failed, id)
			assert.Assert(t, strings.Contains(r.Findings[0].Message, "never checked"), describe(r))
		}
	}
	assert.DeepEqual(t, failed, []string{rule})
}

func mustWalk(t *testing.T, v variant, faults ...string) map[string]entitlement.Result {
	t.Helper()
	got, err := walkAs(v, faults...)
	assert.NilError(t, err)
	return got
}

func known(id string) bool { return entitlement.Lookup(id) != nil }

func noClauses(string) []string { return nil }

func TestEachEntitlementFaultIsCaughtByItsRule(t *testing.T) {
	for _, f := range fixtures.EntitlementFaults() {
		t.Run(f.Name, func(t *testing.T) {
			assert.NilError(t, f.Declaration(known, noClauses))
			rule := entitlement.Lookup(f.Rule)
			v := variant{posture: f.Posture}
			b := baselineOf(t, v)
			t.Parallel()
			got := mustWalk(t, v, f.Name)
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
