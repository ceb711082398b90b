package progress_test

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/sigrix-io/postern-conformance/report/progress"
)

// clock is a fake clock a test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) pass(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func line(w *bytes.Buffer, c *clock) *progress.Line {
	return progress.On(w, progress.Config{Unit: "rules decided", Now: c.now, Width: 60})
}

// take returns what was written since the last take.
func take(b *bytes.Buffer) string {
	s := b.String()
	b.Reset()
	return s
}

func TestTheLineAppearsOnlyAfterASecond(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	l := line(&b, c)
	l.Update(1, 86, "2.3/no-wildcard")
	c.pass(900 * time.Millisecond)
	l.Update(40, 86, "4.6/order")
	l.Tick()
	assert.Equal(t, take(&b), "", "work shorter than a second shows nothing")
	c.pass(100 * time.Millisecond)
	l.Tick()
	assert.Equal(t, take(&b), "\r40/86 rules decided · 1s · 4.6/order\x1b[K")
	l.Stop()
	assert.Equal(t, take(&b), "\r\x1b[K", "Stop clears the line")
}

func TestRedrawsAreThrottledAndOnlyOfAChange(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	l := line(&b, c)
	c.pass(2 * time.Second)
	l.Update(10, 86, "a")
	assert.Equal(t, take(&b), "\r10/86 rules decided · 2s · a\x1b[K")
	for i := range 9 { // within the tenth of a second: none drawn
		c.pass(10 * time.Millisecond)
		l.Update(11+i, 86, "b")
	}
	assert.Equal(t, take(&b), "")
	c.pass(10 * time.Millisecond)
	l.Update(20, 86, "c")
	assert.Equal(t, take(&b), "\r20/86 rules decided · 2s · c\x1b[K")
	c.pass(time.Second)
	l.Tick()
	l.Tick()
	assert.Equal(t, take(&b), "\r20/86 rules decided · 3s · c\x1b[K", "a tick redraws the clock, once")
	c.pass(200 * time.Millisecond)
	l.Tick()
	assert.Equal(t, take(&b), "", "nothing changed, nothing drawn")
	l.Stop()
	assert.Equal(t, take(&b), "\r\x1b[K")
	c.pass(time.Second)
	l.Update(86, 86, "")
	l.Tick()
	l.Stop()
	assert.Equal(t, take(&b), "", "nothing after Stop, and no second clear")
}

func TestTheLineFitsAndCannotBeHijacked(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	l := line(&b, c)
	c.pass(time.Second)
	l.Update(3, 100, "http://127.0.0.1:1/\x1b[2J\u202eevil"+strings.Repeat("x", 80))
	out := take(&b)
	text := strings.TrimSuffix(strings.TrimPrefix(out, "\r"), "\x1b[K")
	assert.Check(t, !strings.ContainsAny(text, "\x1b\u202e\r\n"), "%q", text)
	assert.Check(t, is.Contains(text, "http://127.0.0.1:1/?[2J?evil"))
	assert.Equal(t, len([]rune(text)), 59, "one column short of the width: it never wraps")
	assert.Check(t, strings.HasSuffix(text, "…"))
	l.Stop()
}

func TestNoLineWhereNothingIsToBeCounted(t *testing.T) {
	var b bytes.Buffer
	c := newClock()
	l := line(&b, c)
	c.pass(5 * time.Second)
	l.Tick()
	l.Stop()
	assert.Equal(t, b.String(), "", "no total yet, no line, and nothing to clear")
}

// A stream that is not a terminal never gets a line: New gives a nil
// Line, whose every method is a no-op.
func TestSilentOnANonTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	assert.NilError(t, err)
	defer f.Close()
	r, w, err := os.Pipe()
	assert.NilError(t, err)
	defer r.Close()
	defer w.Close()
	for _, out := range []any{f, w, &bytes.Buffer{}, nil} {
		var l *progress.Line
		switch out := out.(type) {
		case *os.File:
			assert.Check(t, !progress.Terminal(out))
			l = progress.New(out, progress.Config{Unit: "x", After: time.Nanosecond})
		case *bytes.Buffer:
			assert.Check(t, !progress.Terminal(out))
			l = progress.New(out, progress.Config{Unit: "x", After: time.Nanosecond})
		default:
			assert.Check(t, !progress.Terminal(nil))
		}
		assert.Check(t, l == nil)
		l.Start()
		l.Update(1, 2, "a")
		l.Tick()
		l.Stop()
	}
	st, err := f.Stat()
	assert.NilError(t, err)
	assert.Equal(t, st.Size(), int64(0))
}

// The redraws of Start and the updates of a run's goroutines share the
// line safely (the race detector holds it), and Stop ends the redraws.
func TestStartRedrawsUntilStop(t *testing.T) {
	var mu sync.Mutex
	var b bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(p) })
	l := progress.On(w, progress.Config{Unit: "runners checked", After: time.Millisecond, Every: time.Millisecond})
	l.Start()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				l.Update(i*50+j, 200, "r")
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	time.Sleep(5 * time.Millisecond)
	l.Stop()
	mu.Lock()
	out := b.String()
	n := b.Len()
	mu.Unlock()
	assert.Check(t, strings.Contains(out, "runners checked"), "%q", out)
	assert.Check(t, strings.HasSuffix(out, "\r\x1b[K"), "cleared last")
	time.Sleep(5 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, b.Len(), n, "nothing drawn after Stop")
	mu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
