package runner_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

// The agent starts of an --execute check: the checker's own count agrees
// with the reference runner's, and stays within the targets (a
// full check of a Level 3 runner at most 10, of the idempotent posture at
// most 14). A slow agent's checks run side by side, as in TestLifeOfARun.

// countedCheck checks the runner cfg describes with --execute and returns
// the checker's count of agent starts, the runner's, and the results.
func countedCheck(t *testing.T, cfg fixtures.Config, maxRuns int, rules ...string) (checker, counted int, results map[string]runner.Result) {
	t.Helper()
	srv, err := fixtures.Start(cfg, 0)
	assert.NilError(t, err)
	defer srv.Close()
	o := runner.Options{Target: srv.URL, Timeout: 5 * time.Second, Patience: 400 * time.Millisecond, Execute: true,
		Origin: fixtures.AllowedOrigin, MaxRuns: maxRuns, Rules: rules}
	env, res, err := runner.Check(context.Background(), o)
	assert.NilError(t, err)
	results = map[string]runner.Result{}
	for _, r := range res {
		results[r.Rule.ID] = r
	}
	return env.AgentStarts(), int(srv.Runner.Executions()), results
}

func TestAgentStartsAreCounted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cfg    fixtures.Config
		atMost int
	}{
		{"L3 not idempotent", fixtures.Config{Level: 3, Posture: "bytes-output"}, 10},
		{"L3 idempotent", fixtures.Config{Level: 3, Posture: "default"}, 14},
		{"L2 idempotent", fixtures.Config{Level: 2, Posture: "default"}, 14},
		{"L3 slow agent", lifeConfig(3, "slow-agent"), 14},
		{"L3 overrun agent", lifeConfig(3, "overrun-agent"), 14},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			checker, counted, _ := countedCheck(t, c.cfg, 0)
			t.Logf("%s: the checker counted %d agent starts, the runner %d", c.name, checker, counted)
			if checker != counted {
				t.Errorf("%s: the checker counted %d agent starts, the runner %d", c.name, checker, counted)
			}
			if counted > c.atMost {
				t.Errorf("%s: the agent started %d times, more than %d", c.name, counted, c.atMost)
			}
		}()
	}
	wg.Wait()
}

// TestMaxRunsBudget: with a budget of one start, the check starts the
// agent at most once, and the rules it could not pay for skip, saying
// which --max-runs would do.
func TestMaxRunsBudget(t *testing.T) {
	t.Parallel()
	checker, counted, results := countedCheck(t, fixtures.Config{Level: 3, Posture: "default"}, 1)
	assert.Assert(t, counted <= 1, "the agent started %d times under --max-runs 1", counted)
	assert.Equal(t, checker, counted)
	skipped := 0
	for _, r := range results {
		if r.Outcome == runner.Skip && containsAll(r.Reason, "needs --max-runs ") {
			skipped++
		}
	}
	assert.Assert(t, skipped > 0, "no rule skipped as needing a larger --max-runs")
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestMaxRunSlackIsEarned: a runner declaring max_run_seconds 1 that lets
// a run go on to answer 200 after 1.5 s fails 4.5/max-run-enforced (the
// slack is derived from the runner's own answer times, tens of
// milliseconds here, not a second), while the same runner stopping its
// runs at the limit passes.
func TestMaxRunSlackIsEarned(t *testing.T) {
	t.Parallel()
	// Two seconds against a declared one: the old slack (1 s + 10 %) passed
	// it; the earned one, tens of milliseconds, fails it even under load.
	cfg := fixtures.Config{Level: 2, Posture: "overrun-agent", AgentTime: 2 * time.Second}
	var wg sync.WaitGroup
	wg.Add(2)
	var overran, stopped runner.Result
	go func() {
		defer wg.Done()
		faulty := cfg
		faulty.Faults = []string{"no-timeout"}
		_, _, res := countedCheck(t, faulty, 0, "4.5/max-run-enforced")
		overran = res["4.5/max-run-enforced"]
	}()
	go func() {
		defer wg.Done()
		_, _, res := countedCheck(t, cfg, 0, "4.5/max-run-enforced")
		stopped = res["4.5/max-run-enforced"]
	}()
	wg.Wait()
	assert.Equal(t, overran.Outcome, runner.Fail, describe(overran))
	assert.Equal(t, stopped.Outcome, runner.Pass, describe(stopped))
}
