package posterntest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
)

// Run checks the runner at target as the command does, and reports each
// selected rule as a subtest of t: t.Run(section), and beneath it
// t.Run(the rule's name), so the subtest of 4.2/run-id-unique is
// t.Name()+"/4.2/run-id-unique".
//
// target is the runner's origin as a string ("http://127.0.0.1:8787") or a
// *url.URL, an *httptest.Server, or an http.Handler, which Run serves on
// an httptest.Server closed when t's cleanup runs. Anything else is a
// t.Fatal.
//
// In each rule's subtest, a FAIL is a t.Error carrying the finding and its
// evidence (the request and the answer, as the text report draws them); a
// WARN is a t.Log (a t.Error under Strict); a SKIP is a t.Skip with its
// reason; a FAIL the baseline excuses is logged as a known failure; a rule
// the checker could not evaluate (ERROR) is a t.Error; a PASS logs its
// line, which go test shows under -v. Where the command would exit
// non-zero, t also fails with the command's message. A runner that cannot
// be checked at all (unreachable, not a runner) is a t.Fatal.
func Run(t *testing.T, target any, opts ...Option) {
	t.Helper()
	runCheck(std{t}, target, opts)
}

// RunEntitlement walks a runner through §5 as `postern-conformance
// entitlement` does: the checker plays its distributor, and launcher
// starts a runner of its own for each step of the walk, given the
// distributor's URL, a fresh token and a state directory
// (entitlement.Vars). Each step is reported as a subtest of t, as Run
// reports rules.
//
// launcher is an entitlement.Command (a command line, as --launch gives
// it), an entitlement.Func, or LaunchHandler's, which serves an
// http.Handler in process. Origin, Execute, Header and Patience do not
// apply to a walk; Window, Grace and Clock apply only to one.
func RunEntitlement(t *testing.T, launcher entitlement.Launcher, opts ...Option) {
	t.Helper()
	runWalk(std{t}, launcher, opts)
}

// Check runs the same check as Run, outside a test: it returns the report
// the command would write (report.WriteText and the other writers render
// it; Report.Exit is the command's exit status), or an error where the
// runner could not be checked at all. A handler target is served for the
// duration of the call.
func Check(ctx context.Context, target any, opts ...Option) (*report.Report, error) {
	c, err := gather("Check", walkOnly, opts)
	if err != nil {
		return nil, err
	}
	base, stop, err := serve(target)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stop() }()
	s, err := checkSuite(c, base)
	if err != nil {
		return nil, err
	}
	return s.check(ctx, s.rules)
}

// tester is what Run drives: a *testing.T (std), or in this package's own
// tests a recorder, which lets them see what a failing runner produces
// without failing themselves. Skip and Fatal end the calling goroutine, as
// testing.T's do.
type tester interface {
	Helper()
	Name() string
	Context() context.Context
	Cleanup(func())
	Log(args ...any)
	Error(args ...any)
	Skip(args ...any)
	Fatal(args ...any)
	run(name string, f func(tester)) bool
}

type std struct{ *testing.T }

// run is t.Run. Every frame between a rule's verdict and the caller of
// Run is a helper, so go test shows each message at the line of the
// caller's own test that called Run.
func (s std) run(name string, f func(tester)) bool {
	s.T.Helper()
	return s.T.Run(name, func(t *testing.T) { t.Helper(); f(std{t}) })
}

// ruleRef is a rule of a mode's registry, as the subtests name it.
type ruleRef struct{ ID, Section string }

// Name is the rule's subtest, under its section's: the ID after the
// section and its slash.
func (r ruleRef) Name() string { return strings.TrimPrefix(r.ID, r.Section+"/") }

// suite is one mode, ready to check: its rules as the options select
// them, and the call that checks some of them and assembles the report.
type suite struct {
	mode  string
	rules []ruleRef
	bl    *baseline.Baseline
	check func(ctx context.Context, rules []ruleRef) (*report.Report, error)
}

func runCheck(t tester, target any, opts []Option) {
	t.Helper()
	c, err := gather("Run", walkOnly, opts)
	if err != nil {
		t.Fatal(err)
		return
	}
	base, stop, err := serve(target)
	if err != nil {
		t.Fatal(err)
		return
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Log("posterntest: " + err.Error())
		}
	})
	s, err := checkSuite(c, base)
	if err != nil {
		t.Fatal(err)
		return
	}
	drive(t, s, c)
}

func runWalk(t tester, launcher entitlement.Launcher, opts []Option) {
	t.Helper()
	c, err := gather("RunEntitlement", checkOnly, opts)
	if err != nil {
		t.Fatal(err)
		return
	}
	s, err := walkSuite(c, launcher)
	if err != nil {
		t.Fatal(err)
		return
	}
	drive(t, s, c)
}

// checkSuite is the runner check (runner.Check) of the runner at base.
func checkSuite(c *config, base string) (*suite, error) {
	bl, err := c.baseline()
	if err != nil {
		return nil, err
	}
	rules, err := selectRules(runner.All(), c.rules, "`postern-conformance list` shows the IDs")
	if err != nil {
		return nil, err
	}
	s := &suite{mode: "Run", rules: rules, bl: bl}
	s.check = func(ctx context.Context, sel []ruleRef) (*report.Report, error) {
		o := runner.Options{Target: base, Origin: c.origin, Execute: c.execute, MaxRuns: c.maxRuns, Timeout: c.timeout,
			Patience: c.patience, Deadline: c.deadline, Headers: c.headers.Clone(), Rules: s.patterns(c, sel)}
		started := time.Now()
		env, results, err := runner.Check(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("posterntest: %w", err)
		}
		return report.Assemble(env, results, o, bl, report.Run{Started: started, Elapsed: time.Since(started)}), nil
	}
	return s, nil
}

// walkSuite is the entitlement walk (entitlement.Walk) of the runners
// launcher starts.
func walkSuite(c *config, launcher entitlement.Launcher) (*suite, error) {
	if launcher == nil {
		return nil, fmt.Errorf("posterntest.RunEntitlement: no launcher: give an entitlement.Command, an entitlement.Func or a LaunchHandler")
	}
	bl, err := c.baseline()
	if err != nil {
		return nil, err
	}
	rules, err := selectRules(entitlement.All(), c.rules, "`postern-conformance list --entitlement` shows the IDs")
	if err != nil {
		return nil, err
	}
	s := &suite{mode: "RunEntitlement", rules: rules, bl: bl}
	s.check = func(ctx context.Context, sel []ruleRef) (*report.Report, error) {
		o := entitlement.Options{Launcher: launcher, Window: c.window, Grace: c.grace, Timeout: c.timeout,
			Deadline: c.deadline, Rules: s.patterns(c, sel), Clock: c.clock}
		started := time.Now()
		_, results, err := entitlement.Walk(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("posterntest: %w", err)
		}
		return walkReport(results, o, bl, report.Run{Started: started, Elapsed: time.Since(started)}), nil
	}
	return s, nil
}

// selectRules is the rules of a registry the Rules option's patterns
// select (engine.Select, as runner.Select and --rule use it); a pattern
// that selects nothing is an error, as it is for --rule.
func selectRules[E any](all []*engine.Rule[E], patterns []string, list string) ([]ruleRef, error) {
	for _, p := range patterns {
		if len(engine.Select(all, []string{p})) == 0 {
			return nil, fmt.Errorf("posterntest.Rules(%q) matches no rule; %s", p, list)
		}
	}
	var out []ruleRef
	for _, r := range engine.Select(all, patterns) {
		out = append(out, ruleRef{r.ID, r.Section})
	}
	return out, nil
}

// patterns is what the engine is asked to select: the Rules option's
// patterns where every rule they select is checked, else each rule's ID.
func (s *suite) patterns(c *config, sel []ruleRef) []string {
	if len(sel) == len(s.rules) {
		return c.rules
	}
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.ID
	}
	return ids
}

// drive checks the rules go test selects, then reports each as a subtest.
func drive(t tester, s *suite, c *config) {
	t.Helper()
	var selected []ruleRef
	for _, r := range s.rules {
		if goTestSelects(t.Name() + "/" + r.Section + "/" + r.Name()) {
			selected = append(selected, r)
		}
	}
	var rep *report.Report
	if len(selected) > 0 {
		var err error
		if rep, err = s.check(t.Context(), selected); err != nil {
			t.Fatal(err)
			return
		}
	}
	type decided struct {
		rep *report.Report
		res engine.Record
	}
	byID := map[string]decided{}
	if rep != nil {
		for _, res := range rep.Results {
			if res.Rule.ID != "" {
				byID[res.Rule.ID] = decided{rep, res}
			}
		}
	}
	style := report.Style{Verbose: verbose()}
	var mu sync.Mutex
	var shown []engine.Record
	sections, by := bySection(s.rules)
	for _, sec := range sections {
		t.run(sec, func(st tester) {
			st.Helper()
			for _, r := range by[sec] {
				st.run(r.Name(), func(rt tester) {
					rt.Helper()
					d, ok := byID[r.ID]
					if !ok {
						// go test runs a subtest goTestSelects said it
						// would not: check its rule on its own.
						one, err := s.check(rt.Context(), []ruleRef{r})
						if err != nil {
							rt.Fatal(err)
							return
						}
						d = decided{one, one.Results[0]}
						mu.Lock()
						if rep == nil {
							rep = one
						}
						mu.Unlock()
					}
					mu.Lock()
					shown = append(shown, d.res)
					mu.Unlock()
					verdict(rt, d.rep, d.res, c.strict, style)
				})
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if rep != nil {
		summarize(t, rep, shown, s.bl, c.strict)
	}
}

// verdict reports one result in its rule's subtest.
func verdict(t tester, rep *report.Report, res engine.Record, strict report.Strictness, style report.Style) {
	t.Helper()
	text := report.ResultText(rep, res, style)
	switch {
	case res.Outcome == engine.Pass, rep.Known(res):
		t.Log(text)
	case res.Outcome == engine.Fail:
		t.Error(text)
	case res.Outcome == engine.Warn && strict.Warn:
		t.Error(text + "\n(a WARN fails a strict run)")
	case res.Outcome == engine.Warn:
		t.Log(text)
	case res.Outcome == engine.Skip:
		t.Skip(text)
	default: // ERROR: the checker could not evaluate the rule
		t.Error(text)
	}
}

// summarize fails t where the command would exit non-zero on the results
// the subtests showed (report.Exit decides), and logs the tally and the
// verdict; stale baseline entries are logged, as the command names them.
func summarize(t tester, rep *report.Report, shown []engine.Record, bl *baseline.Baseline, strict report.Strictness) {
	t.Helper()
	sum := *rep
	sum.Results = shown
	sum.Stale = bl.Compare(shown).Stale
	for _, st := range sum.Stale {
		t.Log("posterntest: " + st.String())
	}
	line := sum.Counts().String()
	if len(shown) == len(rep.Results) {
		line = rep.Verdict.Text + "  " + line
	}
	t.Log("posterntest: " + line)
	if code, msg := sum.Exit(strict); code != report.ExitOK {
		t.Error("posterntest: " + msg)
	}
}

// bySection groups rules by section, in order of first appearance.
func bySection(rules []ruleRef) (order []string, by map[string][]ruleRef) {
	by = map[string][]ruleRef{}
	for _, r := range rules {
		if _, seen := by[r.Section]; !seen {
			order = append(order, r.Section)
		}
		by[r.Section] = append(by[r.Section], r)
	}
	return order, by
}

// verbose is go test's -v: the evidence is then drawn in full.
func verbose() bool {
	v := flagValue("test.v")
	return v != "" && v != "false"
}

// walkReport is the report of a walk: its records, and the walk's own
// verdict on them.
func walkReport(results []engine.Result[*entitlement.Env], o entitlement.Options, bl *baseline.Baseline, run report.Run) *report.Report {
	recs := engine.Records(results)
	h := report.Header{Mode: entitlement.Mode, Target: entitlement.Target(o),
		Options: report.Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline}}
	return report.New(h, recs, entitlement.Decide(recs, bl.Set()), bl, run)
}
