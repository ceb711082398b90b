package launch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Exec is Start's sibling for a command that runs to its end rather than
// serving: a client under test (checks/client). It runs command once with
// sh -c, in a process group of its own, with env ("NAME=value" entries)
// added over the checker's own environment, until the command exits or ctx
// ends. At ctx's end the whole group is killed; once the command has
// exited, whatever it left running in its group is killed too, so nothing
// outlives the run. Stdout and stderr are captured under o's caps.
//
// The result is never nil-valued: a command sh could not start is Started
// false with StartErr; one sh could not find exits 127 (126 for one it
// could not execute), as sh reports it.
func Exec(ctx context.Context, command string, env []string, o ExecOptions) Result {
	o = o.withDefaults()
	res := Result{Stdout: newCapture(o.StdoutCap), Stderr: newCapture(o.StderrCap)}
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), env...) // a later entry wins over the checker's own
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = res.Stdout, res.Stderr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process that left the group, or a pipe held open by one, cannot
	// keep Wait waiting longer than this once the group is gone.
	cmd.WaitDelay = o.PipeGrace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.StartErr = err
		res.Elapsed = time.Since(start)
		return res
	}
	res.Started = true
	pgid := cmd.Process.Pid
	err := cmd.Wait()
	res.Elapsed = time.Since(start)
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // what it left running in its group
	if st := cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal()
		}
	}
	// Killed by ctx's end, not merely ended as it came: the kill is a
	// SIGKILL to the group, which sh reports as its own death by it.
	res.Killed = ctx.Err() != nil && res.Signal == syscall.SIGKILL
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) && !res.Killed {
		res.WaitErr = err
	}
	return res
}

// ExecOptions bounds what Exec keeps and waits for.
type ExecOptions struct {
	// StdoutCap and StderrCap are the bytes kept from the start of each
	// stream (DefaultStdoutCap, DefaultStderrCap); the last TailBytes are
	// kept too, wherever they fall.
	StdoutCap, StderrCap int
	// PipeGrace is how long Exec waits for the output pipes to close once
	// the command has exited or been killed (DefaultPipeGrace).
	PipeGrace time.Duration
}

// The defaults of ExecOptions.
const (
	DefaultStdoutCap = 256 << 10
	DefaultStderrCap = 64 << 10
	DefaultPipeGrace = time.Second
	// TailBytes is how much of the end of each stream is kept.
	TailBytes = 2 << 10
)

func (o ExecOptions) withDefaults() ExecOptions {
	if o.StdoutCap <= 0 {
		o.StdoutCap = DefaultStdoutCap
	}
	if o.StderrCap <= 0 {
		o.StderrCap = DefaultStderrCap
	}
	if o.PipeGrace <= 0 {
		o.PipeGrace = DefaultPipeGrace
	}
	return o
}

// Result is how a command Exec ran ended.
type Result struct {
	// Started is false where sh itself could not be started (StartErr).
	Started  bool
	StartErr error
	// ExitCode is the exit status (-1 where a signal ended sh), and Signal
	// the signal that did, or 0.
	ExitCode int
	Signal   syscall.Signal
	// Killed says ctx ended before the command did: it was killed.
	Killed bool
	// WaitErr is a failure waiting for the command other than its exit
	// status (rare: the pipes could not be read).
	WaitErr        error
	Stdout, Stderr *Capture
	Elapsed        time.Duration
}

// Capture keeps, in bounded memory, the start of what a stream carried
// (up to its cap), its last TailBytes, and how much came in all. Its
// methods are safe while the command still writes.
type Capture struct {
	mu    sync.Mutex
	cap   int
	head  []byte
	tail  []byte // a ring of the last TailBytes once past the cap
	total int64
}

func newCapture(n int) *Capture { return &Capture{cap: n} }

// NewCapture is an empty Capture keeping the first n bytes: how a caller
// running a client in process captures its output the same way.
func NewCapture(n int) *Capture { return newCapture(n) }

// Write keeps what fits and always succeeds.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.cap - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > TailBytes {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-TailBytes:]...)
	}
	return len(p), nil
}

// Bytes is the start of the stream, up to the cap.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.head...)
}

// Truncated says the stream carried more than the cap kept.
func (c *Capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(len(c.head))
}

// Total is how many bytes the stream carried.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Tail is the last TailBytes of the stream (all of it, where shorter).
func (c *Capture) Tail() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.tail...)
}
