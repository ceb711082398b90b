package runner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

// Options.Progress reaches the engine: it is told of every rule, and last
// that all of them are decided.
func TestCheckReportsProgress(t *testing.T) {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	assert.NilError(t, err)
	defer srv.Close()
	var calls, decided, total atomic.Int64
	_, results, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Timeout: 5 * time.Second,
		Progress: func(d, n int, _ string) { calls.Add(1); decided.Store(int64(d)); total.Store(int64(n)) }})
	assert.NilError(t, err)
	assert.Equal(t, total.Load(), int64(len(results)))
	assert.Equal(t, decided.Load(), int64(len(results)))
	assert.Equal(t, calls.Load(), int64(2*len(results)))
}
