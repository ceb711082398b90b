package clock

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	fired := f.After(time.Minute)
	assert.Equal(t, f.Now(), start)
	f.Advance(59 * time.Second)
	select {
	case <-fired:
		t.Fatal("fired a second early")
	default:
	}
	f.Advance(time.Second)
	assert.Equal(t, <-fired, start.Add(time.Minute))
	assert.Equal(t, f.Now(), start.Add(time.Minute))
}

func TestRealIsTheSystemClock(t *testing.T) {
	var c Clock = Real{}
	assert.Assert(t, time.Since(c.Now()) < time.Second)
}
