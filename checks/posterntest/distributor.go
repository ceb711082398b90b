package posterntest

import (
	"context"
	"fmt"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/report"
)

// RunDistributor checks the distributor at target as `postern-conformance
// distributor` does, with the test buyer's inputs in (Token and Agent
// required; Target is target's origin, filled in here), and reports each
// rule as a subtest of t, as Run reports a runner's. in.Revoke and
// in.Restore (a distributor.HookFunc, or a distributor.Command) enable
// the timed rules.
//
// target is as for Run: an origin, a *url.URL, an *httptest.Server or an
// http.Handler served for the test. Header, Rules, Baseline,
// BaselineFile, Strict, StrictBaseline, Timeout and Deadline apply; the
// other options are a runner's or a walk's.
func RunDistributor(t *testing.T, target any, in distributor.Options, opts ...Option) {
	t.Helper()
	runDistributor(std{t}, target, in, opts)
}

// distributorRefuses are the options a distributor check does not take.
var distributorRefuses = append(append([]string{}, walkOnly...), checkOnly[:2]...)

func runDistributor(t tester, target any, in distributor.Options, opts []Option) {
	t.Helper()
	c, err := gather("RunDistributor", append(distributorRefuses, "Patience"), opts)
	if err != nil {
		t.Fatal(err)
		return
	}
	base, stop, err := serve(target)
	if err != nil {
		t.Fatal(err)
		return
	}
	t.Cleanup(func() { _ = stop() })
	s, err := distributorSuite(c, base, in)
	if err != nil {
		t.Fatal(err)
		return
	}
	drive(t, s, c)
}

// distributorSuite is the distributor check (distributor.Check) of the
// distributor at base.
func distributorSuite(c *config, base string, in distributor.Options) (*suite, error) {
	bl, err := c.baseline()
	if err != nil {
		return nil, err
	}
	rules, err := selectRules(distributor.All(), c.rules, "`postern-conformance list --distributor` shows the IDs")
	if err != nil {
		return nil, err
	}
	s := &suite{mode: "RunDistributor", rules: rules, bl: bl}
	s.check = func(ctx context.Context, sel []ruleRef) (*report.Report, error) {
		o := in
		o.Target, o.Timeout, o.Deadline, o.Rules = base, c.timeout, c.deadline, s.patterns(c, sel)
		if c.headers != nil {
			o.Headers = c.headers.Clone()
		}
		started := time.Now()
		_, results, err := distributor.Check(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("posterntest: %w", err)
		}
		recs := engine.Records(results)
		h := report.Header{Mode: distributor.Mode, Target: o.Target,
			Options: report.Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline, Headers: report.HeaderNames(o.Headers)}}
		return report.New(h, recs, distributor.Decide(recs, bl.Set()), bl, report.Run{Started: started, Elapsed: time.Since(started)}), nil
	}
	return s, nil
}
