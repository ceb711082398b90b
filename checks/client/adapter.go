package client

import (
	"context"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/sigrix-io/postern-conformance/wire/launch"
)

// The adapter contract's environment: what the client under test is told,
// scenario by scenario (see Contract).
const (
	// VarURL is the scripted runner's origin.
	VarURL = "POSTERN_URL"
	// VarVerb is run or stream: the verb the user asked for.
	VarVerb = "POSTERN_VERB"
	// VarScenario names the scenario, for logs only: a client must not
	// branch on it, and no verdict depends on it.
	VarScenario = "POSTERN_CONFORMANCE_SCENARIO"
)

// Contract is the adapter contract, as --help and the README state it.
const Contract = `Environment:
  POSTERN_URL is the runner's origin;
  POSTERN_VERB is run or stream, the verb the user asked for;
  POSTERN_CONFORMANCE_SCENARIO names the scenario, for logs only. A client
  must not branch on it, and no verdict may depend on it.
What the client does: what it would do for a user who asked it to run the
  agent once with that verb. It reads describe and status as it needs. It
  fills every required input:
    a text, a select or a type it does not know: a non-empty string (for
    select, the first option);
    a number: one within its validation.
  Then it sends one request and renders the outcome.
stdout carries only what it would show the user as the output. For a text
  output that is exactly the value; for stream, the final text.
  Diagnostics go to stderr.
Exit status is 0 when the run succeeded, non-zero when it failed or was
  refused. The client must finish within --client-timeout (default 30 s).`

// Runner runs the client under test once, with env ("NAME=value": the
// contract's variables) added to its environment, until it exits or ctx
// ends, when it is stopped. It is how a client is run, kept apart from
// how it is judged: Command runs a command line as the command does, Func
// runs a client in process (a test's, or the reference client's proof).
type Runner interface {
	Run(ctx context.Context, env []string) Process
}

// Process is how one run of the client ended.
type Process struct {
	// Started is false where the client could not be started at all (Err).
	Started bool
	Err     string
	// Exit is the exit status; Signal names the signal that ended the
	// client ("" where none did); Crashed says the client died of a
	// fault of its own (a signal such as SIGSEGV or SIGABRT, however the
	// shell reported it).
	Exit    int
	Signal  string
	Crashed bool
	// Killed says the client had not finished at its deadline
	// (--client-timeout) and was stopped.
	Killed bool
	// Stdout and Stderr are the start of each stream, up to the caps;
	// StdoutCut says stdout carried more. The tails are each stream's last
	// bytes, for evidence.
	Stdout, Stderr         []byte
	StdoutCut              bool
	StdoutTail, StderrTail []byte
	Elapsed                time.Duration
}

// Command runs a command line with sh -c, in a process group of its own
// that is killed with the scenario (wire/launch.Exec).
type Command struct {
	Line string
}

// Run runs the command once.
func (c Command) Run(ctx context.Context, env []string) Process {
	r := launch.Exec(ctx, c.Line, env, launch.ExecOptions{})
	p := Process{Started: r.Started, Exit: r.ExitCode, Killed: r.Killed, Elapsed: r.Elapsed,
		Stdout: r.Stdout.Bytes(), StdoutCut: r.Stdout.Truncated(), Stderr: r.Stderr.Bytes(),
		StdoutTail: r.Stdout.Tail(), StderrTail: r.Stderr.Tail()}
	if r.StartErr != nil {
		p.Err = r.StartErr.Error()
	}
	if r.Signal != 0 {
		p.Signal = r.Signal.String()
		p.Crashed = crashSignal(r.Signal) && !r.Killed
	}
	return p.classified()
}

// classified reads an exit status of 128+N as sh reports a child's death
// by signal N: where N is a signal a program dies of by a fault of its
// own, the client crashed.
func (p Process) classified() Process {
	if p.Signal == "" && !p.Killed && p.Exit > 128 && p.Exit <= 128+64 {
		if s := syscall.Signal(p.Exit - 128); crashSignal(s) {
			p.Crashed, p.Signal = true, s.String()
		}
	}
	return p
}

// crashSignal reports a signal a program dies of by a fault of its own.
func crashSignal(s syscall.Signal) bool {
	switch s {
	case syscall.SIGSEGV, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP:
		return true
	}
	return false
}

// Func is a client run in process: it is handed the contract's variables
// and its two streams, and returns its exit status. It must return once
// ctx ends; one that has not within a second of it is abandoned and
// counted as killed.
type Func func(ctx context.Context, env map[string]string, stdout, stderr io.Writer) int

// Run calls f.
func (f Func) Run(ctx context.Context, env []string) Process {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	out, errs := launch.NewCapture(launch.DefaultStdoutCap), launch.NewCapture(launch.DefaultStderrCap)
	start := time.Now()
	done := make(chan int, 1)
	go func() { done <- f(ctx, vars, out, errs) }()
	p := Process{Started: true}
	select {
	case p.Exit = <-done:
	case <-ctx.Done():
		select {
		case p.Exit = <-done:
		case <-time.After(time.Second):
			p.Exit = -1
		}
		p.Killed = true
	}
	p.Elapsed = time.Since(start)
	p.Stdout, p.StdoutCut, p.Stderr = out.Bytes(), out.Truncated(), errs.Bytes()
	p.StdoutTail, p.StderrTail = out.Tail(), errs.Tail()
	return p.classified()
}
