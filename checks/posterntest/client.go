package posterntest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
)

// RunClient checks a Postern client as `postern-conformance client` does:
// the client is run once per scenario against a scripted runner of the
// checker's own, and each rule is reported as a subtest of t, as Run
// reports a runner's.
//
// c is the client: a command line (a string, run with sh -c as --command
// runs it, to the adapter contract client.Contract states), or a
// client.Runner, such as a client.Func calling a Go client in process with
// the contract's variables. Rules, Baseline, BaselineFile, Strict,
// StrictBaseline and Timeout (each scenario's --client-timeout) apply; the
// other options are a runner's or a walk's.
func RunClient(t *testing.T, c any, opts ...Option) {
	t.Helper()
	runClient(std{t}, c, opts)
}

// clientRefuses are the options a client check does not take.
var clientRefuses = append(append([]string{"Deadline"}, walkOnly...), checkOnly...)

func runClient(t tester, c any, opts []Option) {
	t.Helper()
	cfg, err := gather("RunClient", clientRefuses, opts)
	if err != nil {
		t.Fatal(err)
		return
	}
	s, err := clientSuite(cfg, c)
	if err != nil {
		t.Fatal(err)
		return
	}
	drive(t, s, cfg)
}

// clientSuite is the client check (client.Check) of the client c names.
func clientSuite(c *config, cl any) (*suite, error) {
	var o client.Options
	switch v := cl.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("posterntest.RunClient: an empty command line")
		}
		o.Command = v
	case client.Runner:
		o.Runner = v
	default:
		return nil, fmt.Errorf("posterntest.RunClient: a client is a command line or a client.Runner, not %T", cl)
	}
	bl, err := c.baseline()
	if err != nil {
		return nil, err
	}
	rules, err := selectRules(client.All(), c.rules, "`postern-conformance list --client` shows the IDs")
	if err != nil {
		return nil, err
	}
	s := &suite{mode: "RunClient", rules: rules, bl: bl}
	s.check = func(ctx context.Context, sel []ruleRef) (*report.Report, error) {
		o := o
		o.ClientTimeout, o.Rules = c.timeout, s.patterns(c, sel)
		started := time.Now()
		_, results, err := client.Check(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("posterntest: %w", err)
		}
		recs := engine.Records(results)
		if o.ClientTimeout <= 0 {
			o.ClientTimeout = client.DefaultClientTimeout
		}
		h := report.Header{Mode: client.Mode, Target: client.Target(o), Options: report.Options{Rules: o.Rules, Timeout: o.ClientTimeout}}
		return report.New(h, recs, client.Decide(recs, bl.Set()), bl, report.Run{Started: started, Elapsed: time.Since(started)}), nil
	}
	return s, nil
}
