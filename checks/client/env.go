// Package client is the client check: a mode that judges a Postern client
// (the third party, beside the runner and the distributor) by running it
// against runners of the checker's own. Each scenario is a scripted runner
// (checks/client/scripted) on a loopback port, conformant or using one
// piece of the room SPEC gives a runner, and the client is run once per
// scenario through its adapter (see Contract): the checker judges every
// request the client sent, its exit status and its stdout.
//
// Its rules are a registry of their own (registry.go, one file per
// section), run by the engine every mode shares (checks/engine); the
// judgements they share live in probes.go. How a client is run is kept
// apart from how it is judged (Runner): a command line under sh -c, or a
// client in process.
package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The engine's types, as this mode instantiates them.
type (
	Rule   = engine.Rule[*Env]
	T      = engine.T[*Env]
	Result = engine.Result[*Env]
	// Keyword is a rule's RFC 2119 strength.
	Keyword = engine.Keyword
)

// The keywords and the binding the client rules carry: every rule binds
// directly but the request rules, which bind by a chain through a
// runner's refusal.
const (
	Must    = engine.Must
	MustNot = engine.MustNot
	Should  = engine.Should
	Chain   = engine.Chain
)

// Options is one client check as a user asks for it.
type Options struct {
	// Command is the client's adapter, run with sh -c once per scenario.
	// Runner, where set, runs the client instead.
	Command string
	Runner  Runner
	// Scenarios selects scenarios by name (none: every one the selected
	// rules observe). The plain scenarios always run: they show the
	// adapter works, and whether the client streams.
	Scenarios []string
	// ClientTimeout is how long the client has to finish each scenario
	// (DefaultClientTimeout).
	ClientTimeout time.Duration
	// Parallel bounds the scenarios run at once (DefaultParallel).
	Parallel int
	// Rules selects rules by pattern (engine.Select); none means all.
	Rules []string
	// Progress, where set, is told as each scenario starts and ends.
	Progress engine.Progress
}

// DefaultClientTimeout is how long a client has to finish a scenario.
const DefaultClientTimeout = 30 * time.Second

// DefaultParallel is how many scenarios run at once: a client spends most
// of a scenario starting up and waiting on loopback, so twice the cores,
// and at least two, at most eight.
func DefaultParallel() int { return min(8, max(2, 2*runtime.NumCPU())) }

// Env is what a check's rules share: the trials, one per scenario run.
type Env struct {
	Options
	mu     sync.Mutex
	trials map[string]*Trial
	// Streams says the client streams: asked for a stream in the plain
	// stream scenario, it sent one.
	Streams bool
}

// Trial is one scenario's run of the client: what the scripted runner
// received and answered, and how the client ended.
type Trial struct {
	Scenario scripted.Scenario
	Requests []scripted.Request
	// Dropped counts the requests past the log's cap.
	Dropped int
	Process Process
	// Err is a failure of the checker's own (its runner could not start).
	Err error
}

// ErrBadInput marks a client the check cannot be made of: a command that
// cannot start, or an adapter that fails the plain scenario.
var ErrBadInput = errors.New("bad input")

// Check runs the client under test through the selected scenarios and
// judges it by the selected rules. An error means no check was possible:
// a bad option, a command that cannot start, or an adapter that fails the
// plain scenario (ErrBadInput).
func Check(ctx context.Context, o Options) (*Env, []Result, error) {
	if o.Runner == nil {
		if strings.TrimSpace(o.Command) == "" {
			return nil, nil, fmt.Errorf("%w: no client to check: give the command that runs its adapter (--command)", ErrBadInput)
		}
		o.Runner = Command{Line: o.Command}
	}
	if o.ClientTimeout <= 0 {
		o.ClientTimeout = DefaultClientTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel()
	}
	for _, name := range o.Scenarios {
		if _, ok := scripted.Lookup(name); !ok {
			return nil, nil, fmt.Errorf("%w: --scenario %q is no scenario; they are %s", ErrBadInput, name, strings.Join(scripted.Names(), ", "))
		}
	}
	rules := engine.Select(All(), o.Rules)
	if len(rules) == 0 {
		return nil, nil, fmt.Errorf("%w: no rule matches %v; `postern-conformance list --client` shows the IDs", ErrBadInput, o.Rules)
	}
	names := o.scenariosFor(rules)
	env := &Env{Options: o, trials: map[string]*Trial{}}
	tally := engine.NewTally(o.Progress, len(names))

	// The plain scenario alone first: a client that cannot start, or an
	// adapter that cannot run the plainest agent, is told at once.
	plain := env.try(ctx, scripted.PlainRun, tally)
	if err := adapterWorks(plain, o); err != nil {
		return env, nil, err
	}
	env.runAll(ctx, names[1:], tally)
	if st := env.trials[scripted.PlainStream]; st != nil {
		env.Streams = len(st.sent(protocol.Stream)) > 0
	}
	// One client serves the engine's session; nothing is sent through it.
	sess := engine.NewSession(wire.New(&url.URL{Scheme: "http", Host: "127.0.0.1"}, wire.Options{Timeout: o.ClientTimeout}), o.ClientTimeout, 0)
	suite := engine.Suite[*Env]{Rules: All()}
	return env, engine.Run(ctx, suite, sess, env, rules), nil
}

// scenariosFor lists the scenarios the selected rules observe, as
// Scenarios narrows them, in the catalogue's order: plain first, then the
// plain stream wherever a stream scenario runs.
func (o Options) scenariosFor(rules []*Rule) []string {
	want := map[string]bool{scripted.PlainRun: true}
	for _, r := range rules {
		for _, name := range observes[r.ID] {
			if len(o.Scenarios) == 0 || slices.Contains(o.Scenarios, name) {
				want[name] = true
			}
		}
		if observes[r.ID] == nil { // a rule over every request: every scenario selected
			for _, name := range scripted.Names() {
				if len(o.Scenarios) == 0 || slices.Contains(o.Scenarios, name) {
					want[name] = true
				}
			}
		}
	}
	var out []string
	for _, s := range scripted.Scenarios() {
		if want[s.Name] && s.Verb == protocol.Stream {
			want[scripted.PlainStream] = true
		}
	}
	for _, name := range scripted.Names() {
		if want[name] {
			out = append(out, name)
		}
	}
	return out
}

// runAll runs the named scenarios, at most Parallel at once.
func (e *Env) runAll(ctx context.Context, names []string, tally *engine.Tally) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.Parallel)
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.try(ctx, name, tally)
		}()
	}
	wg.Wait()
}

// try runs one scenario: its scripted runner, and the client against it
// under its own deadline.
func (e *Env) try(ctx context.Context, name string, tally *engine.Tally) *Trial {
	tally.Started(name)
	defer tally.Done(name)
	s, _ := scripted.Lookup(name)
	tr := &Trial{Scenario: s}
	defer func() {
		e.mu.Lock()
		e.trials[name] = tr
		e.mu.Unlock()
	}()
	rn, err := scripted.Start(s.Script)
	if err != nil {
		tr.Err = err
		return tr
	}
	defer rn.Close()
	cctx, cancel := context.WithTimeout(ctx, e.ClientTimeout)
	defer cancel()
	tr.Process = e.Runner.Run(cctx, []string{VarURL + "=" + rn.URL, VarVerb + "=" + s.Verb, VarScenario + "=" + s.Name})
	rn.Close() // ends whatever the client left in flight before the log is read
	tr.Requests, tr.Dropped = rn.Log()
	return tr
}

// Trial is the trial of the scenario named name, or nil where it was not
// run.
func (e *Env) Trial(name string) *Trial {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trials[name]
}

// Trials are the trials run, in the catalogue's order.
func (e *Env) Trials() []*Trial {
	var out []*Trial
	for _, name := range scripted.Names() {
		if tr := e.Trial(name); tr != nil {
			out = append(out, tr)
		}
	}
	return out
}

// adapterWorks says why the plain scenario shows no check can be made of
// the client: a command that cannot start, or an adapter that fails the
// plainest agent for no reason a runner gave it (ErrBadInput). A client
// whose request the runner refused for what it said is checked: the rules
// judge that request.
func adapterWorks(tr *Trial, o Options) error {
	if tr.Err != nil {
		return fmt.Errorf("the scripted runner of the plain scenario could not start: %w", tr.Err)
	}
	p := tr.Process
	who := "the client"
	if o.Command != "" {
		who = fmt.Sprintf("--command %q", clip(strings.TrimSpace(o.Command), 80))
	}
	last := lastLine(p.StderrTail)
	if !p.Started {
		return fmt.Errorf("%w: %s could not be started: %s", ErrBadInput, who, p.Err)
	}
	if len(tr.Requests) == 0 && !p.Killed {
		switch p.Exit {
		case 127:
			return fmt.Errorf("%w: %s: sh found no such command (exit 127)%s", ErrBadInput, who, last)
		case 126:
			return fmt.Errorf("%w: %s: sh could not execute it (exit 126: not executable?)%s", ErrBadInput, who, last)
		}
	}
	if tr.refused() != nil && !tr.servedOne() {
		return nil // the rules judge the request the runner refused
	}
	broken := func(what string) error {
		return fmt.Errorf("%w: %s failed the plain scenario (a Level 3 runner, one required text input, a text output, asked for run): %s; it sent %s%s. The adapter is broken, not the client's reading of a runner: see the adapter contract (postern-conformance client --help)",
			ErrBadInput, who, what, tr.brief(), last)
	}
	switch {
	case p.Killed:
		return broken(fmt.Sprintf("it had not finished after --client-timeout (%s)", o.ClientTimeout))
	case p.Exit != 0 || p.Signal != "":
		return broken("it " + p.ending())
	case !tr.printed(tr.Scenario.Value):
		return broken(fmt.Sprintf("it exited 0 and printed %s where the output's value is %q", quoteTail(p.Stdout, p.StdoutCut), tr.Scenario.Value))
	}
	return nil
}

// lastLine is "; its stderr ended: …" with the last line of stderr, or "".
func lastLine(tail []byte) string {
	lines := strings.Split(strings.TrimRight(string(tail), "\r\n \t"), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	return "; its stderr ended: " + clip(strings.ToValidUTF8(l, "\uFFFD"), 160)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
