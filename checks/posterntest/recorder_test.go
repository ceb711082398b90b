package posterntest

// Run's own tests drive it over a recorder rather than a *testing.T, so
// they can see what a failing runner produces without failing.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// event is one call a subtest made.
type event struct{ Test, Kind, Text string }

func (e event) String() string { return e.Test + " " + e.Kind + ": " + firstLine(e.Text) }

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// record is what a run produced: every event, and the subtests started.
type record struct {
	mu     sync.Mutex
	events []event
	tests  []string
	// allow, where set, is the subtests the recorder runs (go test's -run
	// as the testing package applies it); nil runs them all.
	allow func(name string) bool
}

func (r *record) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of lists the events of one test (its full name), by kind.
func (r *record) of(test, kind string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.Test == test && (kind == "" || e.Kind == kind) {
			out = append(out, e)
		}
	}
	return out
}

// failed lists the tests that called Error or Fatal.
func (r *record) failed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, e := range r.events {
		if (e.Kind == "error" || e.Kind == "fatal") && !seen[e.Test] {
			seen[e.Test] = true
			out = append(out, e.Test)
		}
	}
	return out
}

func (r *record) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		fmt.Fprintln(&b, e)
	}
	return b.String()
}

// rec is one test as the recorder runs it.
type rec struct {
	r        *record
	name     string
	ctx      context.Context
	cleanups []func()
}

func (t *rec) Helper()                  {}
func (t *rec) Name() string             { return t.name }
func (t *rec) Context() context.Context { return t.ctx }
func (t *rec) Cleanup(f func())         { t.cleanups = append(t.cleanups, f) }
func (t *rec) Log(a ...any)             { t.r.add(event{t.name, "log", fmt.Sprint(a...)}) }
func (t *rec) Error(a ...any)           { t.r.add(event{t.name, "error", fmt.Sprint(a...)}) }
func (t *rec) Skip(a ...any)            { t.r.add(event{t.name, "skip", fmt.Sprint(a...)}); runtime.Goexit() }
func (t *rec) Fatal(a ...any)           { t.r.add(event{t.name, "fatal", fmt.Sprint(a...)}); runtime.Goexit() }

func (t *rec) run(name string, f func(tester)) bool {
	full := t.name + "/" + name
	if t.r.allow != nil && !t.r.allow(full) {
		return true
	}
	t.r.mu.Lock()
	t.r.tests = append(t.r.tests, full)
	t.r.mu.Unlock()
	t.r.exec(&rec{r: t.r, name: full, ctx: t.ctx}, f)
	return true
}

// exec runs f as testing runs a test: on a goroutine of its own, which
// Skip and Fatal end, and its cleanups after, last first.
func (r *record) exec(t *rec, f func(tester)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for i := len(t.cleanups) - 1; i >= 0; i-- {
				t.cleanups[i]()
			}
		}()
		f(t)
	}()
	<-done
}

// recordRun runs f as the test named name and returns what it produced.
func recordRun(t *testing.T, name string, allow func(string) bool, f func(tester)) *record {
	t.Helper()
	r := &record{allow: allow}
	r.exec(&rec{r: r, name: name, ctx: t.Context()}, f)
	return r
}

// withRun sets go test's -run flag, as the testing package read it, for
// the rest of t. (The testing package itself read it before any test ran:
// only goTestSelects sees the change.)
func withRun(t *testing.T, pattern string) {
	t.Helper()
	f := lookupFlag(t, "test.run")
	old := f.Value.String()
	if err := f.Value.Set(pattern); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

func lookupFlag(t *testing.T, name string) *flag.Flag {
	t.Helper()
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no -%s flag", name)
	}
	return f
}

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o644) }
