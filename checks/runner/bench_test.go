package runner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// benchCheck checks the reference runner (Level 3, default posture, with
// its allowed origin) b.N times and reports, beside the mean ns/op, the
// median run in milliseconds, the peak heap over all runs (the runner,
// served in the same process, included), the requests of one run and the
// agent executions per run, and with --execute the checker's own count
// of agent starts per run.
func benchCheck(b *testing.B, o runner.Options) { benchPosture(b, fixtures.Config{}, o) }

// benchPosture is benchCheck against the reference runner cfg describes.
func benchPosture(b *testing.B, cfg fixtures.Config, o runner.Options) {
	srv, err := fixtures.Start(cfg, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o.Target, o.Origin = srv.URL, fixtures.AllowedOrigin
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	var requests, starts int
	took := make([]time.Duration, 0, b.N)
	sampler := startHeapSampler()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		env, _, err := runner.Check(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		requests = len(env.Session.Exchanges())
		starts += env.AgentStarts()
	}
	b.StopTimer()
	peak := sampler.Stop()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(requests), "requests/check")
	b.ReportMetric(float64(srv.Runner.Executions())/float64(b.N), "executions/check")
	if o.Execute {
		b.ReportMetric(float64(starts)/float64(b.N), "agent-starts/check")
	}
}

// BenchmarkFullCheck is one whole default-mode checking run of the
// reference runner: every rule, every request, over loopback, with no
// --patience given.
func BenchmarkFullCheck(b *testing.B) { benchCheck(b, runner.Options{}) }

// BenchmarkFullCheckShortPatience is the same with --patience 0.1. A
// conforming runner never pays the patience, so it costs the same.
func BenchmarkFullCheckShortPatience(b *testing.B) {
	benchCheck(b, runner.Options{Patience: 100 * time.Millisecond})
}

// BenchmarkFullCheckExecute is the same with --execute.
func BenchmarkFullCheckExecute(b *testing.B) { benchCheck(b, runner.Options{Execute: true}) }

// BenchmarkExecuteSlowAgent is a full --execute check of the slow-agent
// posture (runs of 1.5 s, one at a time), as `demo --execute --posture
// slow-agent` makes it: its wall (median-ms) is the sum of the runs it
// could not share or overlap.
func BenchmarkExecuteSlowAgent(b *testing.B) {
	benchPosture(b, fixtures.Config{Posture: "slow-agent"}, runner.Options{Execute: true, Timeout: 10 * time.Second})
}
