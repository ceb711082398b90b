package fleet_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/fleet"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// benchFleet checks n reference runners, served in process on httptest,
// in one fleet.Check of parallel at once, b.N times, and reports the
// median fleet in milliseconds and the requests of one fleet.
func benchFleet(b *testing.B, n, parallel int) {
	targets := make([]string, n)
	for i := range targets {
		targets[i], _ = serve(b, fixtures.Config{}, nil)
	}
	o := fleet.Options{Check: runner.Options{Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second}, Parallel: parallel}
	took := make([]time.Duration, 0, b.N)
	requests := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res := fleet.Check(context.Background(), targets, o)
		took = append(took, time.Since(start))
		requests = 0
		for _, r := range res {
			if r.Err != nil {
				b.Fatalf("%s: %v", r.Target, r.Err)
			}
			for _, x := range r.Results {
				if x.Outcome == runner.Fail || x.Outcome == runner.Error {
					b.Fatalf("%s: %s %s", r.Target, x.Outcome, x.Rule.ID)
				}
			}
			requests += len(r.Env.Session.Exchanges())
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(requests), "requests/fleet")
}

// BenchmarkFleet is the figure: a hundred reference runners
// checked in one invocation, at the default parallelism (target ≤ 2 s on
// the two-core machine).
func BenchmarkFleet(b *testing.B) { benchFleet(b, 100, 0) }

// BenchmarkFleetParallel is the same hundred at other bounds, to show
// what the default buys.
func BenchmarkFleetParallel(b *testing.B) {
	for _, p := range []int{1, 2, 4, 6, 8, 16} {
		b.Run(strconv.Itoa(p), func(b *testing.B) { benchFleet(b, 100, p) })
	}
}
