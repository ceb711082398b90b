package distributor_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
)

func describe(r distributor.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", r.Outcome, r.Rule.ID, r.Reason)
	for _, f := range r.Findings {
		b.WriteString("\n    " + f.Message)
	}
	return b.String()
}

// checkWith runs a check, with the hooks where asked, and the rate limit.
func checkWith(t *testing.T, cfg refdist.Config, hooks, rate bool) map[string]distributor.Result {
	t.Helper()
	srv, err := refdist.Start(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	o := srv.Options(hooks)
	o.Timeout, o.RateLimit = 5*time.Second, rate
	_, results, err := distributor.Check(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]distributor.Result{}
	for _, r := range results {
		out[r.Rule.ID] = r
	}
	return out
}

// TestConformant: the reference distributor, in each posture, with hooks
// and the rate limit: no FAIL and no WARN, and every rule PASSes in some
// posture.
func TestConformant(t *testing.T) {
	passed := map[string]bool{}
	for _, p := range refdist.Postures {
		// Posture sigrix declares 60 s, too long to wait out here, and
		// gone-early differs only in its withdrawn agent: their timed rules
		// are proven in the default posture's second.
		cfg, hooks := refdist.Config{Posture: p}, false
		if p == refdist.PostureDefault {
			cfg.Stale, hooks = time.Second, true
		}
		start := time.Now()
		res := checkWith(t, cfg, hooks, true)
		t.Logf("posture %s: %s", p, time.Since(start).Round(time.Millisecond))
		for _, r := range res {
			switch r.Outcome {
			case engine.Pass:
				passed[r.Rule.ID] = true
			case engine.Fail, engine.Warn, engine.Error:
				t.Errorf("posture %s: %s", p, describe(r))
			}
		}
	}
	for _, r := range distributor.All() {
		if !passed[r.ID] {
			t.Errorf("%s passes in no posture", r.ID)
		}
	}
}

// TestFaults: each planted fault is caught by its rule, and by no other
// rule but those it lists.
func TestFaults(t *testing.T) {
	base := map[string]map[string]distributor.Result{}
	for _, f := range refdist.Faults() {
		t.Run(f.Name, func(t *testing.T) {
			posture := cmp.Or(f.Posture, refdist.PostureDefault)
			cfg := refdist.Config{Posture: posture}
			if posture != refdist.PostureSigrix {
				cfg.Stale = cmp.Or(f.Stale, time.Second)
			}
			key := fmt.Sprint(posture, f.Hooks, f.RateLimit, cfg.Stale)
			if base[key] == nil {
				base[key] = checkWith(t, cfg, f.Hooks, f.RateLimit)
			}
			cfg.Faults = []string{f.Name}
			got := checkWith(t, cfg, f.Hooks, f.RateLimit)
			r, ok := got[f.Rule]
			if !ok {
				t.Fatalf("fault %s names %s, which is no rule", f.Name, f.Rule)
			}
			if r.Outcome != engine.Fail && r.Outcome != engine.Warn {
				t.Errorf("fault %s: %s did not catch it: %s", f.Name, f.Rule, describe(r))
			}
			for id, res := range got {
				if id == f.Rule || slices.Contains(f.Also, id) {
					continue
				}
				// A rule may skip, saying the rule named judges the breach;
				// it may not come to any other verdict than before.
				if was := base[key][id].Outcome; res.Outcome != was && res.Outcome != engine.Skip {
					t.Errorf("fault %s changed %s from %s: %s", f.Name, id, was, describe(res))
				}
			}
		})
	}
}

// TestEveryRuleHasAFault: each rule is proven able to fail by a fault of
// the reference distributor, or (the address a distributor is reached on
// is not a behaviour of it) by TestPlainHTTPOffLoopback.
func TestEveryRuleHasAFault(t *testing.T) {
	named := map[string]bool{"7/tls-or-loopback": true}
	for _, f := range refdist.Faults() {
		named[f.Rule] = true
	}
	for _, r := range distributor.All() {
		if !named[r.ID] {
			t.Errorf("no planted fault names %s", r.ID)
		}
	}
}

// TestStructured: what reads as structure in a token, and what does not.
func TestStructured(t *testing.T) {
	for tok, want := range map[string]string{
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiIn0.c2ln": "JWT",
		`{"buyer":"b"}`:                               "JSON",
		"buyer-7.1767225600.4f3a9c":                   "Unix time",
		"uNNbZQM9g2bZ6qC6vDTWV32t02EZj1d936P8HLZMbpU": "",
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "",
	} {
		why, _ := distributor.Structured(tok)
		if (want == "") != (why == "") || !strings.Contains(why, want) {
			t.Errorf("%s: %q, want %q", tok, why, want)
		}
	}
}
