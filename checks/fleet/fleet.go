// Package fleet checks many runners in one go, as an operator serving one
// runner per agent (§2.2) needs: each runner exactly as runner.Check checks
// one, with the same options and a Session of its own, and a bounded
// number of them at once.
//
// A runner that cannot be checked (unreachable, not a Postern runner) is
// that runner's error, never the end of the others' checks.
package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/wire"
)

// DefaultParallel is how many runners are checked at once where Options
// says nothing. A check spends most of its time waiting on its runner
// (earned waits, one connection per request), not on the processor, so
// several at once cost little more than one; but each holds up to
// engine.DefaultInFlight connections and its own body budget
// (wire.DefaultBodyBudget), so the number bounds the sockets and the
// memory a fleet of hostile runners can claim: eight is 48 connections and
// 64 MiB of bodies at most, well within a small CI machine. On the
// two-core machine a hundred reference runners in process take under two
// seconds (BenchmarkFleet), and there the processor, not the bound, is
// what limits.
const DefaultParallel = 8

// MaxParallel bounds Options.Parallel.
const MaxParallel = 64

// Options is one fleet check as a user asks for it.
type Options struct {
	// Check is every runner's check; its Target is set per runner, and its
	// Progress is not called (Progress below is, per runner).
	Check runner.Options
	// Parallel bounds the runners checked at once; zero means
	// DefaultParallel, and more than MaxParallel is MaxParallel.
	Parallel int
	// Progress, where set, is told as each runner starts and as each is
	// done: how many are done out of the total, and the target being
	// checked the longest (or "" when none is). Calls come one at a time,
	// done never going back; Progress should return at once.
	Progress func(done, total int, current string)
}

// Result is what one runner's check came to.
type Result struct {
	Target string
	// Env and Results are what runner.Check returned; Err, where set, is
	// why the runner could not be checked at all, and both are nil.
	Env     *runner.Env
	Results []runner.Result
	Err     error
	Started time.Time
	Elapsed time.Duration
}

// ErrNotChecked marks a runner whose check never started: the invocation
// was stopped first.
var ErrNotChecked = errors.New("not checked: the invocation was stopped first")

// Check checks every target, at most o.Parallel at once, and returns one
// Result per target, in the order given. Each runner's whole-run deadline
// (runner.Options.Deadline) starts when its own check does, so a runner
// waiting its turn loses none of it. Stopping ctx stops the checks under
// way (their undecided rules SKIP, as for one runner) and starts no more.
func Check(ctx context.Context, targets []string, o Options) []Result {
	n := o.Parallel
	if n <= 0 {
		n = DefaultParallel
	}
	n = min(n, MaxParallel)
	out := make([]Result, len(targets))
	tl := engine.NewTally(o.Progress, len(targets))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, target := range targets {
		out[i].Target = target
		if ctx.Err() != nil {
			out[i].Err = ErrNotChecked
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Err = ErrNotChecked
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			tl.Started(target)
			out[i] = one(ctx, target, o.Check)
			tl.Done(target)
		}()
	}
	wg.Wait()
	return out
}

// one checks one runner; a panic in the checker is that runner's error.
func one(ctx context.Context, target string, o runner.Options) (res Result) {
	res = Result{Target: target, Started: time.Now()}
	defer func() {
		if p := recover(); p != nil {
			res.Env, res.Results = nil, nil
			res.Err = fmt.Errorf("the checker failed checking %s: %v\n%s", target, p, debug.Stack())
		}
		res.Elapsed = time.Since(res.Started)
	}()
	o.Target, o.Progress = target, nil
	res.Env, res.Results, res.Err = runner.Check(ctx, o)
	return res
}

// Named is a target and where it was named ("targets.txt:3", "argument
// 2"), for messages.
type Named struct {
	Target, Where string
}

// Targets checks a list of targets before any is checked: each must be a
// runner's origin (wire.ParseTarget), and none may name the same runner as
// another, since checking one runner twice at once would make each check
// compete with the other. The message names where the bad one was given.
// It returns the targets in order.
func Targets(named []Named) ([]string, error) {
	seen := map[string]string{}
	out := make([]string, 0, len(named))
	for _, n := range named {
		u, err := wire.ParseTarget(n.Target)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", n.Where, err)
		}
		key := u.String()
		if first, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s: %s is already named at %s; give each runner once", n.Where, key, first)
		}
		seen[key] = n.Where
		out = append(out, strings.TrimSpace(n.Target))
	}
	return out, nil
}

// maxLine bounds a line of a targets file.
const maxLine = 64 << 10

// ReadTargets reads a targets file: one runner's origin per line; blank
// lines are ignored, and a # starts a comment to the end of its line (a
// target never holds one: it carries no fragment). name is how messages
// refer to the file ("targets.txt", or "stdin"). The targets are not yet
// checked: see Targets.
func ReadTargets(r io.Reader, name string) ([]Named, error) {
	var out []Named
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.ContainsAny(text, " \t") {
			return nil, fmt.Errorf("%s:%d: %q holds more than one word: give one runner's origin per line", name, line, text)
		}
		out = append(out, Named{Target: text, Where: fmt.Sprintf("%s:%d", name, line)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
