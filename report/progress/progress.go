// Package progress draws one live progress line on a terminal, for a
// check that takes a while (an entitlement walk, a slow runner, a fleet):
// how much of the work is done out of the total, how long it has taken,
// and the step under way.
//
// The line appears only once the work has taken more than a second
// (Config.After), is redrawn in place ("\r", the text, then clear to the
// end of the line) at most ten times a second (Config.Every), and is
// cleared by Stop, which the caller calls before writing its report. On a
// stream that is not a terminal (a file, a pipe, a CI log) New returns a
// Line that draws nothing, so the line never reaches a log or a JSON
// document.
package progress

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
)

// The defaults.
const (
	DefaultAfter = time.Second            // no line for work shorter than this
	DefaultEvery = 100 * time.Millisecond // at most ten redraws a second
	DefaultWidth = 80                     // columns, where COLUMNS says nothing
)

// Config is how a Line is drawn.
type Config struct {
	// Unit says what is counted: "rules decided", "runners checked".
	Unit string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// After and Every: see the package doc; zero means the defaults.
	After, Every time.Duration
	// Width is the terminal's width in columns; the line is kept shorter,
	// so it never wraps (a wrapped line cannot be redrawn in place). Zero
	// means $COLUMNS, else DefaultWidth.
	Width int
}

// Line is one live progress line. Its methods may be called from any
// goroutine, and on a nil *Line, which draws nothing.
type Line struct {
	w   io.Writer
	cfg Config

	mu      sync.Mutex
	start   time.Time
	last    time.Time // when the line was last drawn
	drawn   string    // what is on screen, "" for nothing
	done    int
	total   int
	current string
	stopped bool

	quit chan struct{}
	wg   sync.WaitGroup
}

// Terminal reports whether w is a terminal a progress line can be drawn
// on: an *os.File on a terminal, with TERM not "dumb" (a dumb terminal
// cannot clear a line).
func Terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil || os.Getenv("TERM") == "dumb" {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// New returns a line drawn on w where w is a terminal (Terminal), and nil,
// which draws nothing, otherwise. The work's clock starts now; Start
// starts the redraws.
func New(w io.Writer, cfg Config) *Line {
	if !Terminal(w) {
		return nil
	}
	return On(w, cfg)
}

// On returns a line drawn on w whatever w is: for tests, and for a caller
// that has decided w is a terminal.
func On(w io.Writer, cfg Config) *Line {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After <= 0 {
		cfg.After = DefaultAfter
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Width <= 0 {
		cfg.Width = DefaultWidth
		if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
			cfg.Width = n
		}
	}
	return &Line{w: w, cfg: cfg, start: cfg.Now()}
}

// Start redraws the line every Config.Every on the real clock, so the
// elapsed time moves on while the step under way takes long, until Stop.
func (l *Line) Start() *Line {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.quit != nil || l.stopped {
		return l
	}
	quit := make(chan struct{})
	l.quit = quit
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(l.cfg.Every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				l.Tick()
			}
		}
	}()
	return l
}

// Update says how far the work has come: done out of total, and the step
// under way ("" for none). It has the shape of engine.Progress and of
// fleet.Options.Progress. The line is redrawn where it is due.
func (l *Line) Update(done, total int, current string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done, l.total, l.current = done, total, current
	l.draw()
}

// Tick redraws the line where it is due (Start calls it).
func (l *Line) Tick() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draw()
}

// Stop ends the redraws and clears the line, leaving the cursor where the
// line began; nothing is drawn after it. Call it before writing a report.
func (l *Line) Stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	quit := l.quit
	l.quit = nil
	l.stopped = true
	if l.drawn != "" {
		_, _ = io.WriteString(l.w, "\r"+clearEOL)
		l.drawn = ""
	}
	l.mu.Unlock()
	if quit != nil {
		close(quit)
		l.wg.Wait()
	}
}

// clearEOL clears from the cursor to the end of the line.
const clearEOL = "\x1b[K"

// draw redraws the line where it is due and changed; with l.mu held.
func (l *Line) draw() {
	if l.stopped || l.total <= 0 {
		return
	}
	now := l.cfg.Now()
	if now.Sub(l.start) < l.cfg.After {
		return
	}
	if l.drawn != "" && now.Sub(l.last) < l.cfg.Every {
		return
	}
	text := l.text(now)
	if text == l.drawn {
		return
	}
	_, _ = io.WriteString(l.w, "\r"+text+clearEOL)
	l.drawn, l.last = text, now
}

// text is the line: "34/86 rules decided · 3s · 4.6/order", cut to fit.
func (l *Line) text(now time.Time) string {
	s := fmt.Sprintf("%d/%d %s · %s", l.done, l.total, l.cfg.Unit, now.Sub(l.start).Truncate(time.Second))
	if l.current != "" {
		s += " · " + printable(l.current)
	}
	return fit(s, l.cfg.Width-1)
}

// printable replaces what could move the cursor or recolour the terminal
// (control characters, bidirectional controls, invalid UTF-8) with "?":
// a step's name may be a user's or a runner's text.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) ||
			r == '\u2028' || r == '\u2029' {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// fit cuts s to at most n runes, marking a cut with "…".
func fit(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	out := []rune(s)[:n-1]
	return string(out) + "…"
}
