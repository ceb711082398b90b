package html_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/html"
)

// checked is the report of a full check of the reference runner (Level
// 3, its allowed origin given) carrying faults, as the command assembles
// it; verbose keeps every exchange, as --verbose does.
func checked(tb testing.TB, verbose bool, faults ...string) *report.Report {
	tb.Helper()
	srv, err := fixtures.Start(fixtures.Config{Faults: faults}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	o := runner.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second}
	started := time.Now()
	env, results, err := runner.Check(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	return report.Assemble(env, results, o, nil, report.Run{ToolVersion: "bench", Started: started, Elapsed: time.Since(started), AllEvidence: verbose})
}

// BenchmarkWrite is what --html adds to a check: rendering the page of a
// full check of the reference runner (133 rules) with two rules broken,
// as the command does once the check is over. The check itself is not
// timed.
func BenchmarkWrite(b *testing.B) {
	for _, c := range []struct {
		name    string
		verbose bool
	}{{"default", false}, {"verbose", true}} {
		b.Run(c.name, func(b *testing.B) {
			r := checked(b, c.verbose, "bare-405", "describe-other-agent")
			b.ReportAllocs()
			for b.Loop() {
				if err := html.Write(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
