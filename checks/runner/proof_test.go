package runner_test

// The suite's proof, run against the bundled reference runner. It fails in
// both directions:
//   - every conformant posture, at every level and in both modes, gives
//     zero FAIL and zero ERROR, starts the agent zero times without
//     --execute, and skips no rule the same posture decides without
//     --execute (conformantProblems);
//   - every rule PASSes in some conformant posture, level and mode, but
//     the few listed in neverPasses, each with its reason
//     (TestEveryRulePassesSomewhere);
//   - every planted fault makes the rule it names FAIL (WARN for a SHOULD),
//     on the clause it names where the rule checks several things, makes
//     each rule it lists in Also FAIL or WARN, may leave the rules it
//     starves SKIP, and changes no other rule's outcome (faultProblems);
//   - every rule has a fault, and every clause of a rule has one
//     (TestEveryRuleHasAFault, TestEveryClauseHasAFault).
//
// The conformant checks are the faults' baselines: each is run once for
// the package (conformant), whichever test asks first, and its failure is
// reported by every test that reads it, each in its own name.

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

type outcome struct {
	results    map[string]runner.Result
	executions int64
}

// checkConfig checks the reference runner cfg describes, with the rules
// selected by rules (all where none). It reports through its error, never
// through a testing.T, so that it may run on any goroutine.
func checkConfig(cfg fixtures.Config, execute bool, rules ...string) (outcome, error) {
	srv, err := fixtures.Start(cfg, 0)
	if err != nil {
		return outcome{}, err
	}
	defer srv.Close()
	p := srv.Runner.Posture()
	// The default patience: only a would-be FAIL pays it, and the proof runs
	// some eighty checks at once under -race, where 400 ms proved too short
	// for the fixture to answer a withheld head now and then.
	// Each request's deadline is 5 s times what -race costs: a fixture in
	// this process answers at once, unless the machine is too busy to run
	// it, which is no breach.
	o := runner.Options{Target: srv.URL, Timeout: 5 * time.Second * pace.Slowdown(), Patience: runner.DefaultPatience, Execute: execute, Rules: rules}
	if !execute {
		// Its own deadline, for a loaded machine under -race, rather than
		// the default's 2 × Timeout + 5 s; with --execute the default's
		// ten minutes already is one.
		o.Deadline = pace.Budget{Work: 5 * time.Second}.Deadline()
	}
	if len(p.Origins) > 0 {
		o.Origin = fixtures.AllowedOrigin
	}
	if p.Auth {
		o.Headers = http.Header{"Authorization": {"Bearer " + fixtures.AuthToken}}
	}
	_, results, err := runner.Check(context.Background(), o)
	if err != nil {
		return outcome{}, err
	}
	out := outcome{results: map[string]runner.Result{}, executions: srv.Runner.Executions()}
	for _, r := range results {
		out.results[r.Rule.ID] = r
	}
	return out, nil
}

func describe(r runner.Result) string {
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

// runKey names one conformant check: a posture, the level its runner
// declares, and the mode.
type runKey struct {
	posture string
	level   int
	execute bool
	fault   string // "" for the conformant runner
}

func (k runKey) String() string {
	s := fmt.Sprintf("%s/L%d", k.posture, k.level)
	if k.execute {
		s += "/execute"
	}
	if k.fault != "" {
		s += "/" + k.fault
	}
	return s
}

// faultKey is the check that must catch f, and baseKey the conformant
// check it is compared with.
func faultKey(f fixtures.Fault) runKey {
	k := baseKey(f)
	k.fault = f.Name
	return k
}

func baseKey(f fixtures.Fault) runKey {
	k := runKey{posture: f.Posture, level: f.Level, execute: f.Execute}
	if k.posture == "" {
		k.posture = "default"
	}
	if k.level == 0 {
		k.level = 3
	}
	return k
}

// slow reports whether the posture's agent takes long enough to show the
// life of a run.
func slow(posture string) bool {
	p, err := fixtures.LookupPosture(posture)
	return err == nil && p.AgentTime > 0
}

// configFor is the runner of k, carrying faults and k's fault.
func configFor(k runKey, faults ...string) fixtures.Config {
	if k.fault != "" {
		faults = append(faults, k.fault)
	}
	if slow(k.posture) {
		return lifeConfig(k.level, k.posture, faults...)
	}
	return fixtures.Config{Level: k.level, Posture: k.posture, Faults: faults}
}

// conformantKeys is every conformant check the proof runs: every posture
// at every level without --execute, and with it at every level where a
// slow agent's runs can be started at all (Level 1 has no run verb).
func conformantKeys() []runKey {
	var keys []runKey
	for _, p := range fixtures.Postures() {
		for level := 1; level <= 3; level++ {
			keys = append(keys, runKey{posture: p.Name, level: level})
			if p.AgentTime == 0 || level >= 2 {
				keys = append(keys, runKey{posture: p.Name, level: level, execute: true})
			}
		}
	}
	return keys
}

// A check computed once for the package.
type shared struct {
	once sync.Once
	done chan struct{}
	out  outcome
	err  error
	took time.Duration
}

var (
	sharedMu sync.Mutex
	checked  = map[runKey]*shared{}
)

func entry(k runKey) *shared {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	e := checked[k]
	if e == nil {
		e = &shared{done: make(chan struct{})}
		checked[k] = e
	}
	return e
}

// warm starts the conformant checks of keys in the background, those not
// already started.
func warm(keys ...runKey) {
	for _, k := range keys {
		e := entry(k)
		go e.once.Do(func() {
			defer close(e.done)
			// A fast agent's check is bound by the processor: one per
			// core. A slow agent's mostly sleeps: as many as the machine
			// carries beside the other tests' cases.
			if slow(k.posture) {
				defer pace.Acquire(0)()
			} else {
				defer pace.AcquireCPU()()
			}
			start := time.Now()
			e.out, e.err = checkConfig(configFor(k), k.execute)
			e.took = time.Since(start)
		})
	}
}

// conformant is the check at k (of the conformant runner, unless k names
// a fault), shared by every test that reads it. Its error is each
// caller's to report, so that a baseline that could not be run is charged
// to no one test in particular.
func conformant(k runKey) (outcome, error) {
	warm(k)
	e := entry(k)
	<-e.done
	if e.err != nil {
		return outcome{}, fmt.Errorf("the check %s could not be run: %w", k, e.err)
	}
	return e.out, nil
}

// conformantProblems is what is wrong with the conformant check at k: a
// FAIL or an ERROR; the agent started without --execute; and, with
// --execute, an unexpected SKIP: a rule that PASSes in the same posture
// and level without --execute (its baseline) and SKIPs with it, where
// nothing the rule needs has gone.
func conformantProblems(k runKey, got outcome) []string {
	var out []string
	for _, id := range sortedIDs(got.results) {
		if r := got.results[id]; r.Outcome == runner.Fail || r.Outcome == runner.Error {
			out = append(out, fmt.Sprintf("conformant %s: %s", k, describe(r)))
		}
	}
	if !k.execute {
		if got.executions != 0 {
			out = append(out, fmt.Sprintf("conformant %s: the agent ran %d times without --execute", k, got.executions))
		}
		return out
	}
	base, err := conformant(runKey{posture: k.posture, level: k.level})
	if err != nil {
		return append(out, err.Error())
	}
	for _, id := range sortedIDs(got.results) {
		if r := got.results[id]; r.Outcome == runner.Skip && base.results[id].Outcome == runner.Pass {
			out = append(out, fmt.Sprintf("conformant %s: unexpected SKIP: %s PASSes without --execute in the same posture; got %s", k, id, describe(r)))
		}
	}
	return out
}

func sortedIDs(m map[string]runner.Result) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func TestConformantPostures(t *testing.T) {
	keys := conformantKeys()
	warm(keys...)
	for _, k := range keys {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			got, err := conformant(k)
			assert.NilError(t, err)
			t.Logf("checked in %s (shared with the faults of this posture)", entry(k).took.Round(time.Millisecond))
			for _, problem := range conformantProblems(k, got) {
				t.Error(problem)
			}
		})
	}
}

// neverPasses lists the rules no conformant posture, level or mode shows
// passing, each with the reason. TestEveryRulePassesSomewhere keeps it
// honest: a listed rule that passes somewhere must leave the list.
var neverPasses = map[string]string{}

// TestEveryRulePassesSomewhere proves every rule can PASS: a rule that
// SKIPs wherever it would pass, or an engine that turns a PASS into a
// SKIP, turns this red by the rule's name.
func TestEveryRulePassesSomewhere(t *testing.T) {
	t.Parallel()
	keys := conformantKeys()
	warm(keys...)
	passes := map[string][]string{}
	for _, k := range keys {
		got, err := conformant(k)
		if err != nil {
			t.Error(err)
			continue
		}
		for id, r := range got.results {
			if r.Outcome == runner.Pass {
				passes[id] = append(passes[id], k.String())
			}
		}
	}
	for _, r := range runner.All() {
		why, listed := neverPasses[r.ID]
		switch {
		case listed && len(passes[r.ID]) > 0:
			t.Errorf("%s is listed as never passing (%s), but it PASSes in %s: take it off the list", r.ID, why, strings.Join(passes[r.ID], ", "))
		case !listed && len(passes[r.ID]) == 0:
			t.Errorf("%s PASSes in no conformant posture, level or mode: nothing shows it can pass", r.ID)
		}
	}
	for id := range neverPasses {
		if runner.Lookup(id) == nil {
			t.Errorf("neverPasses names no rule %s", id)
		}
	}
}

// TestEachFaultIsCaughtByItsRuleAlone checks every fault of Faults() beside
// its posture's conformant check; TestLifeOfARun does the same for the
// faults in the life of a run.
func TestEachFaultIsCaughtByItsRuleAlone(t *testing.T) {
	proveFaults(t, fixtures.Faults())
}

// proveFaults runs each fault's check and its baseline in the background,
// then judges each in a subtest of its own.
func proveFaults(t *testing.T, faults []fixtures.Fault) {
	for _, f := range faults {
		warm(baseKey(f), faultKey(f))
	}
	for _, f := range faults {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			assert.NilError(t, faultDeclaration(f))
			base, err := conformant(baseKey(f))
			assert.NilError(t, err, "the baseline of fault %s", f.Name)
			got, err := conformant(faultKey(f))
			assert.NilError(t, err)
			for _, problem := range faultProblems(f, base, got) {
				t.Errorf("%s: %s", faultKey(f), problem)
			}
		})
	}
}

// faultProblems is what is wrong with a check of a runner carrying f (got)
// beside the same check of it without (base): f's rule must come out at
// its strength (on the clause f names, where it names one), each rule in
// Also FAIL or WARN, each rule f starves SKIP where it changed, and every
// other rule as in base.
func faultProblems(f fixtures.Fault, base, got outcome) []string {
	var out []string
	want := runner.Breach(f.Rule, f.Clause)
	r := got.results[f.Rule]
	if f.Clause != "" {
		c, ok := clauseOf(f.Rule, f.Clause)
		if !ok {
			return append(out, fmt.Sprintf("fault %s names no clause %q of %s", f.Name, f.Clause, f.Rule))
		}
		if !shows(r, c) {
			out = append(out, fmt.Sprintf("fault %s breaks clause %q of %s, and no finding shows it (%q); got %s", f.Name, c.Name, f.Rule, c.Mark, describe(r)))
		}
	}
	if r.Outcome != want {
		out = append(out, fmt.Sprintf("fault %s: want %s on %s, got %s", f.Name, want, f.Rule, describe(r)))
	}
	also := map[string]bool{}
	for _, id := range f.Also {
		also[id] = true
		if r := got.results[id]; r.Outcome != runner.Fail && r.Outcome != runner.Warn {
			out = append(out, fmt.Sprintf("fault %s lists %s as also broken (%s), got %s", f.Name, id, f.AlsoWhy, describe(r)))
		}
	}
	starved, fed := map[string]bool{}, map[string]bool{}
	for _, id := range f.Starves {
		starved[id] = true
	}
	for _, id := range f.Feeds {
		fed[id] = true
	}
	for _, id := range sortedIDs(got.results) {
		r := got.results[id]
		if id == f.Rule || also[id] {
			continue
		}
		b := base.results[id]
		if fed[id] && b.Outcome != r.Outcome {
			if b.Outcome != runner.Skip || r.Outcome != runner.Pass {
				out = append(out, fmt.Sprintf("fault %s should give %s something to pass, from SKIP; got %s → %s", f.Name, id, b.Outcome, describe(r)))
			}
			continue
		}
		if (starved[id] || starved["*"]) && b.Outcome != r.Outcome {
			if r.Outcome != runner.Skip {
				out = append(out, fmt.Sprintf("fault %s should leave %s nothing to judge, got %s", f.Name, id, describe(r)))
			}
			continue
		}
		if loadBound[id] != "" && passOrSkip(b.Outcome) && passOrSkip(r.Outcome) {
			continue
		}
		if b.Outcome != r.Outcome {
			out = append(out, fmt.Sprintf("fault %s also changed %s: %s → %s", f.Name, id, b.Outcome, describe(r)))
		}
	}
	return out
}

// loadBound are the rules whose outcome on a conforming runner moves
// between PASS and SKIP with the machine's load, and why: a fault's check
// and its baseline are two checks, each at the load of its moment, so
// between them such a rule may PASS in one and SKIP in the other. It may
// still never FAIL, WARN or ERROR where its baseline did not.
var loadBound = map[string]string{
	"4.5/concurrency-limit": "runs started at once overlap, or, on a loaded machine, one finishes before the next starts and nothing shows the limit (not applicable)",
}

func passOrSkip(o runner.Outcome) bool { return o == runner.Pass || o == runner.Skip }

// clauseOf finds the clause of rule id named name.
func clauseOf(id, name string) (runner.Clause, bool) {
	for _, c := range runner.Clauses(id) {
		if c.Name == name {
			return c, true
		}
	}
	return runner.Clause{}, false
}

// shows reports whether one of r's findings is clause c breaking.
func shows(r runner.Result, c runner.Clause) bool {
	for _, f := range r.Findings {
		if strings.Contains(f.Message, c.Mark) {
			return true
		}
	}
	return false
}

// faultDeclaration says what is wrong with how f declares the rules it
// touches, or nil (fixtures.Fault.Declaration, against this registry and
// its clauses).
func faultDeclaration(f fixtures.Fault) error {
	return f.Declaration(func(id string) bool { return runner.Lookup(id) != nil }, func(id string) []string {
		var names []string
		for _, c := range runner.Clauses(id) {
			names = append(names, c.Name)
		}
		return names
	})
}

// TestFaultDeclarationsAreChecked proves faultDeclaration refuses what it
// is there to refuse.
func TestFaultDeclarationsAreChecked(t *testing.T) {
	ok := fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Also: []string{"2.1/envelope"}, AlsoWhy: "one handler"}
	assert.NilError(t, faultDeclaration(ok))
	assert.NilError(t, faultDeclaration(fixtures.Fault{Name: "x", Rule: "4.3/framing", Clause: "utf-8"}))
	for _, c := range []struct {
		f    fixtures.Fault
		want string
	}{
		{fixtures.Fault{Name: "x", Rule: "9.9/no-such-rule"}, "names no rule 9.9/no-such-rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Also: []string{"9.9/no-such-rule"}, AlsoWhy: "why"}, "Also names no rule 9.9/no-such-rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Also: []string{"2.1/envelope"}}, "AlsoWhy does not say why"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", AlsoWhy: "why"}, "Also lists no rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Also: []string{"2.1/unknown-path"}, AlsoWhy: "why"}, "in both Rule and Also"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Also: []string{"2.1/envelope"}, AlsoWhy: "why", Starves: []string{"2.1/envelope"}}, "in both Also and Starves"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Starves: []string{"9.9/no-such-rule"}}, "Starves names no rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Feeds: []string{"9.9/no-such-rule"}}, "Feeds names no rule"},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Starves: []string{"2.1/envelope"}, Feeds: []string{"2.1/envelope"}}, "in both Starves and Feeds"},
		{fixtures.Fault{Name: "x", Rule: "4.3/framing"}, "names none of them"},
		{fixtures.Fault{Name: "x", Rule: "4.3/framing", Clause: "no-such-clause"}, `has no clause "no-such-clause"`},
		{fixtures.Fault{Name: "x", Rule: "2.1/unknown-path", Clause: "utf-8"}, `has no clause "utf-8"`},
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
	for _, r := range runner.All() {
		if !faulted[r.ID] {
			t.Errorf("rule %s has no planted fault: nothing proves it can fail", r.ID)
		}
	}
}

// TestEveryClauseHasAFault lists the clauses of every rule that checks
// several things, and the fault that breaks each: a clause no fault breaks
// is a check nothing proves, which could be removed unnoticed.
func TestEveryClauseHasAFault(t *testing.T) {
	byClause := map[string][]string{}
	for _, f := range append(fixtures.Faults(), fixtures.LifeFaults()...) {
		if f.Clause != "" {
			byClause[f.Rule+" "+f.Clause] = append(byClause[f.Rule+" "+f.Clause], f.Name)
		}
	}
	for _, id := range runner.ClausedRules() {
		assert.Assert(t, runner.Lookup(id) != nil, "clauses are declared for no rule %s", id)
		names := map[string]bool{}
		for _, c := range runner.Clauses(id) {
			assert.Assert(t, !names[c.Name], "%s declares clause %q twice", id, c.Name)
			names[c.Name] = true
			assert.Assert(t, c.Mark != "" && c.What != "", "%s clause %q says what it checks and how its finding reads", id, c.Name)
			faults := byClause[id+" "+c.Name]
			if len(faults) == 0 {
				t.Errorf("%s clause %q (%s) has no fault: nothing proves it can fail", id, c.Name, c.What)
				continue
			}
			t.Logf("%s %-14s %s", id, c.Name, strings.Join(faults, ", "))
		}
	}
}

func TestRegistryIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range runner.All() {
		assert.NilError(t, runner.Validate(r))
		assert.Assert(t, !seen[r.ID], "duplicate rule ID %s", r.ID)
		seen[r.ID] = true
	}
}
