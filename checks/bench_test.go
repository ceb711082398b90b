package checks_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// BenchmarkFullCheck is one whole default-mode checking run of the
// reference runner (Level 3, default posture, with its allowed origin):
// every rule, every request, over loopback.
func BenchmarkFullCheck(b *testing.B) {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o := checks.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second}
	var requests int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env, _, err := checks.Check(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		requests = len(env.Session.Exchanges())
	}
	b.ReportMetric(float64(requests), "requests/check")
}

// BenchmarkFullCheckShortPatience is the same with --patience 0.1: the
// default run's floor is the one probe that must watch a runner not answer
// (2.3/media-type-params waits out the patience by design).
func BenchmarkFullCheckShortPatience(b *testing.B) {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o := checks.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second, Patience: 100 * time.Millisecond}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := checks.Check(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullCheckExecute is the same with --execute.
func BenchmarkFullCheckExecute(b *testing.B) {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o := checks.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second, Execute: true}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := checks.Check(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(srv.Runner.Executions())/float64(b.N), "executions/check")
}
