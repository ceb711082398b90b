// Package entitlement is the entitlement harness: a mode in which the
// checker plays the distributor (checks/entitlement/scripted) and walks a
// runner it launches through §5 in real time: the check request itself,
// the re-check after the declared window, checked_at carried unchanged,
// revocation and restoration, a 404 against an outage, the grace period,
// the never-checked runner, and the restart.
//
// Every step is a rule of this package's registry (registry.go), run by
// the same engine as the runner check (checks/engine). Each rule launches
// a runner of its own, with a token of its own on the one distributor, so
// independent steps run side by side. Nothing here starts the agent: the
// entitlement is read from status, and from the refusal of a run body no
// runner can execute (§4.6 puts the entitlement at step 2, ahead of the
// inputs, so 403 or 503 against 400 tells the two apart).
package entitlement

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"github.com/sigrix-io/postern-conformance/wire/launch"
)

// The environment variables a launched runner is given, besides its own.
const (
	// VarDistributor is the scripted distributor's base URL (plain HTTP on
	// loopback, which §7's loopback exception allows).
	VarDistributor = "POSTERN_CONFORMANCE_DISTRIBUTOR"
	// VarToken is the runner's entitlement token, fresh per launch and at
	// least 128 bits (§5.2).
	VarToken = "POSTERN_CONFORMANCE_TOKEN"
	// VarState is a directory of the runner's own, the same across the
	// relaunches of one step, for a runner that persists its answer
	// (§5.4, §5.7.2).
	VarState = "POSTERN_CONFORMANCE_STATE"
)

// Options is one walk as a user asks for it.
type Options struct {
	// Launch is the command that starts the runner (sh -c), which prints
	// POSTERN_PORT=<port> first (§2). Launcher, where set, is used instead.
	Launch   string
	Launcher Launcher
	// Window and Grace are the stale_after_seconds and grace_seconds the
	// distributor declares (whole seconds; DefaultWindow, DefaultGrace).
	Window, Grace time.Duration
	// Timeout bounds each request to a runner; LaunchTimeout a launch.
	Timeout, LaunchTimeout time.Duration
	// Deadline bounds the whole walk; zero means DefaultDeadline.
	Deadline time.Duration
	// Rules selects rules by pattern (engine.Select); none means all.
	Rules []string
	// Clock is the walk's time; nil is the real clock. A *clock.Fake is
	// moved forward where the walk would wait, for tests.
	Clock clock.Clock
	// Stderr receives the launched runners' stderr (nil discards it).
	Stderr io.Writer
	// CheckGrace is how long after answering status a runner checking in
	// the background is given for its first check (DefaultCheckGrace).
	CheckGrace time.Duration
	// Progress, where set, is told how far the walk has come (see
	// engine.Suite.Progress).
	Progress engine.Progress
	// Headers are sent on every request to a runner, for one that requires
	// inbound authentication of its own (§7; --header). Their values are
	// redacted from the evidence.
	Headers http.Header
}

// The defaults.
const (
	DefaultWindow        = 2 * time.Second
	DefaultGrace         = 2 * time.Second
	DefaultTimeout       = 5 * time.Second
	DefaultLaunchTimeout = 30 * time.Second
	DefaultDeadline      = 2 * time.Minute
	DefaultCheckGrace    = 500 * time.Millisecond
	// AttemptGrace bounds the grace the step judging
	// 5.7.1/keeps-attempting declares, where --grace is shorter: a client
	// may space its attempts after a failure (holding status-driven ones
	// off for some seconds, so that a busy dashboard cannot hammer a
	// distributor that is down), and 20 s lets one spaced by up to about
	// 15 s, as a real client's were, show an attempt. A runner that
	// attempts on a run at once is seen at once; only one that never
	// attempts again waits it out.
	AttemptGrace = 20 * time.Second
)

// Launcher starts a runner with the harness's variables.
type Launcher interface {
	Launch(ctx context.Context, v Vars) (Instance, error)
}

// Vars are what a launched runner is told (see VarDistributor and beside).
// Distributor and Token are empty for the step that launches a runner with
// no distributor configured (§5.1); the variables are then left out.
type Vars struct {
	Distributor, Token, State string
}

// Instance is a launched runner.
type Instance interface {
	URL() string
	Stop()
}

// Command launches `sh -c` a command with the variables in its
// environment (wire/launch).
type Command struct {
	Line    string
	Timeout time.Duration
	Stderr  io.Writer
}

// Launch starts the command.
func (c Command) Launch(ctx context.Context, v Vars) (Instance, error) {
	env := []string{VarState + "=" + v.State}
	if v.Distributor != "" {
		env = append(env, VarDistributor+"="+v.Distributor, VarToken+"="+v.Token)
	}
	r, err := launch.StartWith(ctx, c.Line, env, c.Timeout, c.Stderr)
	if err != nil {
		return nil, err
	}
	return commandInstance{r}, nil
}

type commandInstance struct{ r *launch.Runner }

func (i commandInstance) URL() string { return i.r.URL }
func (i commandInstance) Stop()       { i.r.Stop() }

// Env is what a walk's rules share.
type Env struct {
	Options
	Dist  *scripted.Distributor
	Clock clock.Clock
	// state is the parent of every step's state directory.
	state string
	// log is the walk's session: every step's exchanges are recorded in
	// it, for the sweeps over every refusal (s2_sweeps.go).
	log *engine.Session
	// lines are what each step drew (timeline.go).
	lines lines
}

// Walk runs the selected rules against runners Launch starts. An error
// means no walk was possible at all.
func Walk(ctx context.Context, o Options) (*Env, []engine.Result[*Env], error) {
	if o.Launcher == nil {
		if o.Launch == "" {
			return nil, nil, errors.New("no runner to walk: give the command that launches it (--launch)")
		}
		o.Launcher = Command{Line: o.Launch, Timeout: or(o.LaunchTimeout, DefaultLaunchTimeout), Stderr: o.Stderr}
	}
	o.Window, o.Grace = whole(or(o.Window, DefaultWindow)), whole(or(o.Grace, DefaultGrace))
	o.Timeout = or(o.Timeout, DefaultTimeout)
	o.CheckGrace = or(o.CheckGrace, DefaultCheckGrace)
	rules := engine.Select(All(), o.Rules)
	if len(rules) == 0 {
		return nil, nil, fmt.Errorf("no rule matches %v; `postern-conformance entitlement --list` shows the IDs", o.Rules)
	}
	c := o.Clock
	if c == nil {
		c = clock.Real{}
	}
	d, err := scripted.Start(c)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start the scripted distributor: %w", err)
	}
	defer d.Close()
	state, err := os.MkdirTemp("", "postern-entitlement-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(state)
	env := &Env{Options: o, Dist: d, Clock: c, state: state}
	ctx, cancel := context.WithTimeout(ctx, or(o.Deadline, DefaultDeadline))
	defer cancel()
	// One launch first, so that a command that cannot start a runner is
	// told at once rather than by every step.
	trial := d.NewToken()
	d.Answer(trial, scripted.Answer{Kind: scripted.Active, StaleAfterSeconds: int(o.Window / time.Second), GraceSeconds: int(o.Grace / time.Second)})
	inst, err := o.Launcher.Launch(ctx, Vars{Distributor: d.URL, Token: trial, State: env.stateDir("trial")})
	if err != nil {
		return nil, nil, fmt.Errorf("the runner could not be launched: %w", err)
	}
	inst.Stop()
	// One client serves the engine's session; each step speaks to its own
	// runner through a client of its own (walk.go).
	sess := engine.NewSession(wire.New(mustURL(d.URL), wire.Options{Timeout: o.Timeout}), o.Timeout, 0)
	env.log = sess
	suite := engine.Suite[*Env]{Rules: All(), Progress: o.Progress, OwnDeadline: o.Deadline}
	if _, fake := c.(*clock.Fake); fake {
		suite.Workers = 1 // the walk moves a shared fake clock: one step at a time
	}
	return env, engine.Run(ctx, suite, sess, env, rules), nil
}

// stateDir is a fresh directory for one step's runner.
func (e *Env) stateDir(name string) string {
	dir, err := os.MkdirTemp(e.state, filepath.Base(name)+"-")
	if err != nil {
		return e.state
	}
	return dir
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// whole rounds a declared bound up to whole seconds, as the answer
// carries it.
func whole(d time.Duration) time.Duration { return ((d + time.Second - 1) / time.Second) * time.Second }

// Func is a Launcher made of a function: how a test, or the demo, starts
// an in-process runner for the walk.
type Func func(ctx context.Context, v Vars) (Instance, error)

// Launch calls f.
func (f Func) Launch(ctx context.Context, v Vars) (Instance, error) { return f(ctx, v) }

// Started is an Instance made of an address and the function that stops it.
type Started struct {
	Addr string
	Halt func()
}

// URL is the runner's origin.
func (s Started) URL() string { return s.Addr }

// Stop halts the runner.
func (s Started) Stop() {
	if s.Halt != nil {
		s.Halt()
	}
}
