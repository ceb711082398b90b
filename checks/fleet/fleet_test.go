package fleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/fleet"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// serve starts a reference runner on httptest; wrap, where set, stands
// between it and the server.
func serve(t testing.TB, cfg fixtures.Config, wrap func(http.Handler) http.Handler) (string, *fixtures.Runner) {
	t.Helper()
	rn, err := fixtures.New(cfg)
	assert.NilError(t, err)
	var h http.Handler = rn
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, rn
}

func unreachable(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func options() runner.Options {
	return runner.Options{Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second}
}

// Each runner is checked as runner.Check checks one: a conformant runner
// passes, a faulty one fails the fault's rule, an unreachable one is its
// own error; the results come in the order the targets were given, and
// nothing is executed.
func TestEachRunnerIsCheckedAsAloneAndAnUnreachableOneIsItsOwnError(t *testing.T) {
	good, gr := serve(t, fixtures.Config{}, nil)
	bad, br := serve(t, fixtures.Config{Faults: []string{"bare-405"}}, nil)
	gone := unreachable(t)
	targets := []string{good, gone, bad, good + "/postern/v0"}
	res := fleet.Check(context.Background(), targets, fleet.Options{Check: options(), Parallel: 2})
	assert.Equal(t, len(res), len(targets))
	for i, r := range res {
		assert.Equal(t, r.Target, targets[i])
	}
	outcome := func(r fleet.Result, id string) runner.Outcome {
		for _, x := range r.Results {
			if x.Rule.ID == id {
				return x.Outcome
			}
		}
		return ""
	}
	fails := func(r fleet.Result) (n int) {
		for _, x := range r.Results {
			if x.Outcome == runner.Fail || x.Outcome == runner.Error {
				n++
			}
		}
		return n
	}
	assert.NilError(t, res[0].Err)
	assert.Equal(t, fails(res[0]), 0)
	assert.Check(t, res[1].Err != nil)
	assert.Check(t, res[1].Env == nil && res[1].Results == nil)
	assert.NilError(t, res[2].Err)
	assert.Equal(t, outcome(res[2], "2.1/wrong-method"), runner.Fail)
	assert.NilError(t, res[3].Err)
	assert.Equal(t, len(res[3].Results), len(res[0].Results))
	assert.Equal(t, gr.Executions()+br.Executions(), int64(0))

	// The same runner checked alone comes to the same outcomes.
	o := options()
	o.Target = bad
	_, alone, err := runner.Check(context.Background(), o)
	assert.NilError(t, err)
	for i, r := range alone {
		assert.Check(t, is.Equal(res[2].Results[i].Outcome, r.Outcome), r.Rule.ID)
	}
}

// No more than Parallel runners are being checked at once, and the
// progress hook hears of every runner once, done never going back.
func TestParallelBoundsTheRunnersCheckedAtOnce(t *testing.T) {
	var mu sync.Mutex
	busy := map[string]int{} // requests in flight per runner
	most := 0
	track := func(name string) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				busy[name]++
				most = max(most, len(busy))
				mu.Unlock()
				defer func() {
					mu.Lock()
					if busy[name]--; busy[name] == 0 {
						delete(busy, name)
					}
					mu.Unlock()
				}()
				// Slow enough that the checks overlap where they may.
				time.Sleep(2 * time.Millisecond)
				h.ServeHTTP(w, r)
			})
		}
	}
	var targets []string
	for i := range 6 {
		u, _ := serve(t, fixtures.Config{}, track(string(rune('a'+i))))
		targets = append(targets, u)
	}
	var calls, last atomic.Int64
	progress := func(done, total int, current string) {
		calls.Add(1)
		assert.Check(t, int64(done) >= last.Load())
		assert.Check(t, total == len(targets))
		last.Store(int64(done))
		assert.Check(t, current == "" || slices.Contains(targets, current), current)
	}
	o := options()
	o.Rules = []string{"2.1", "4.4"}
	res := fleet.Check(context.Background(), targets, fleet.Options{Check: o, Parallel: 2, Progress: progress})
	for _, r := range res {
		assert.NilError(t, r.Err)
	}
	// Bounded, and parallel: with six runners and two slots, two checks
	// are in flight together (each sends dozens of requests, 2 ms apiece).
	assert.Check(t, most == 2, "%d runners were being checked at once, want 2", most)
	assert.Equal(t, calls.Load(), int64(2*len(targets)))
	assert.Equal(t, last.Load(), int64(len(targets)))
}

// A stopped invocation starts no more checks, and says so per runner.
func TestAStoppedFleetStartsNoMoreChecks(t *testing.T) {
	u, _ := serve(t, fixtures.Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := fleet.Check(ctx, []string{u, u}, fleet.Options{Check: options()})
	for _, r := range res {
		assert.ErrorIs(t, r.Err, fleet.ErrNotChecked)
	}
}

func TestReadTargets(t *testing.T) {
	in := "# the fleet\n\nhttp://127.0.0.1:8001\n  http://127.0.0.1:8002/postern/v0   # the second\n\t\nhttps://b.example.org:8443\n"
	named, err := fleet.ReadTargets(strings.NewReader(in), "fleet.txt")
	assert.NilError(t, err)
	assert.DeepEqual(t, named, []fleet.Named{
		{Target: "http://127.0.0.1:8001", Where: "fleet.txt:3"},
		{Target: "http://127.0.0.1:8002/postern/v0", Where: "fleet.txt:4"},
		{Target: "https://b.example.org:8443", Where: "fleet.txt:6"},
	})
	targets, err := fleet.Targets(named)
	assert.NilError(t, err)
	assert.DeepEqual(t, targets, []string{"http://127.0.0.1:8001", "http://127.0.0.1:8002/postern/v0", "https://b.example.org:8443"})

	for in, want := range map[string]string{
		"http://127.0.0.1:1\nftp://x\n":                    "fleet.txt:2: target \"ftp://x\" must start with http:// or https://",
		"http://a:1 http://b:2\n":                          "fleet.txt:1: \"http://a:1 http://b:2\" holds more than one word",
		"\n\nhttp://a:1/elsewhere\n":                       "fleet.txt:3: target \"http://a:1/elsewhere\": give the runner's origin",
		"http://a:1\n# again\nhttp://a:1/postern/v0/\n":    "fleet.txt:3: http://a:1 is already named at fleet.txt:1",
		"http://a:1\n" + strings.Repeat("x", 70000) + "\n": "fleet.txt: bufio.Scanner: token too long",
	} {
		named, err := fleet.ReadTargets(strings.NewReader(in), "fleet.txt")
		if err == nil {
			_, err = fleet.Targets(named)
		}
		assert.ErrorContains(t, err, want)
	}
}

// Checks side by side share the registry, its facts and the embedded
// schemas, and nothing else: under the race detector, runners of every
// posture checked all at once, and two checked with --execute side by
// side, each come to what it comes to alone, and none FAILs.
func TestConcurrentChecksShareNothingMutable(t *testing.T) {
	var targets []string
	for _, p := range fixtures.Postures() {
		// One set of options serves the fleet: leave out the postures
		// that need others (a credential to send, no origin to claim).
		if p.Name == "inbound-auth" || p.Name == "no-origins" {
			continue
		}
		u, _ := serve(t, fixtures.Config{Posture: p.Name}, nil)
		targets = append(targets, u)
	}
	a, _ := serve(t, fixtures.Config{}, nil)
	b, _ := serve(t, fixtures.Config{}, nil)
	executed := options()
	executed.Execute = true
	for _, c := range []struct {
		targets []string
		o       runner.Options
	}{{targets, options()}, {[]string{a, b}, executed}} {
		res := fleet.Check(context.Background(), c.targets, fleet.Options{Check: c.o, Parallel: len(c.targets)})
		for i, r := range res {
			assert.NilError(t, r.Err, c.targets[i])
			for _, x := range r.Results {
				assert.Check(t, x.Outcome != runner.Fail && x.Outcome != runner.Error, "%s: %s %s %s", c.targets[i], x.Outcome, x.Rule.ID, x.Reason)
			}
		}
		alone := c.o
		alone.Target = c.targets[0]
		_, want, err := runner.Check(context.Background(), alone)
		assert.NilError(t, err)
		for j, w := range want {
			assert.Check(t, is.Equal(res[0].Results[j].Outcome, w.Outcome), "%s %s", alone.Target, w.Rule.ID)
		}
	}
}
