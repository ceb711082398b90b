package client_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
)

// BenchmarkClientCheck: a full check of the reference client run in
// process, every scenario: what the checker itself costs.
func BenchmarkClientCheck(b *testing.B) {
	for b.Loop() {
		if _, _, err := client.Check(context.Background(), client.Options{Runner: reference()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientCheckCommand: a full check of the reference client as a
// command, the way `demo client` runs it (this module's binary re-run as
// reference-client, once per scenario, with sh -c), at the default
// parallelism. client-start-ms is the median time of that command to
// start and exit (it exits at once with POSTERN_URL unset): the client
// start the bound is stated for.
func BenchmarkClientCheckCommand(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "postern-conformance")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/sigrix-io/postern-conformance/cmd/postern-conformance").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var starts []time.Duration
	for range 9 {
		cmd := exec.Command("sh", "-c", "'"+bin+"' reference-client")
		cmd.Env = append(os.Environ(), client.VarURL+"=")
		start := time.Now()
		_ = cmd.Run()
		starts = append(starts, time.Since(start))
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := client.Check(context.Background(), client.Options{Command: "'" + bin + "' reference-client"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "client-start-ms")
}
