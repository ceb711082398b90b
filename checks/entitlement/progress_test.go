package entitlement_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
)

// Options.Progress reaches the engine: the walk tells it of every step.
func TestWalkReportsProgress(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	var decided, total atomic.Int64
	_, results, err := entitlement.Walk(context.Background(), entitlement.Options{Launcher: inProcess(c, variant{}), Clock: c,
		Timeout: 2 * time.Second, CheckGrace: 50 * time.Millisecond, Rules: []string{"5.3"},
		Progress: func(d, n int, _ string) { decided.Store(int64(d)); total.Store(int64(n)) }})
	assert.NilError(t, err)
	assert.Assert(t, len(results) > 0)
	assert.Equal(t, total.Load(), int64(len(results)))
	assert.Equal(t, decided.Load(), int64(len(results)))
}
