// Package launch starts a runner under test as a subprocess and discovers
// its port the way §2 describes: a runner launched so reports
// POSTERN_PORT=<port> as its first line on stdout, before any other output.
//
// The command runs under sh -c in a process group of its own, so Stop ends
// it and everything it started. Its stderr is passed through to the caller
// and its last lines are kept, so that a command that fails before it
// announces a port says why.
package launch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
)

// Runner is a runner under test that Start launched.
type Runner struct {
	// URL is the runner's origin, http://127.0.0.1:<port>.
	URL  string
	Port int

	command        string
	cmd            *exec.Cmd
	stdout, stderr *os.File // the read ends of the command's pipes
	tail           *tail
	exited         chan struct{} // closed once the command has exited
	stderrDone     chan struct{} // closed once its stderr is at EOF
	stopOnce       sync.Once
}

// Error is why a launched command could not be used as a runner.
type Error struct {
	Command string
	// What happened, e.g. "exited (exit status 3) before printing …".
	What string
	// Stderr holds the last lines the command wrote to stderr.
	Stderr []string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "command %q %s", e.Command, e.What)
	if len(e.Stderr) > 0 {
		b.WriteString("; the last lines of its stderr:")
		for _, l := range e.Stderr {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

const (
	// maxFirstLine bounds the first stdout line: POSTERN_PORT=65535 is 18
	// bytes, and a command that prints more with no newline is not
	// announcing a port.
	maxFirstLine = 512
)

var (
	// exitGrace is how long Start waits, once the command is known to be
	// gone, for the rest of what it wrote.
	exitGrace = 2 * time.Second
	// stopGrace is how long Stop lets the process group end on SIGTERM
	// before it sends SIGKILL.
	stopGrace = 3 * time.Second
)

// Start runs command with sh -c and waits up to timeout for its first
// stdout line, which must be POSTERN_PORT=<port> with a port from 1 to
// 65535. The command's stderr is copied to stderr (which may be nil). On
// success the caller must call Stop; on failure nothing is left running,
// and the error is an *Error, or one that wraps ctx's error and says the
// launch was still waiting for the port when ctx ended.
func Start(ctx context.Context, command string, timeout time.Duration, stderr io.Writer) (*Runner, error) {
	return StartWith(ctx, command, nil, timeout, stderr)
}

// StartWith is Start with env ("NAME=value" entries) added to the
// command's environment, over the checker's own: how the entitlement
// harness hands a runner its distributor and its token.
func StartWith(ctx context.Context, command string, env []string, timeout time.Duration, stderr io.Writer) (*Runner, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	r := &Runner{command: command, tail: &tail{}, exited: make(chan struct{}), stderrDone: make(chan struct{})}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	r.stdout, r.stderr = outR, errR
	r.cmd = exec.Command("sh", "-c", command)
	if len(env) > 0 {
		r.cmd.Env = append(os.Environ(), env...)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	err = r.cmd.Start()
	outW.Close() // the command holds its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, &Error{Command: command, What: "could not be started: " + err.Error()}
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	go func() {
		_, _ = io.Copy(io.MultiWriter(stderr, r.tail), errR)
		close(r.stderrDone)
	}()

	first := &firstLine{got: make(chan struct{})}
	go first.read(outR)

	started := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-first.got:
	case <-r.exited:
		// What it printed before it went is still in the pipe.
		select {
		case <-first.got:
		case <-time.After(exitGrace):
			return nil, r.fail("exited (%s) before printing POSTERN_PORT=<port>", r.status())
		}
	case <-timer.C:
		what := fmt.Sprintf("printed no POSTERN_PORT=<port> line within %s", timeout)
		if so, _ := first.sofar(); so != "" {
			what += fmt.Sprintf(" (its stdout so far, with no line ending: %q)", clip(so, 80))
		}
		return nil, r.fail("%s", what)
	case <-ctx.Done():
		r.Stop()
		// The caller's deadline, not the launch's: say which wait it cut.
		return nil, fmt.Errorf("command %q was still starting, with no POSTERN_PORT=<port> line after %s, when it was stopped: %w",
			command, time.Since(started).Round(time.Millisecond), ctx.Err())
	}
	line, full := first.sofar()
	switch {
	case line == "":
		select {
		case <-r.exited:
			return nil, r.fail("exited (%s) before printing POSTERN_PORT=<port>", r.status())
		case <-time.After(exitGrace):
			return nil, r.fail("closed its stdout before printing POSTERN_PORT=<port>")
		}
	case full:
		return nil, r.fail("began its stdout with %d bytes and no newline (%q), not a POSTERN_PORT=<port> line (§2)", maxFirstLine, clip(line, 40))
	}
	port, err := parseLine(line)
	if err != nil {
		return nil, r.fail("%s", err)
	}
	r.Port = port
	r.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	return r, nil
}

// firstLine reads the command's first stdout line, in bounded memory, and
// then drains the rest until the pipe closes.
type firstLine struct {
	mu   sync.Mutex
	line []byte
	full bool          // maxFirstLine bytes came with no newline
	got  chan struct{} // closed at the newline, the limit, or the end
}

func (f *firstLine) read(out io.Reader) {
	br := bufio.NewReader(out)
	for {
		c, err := br.ReadByte()
		if err != nil {
			break
		}
		f.mu.Lock()
		f.line = append(f.line, c)
		f.full = len(f.line) >= maxFirstLine && c != '\n'
		stop := c == '\n' || f.full
		f.mu.Unlock()
		if stop {
			break
		}
	}
	close(f.got)
	_, _ = io.Copy(io.Discard, br) // keep the pipe drained until Stop
}

// sofar is what has been read, and whether it reached the limit.
func (f *firstLine) sofar() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.line), f.full
}

// parseLine reads the discovery line (§2). A line ending or trailing
// blanks are forgiven; anything else is not the line.
func parseLine(line string) (int, error) {
	line = strings.TrimRight(line, " \t\r\n")
	value, ok := strings.CutPrefix(line, "POSTERN_PORT=")
	if !ok {
		return 0, fmt.Errorf("printed %q as its first stdout line: a launched runner must print POSTERN_PORT=<port> before any other output (§2)", clip(line, 80))
	}
	n, err := strconv.Atoi(value)
	if err != nil || value == "" || strings.ContainsAny(value[:1], "+-") || n < 1 || n > 65535 {
		return 0, fmt.Errorf("printed POSTERN_PORT=%q: the port must be a number from 1 to 65535", clip(value, 40))
	}
	return n, nil
}

// fail stops the command and makes the error for what, with the end of
// its stderr.
func (r *Runner) fail(format string, args ...any) *Error {
	what := fmt.Sprintf(format, args...)
	r.Stop() // which waits for the end of its stderr
	return &Error{Command: r.command, What: what, Stderr: r.tail.lines()}
}

// status describes how the command ended, once it has.
func (r *Runner) status() string {
	if s := r.cmd.ProcessState; s != nil {
		return s.String()
	}
	return "still running"
}

// Exited reports whether the command has ended, and how, so a caller can
// tell a runner that died during the check from one that misbehaved.
func (r *Runner) Exited() (bool, string) {
	select {
	case <-r.exited:
		return true, r.status()
	default:
		return false, ""
	}
}

// Stop ends the runner and every process in its group: SIGTERM, then
// SIGKILL for what is left after a grace period. It is safe to call more
// than once.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() {
		pgid := r.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		deadline := time.Now().Add(stopGrace)
		select {
		case <-r.exited:
		case <-time.After(stopGrace):
		}
		// The group may outlive its leader: wait for the rest, then kill
		// whatever ignored SIGTERM.
		for groupAlive(pgid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-r.exited
		// A SIGKILL is delivered at once but a process takes a moment to
		// die, longer on a loaded machine: the rest of the group is
		// waited for, within bounds, so that Stop returns once it is gone.
		for killed := time.Now().Add(exitGrace); groupAlive(pgid) && time.Now().Before(killed); {
			time.Sleep(5 * time.Millisecond)
		}
		// With the group gone, its stderr ends at once, unless a process
		// that left the group still holds it.
		select {
		case <-r.stderrDone:
		case <-time.After(exitGrace):
		}
		r.stdout.Close()
		r.stderr.Close()
	})
}

// groupAlive reports whether a process of the group is still running. A
// zombie does not count: nobody here may reap it, and it holds nothing.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no way to tell the living from zombies here
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold anything but ")".
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// tail keeps the last lines written to it, each cut short, in bounded
// memory however much is written.
type tail struct {
	mu   sync.Mutex
	done []string
	cur  []byte
}

const (
	tailLines = 8
	tailWidth = 200 // bytes kept of a line
)

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			t.done = append(t.done, string(t.cur))
			if len(t.done) > tailLines {
				t.done = t.done[1:]
			}
			t.cur = t.cur[:0]
			continue
		}
		if len(t.cur) < tailWidth+1 { // one past, to know it was cut
			t.cur = append(t.cur, c)
		}
	}
	return len(p), nil
}

// lines are the kept lines, made safe to print on a terminal.
func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := append([]string(nil), t.done...)
	if len(t.cur) > 0 {
		all = append(all, string(t.cur))
	}
	if len(all) > tailLines {
		all = all[len(all)-tailLines:]
	}
	for i, l := range all {
		all[i] = printable(l)
	}
	return all
}

// printable cuts l to tailWidth and replaces what a terminal would act on.
func printable(l string) string {
	cut := len(l) > tailWidth
	if cut {
		l = l[:tailWidth]
	}
	l = strings.TrimRight(strings.ToValidUTF8(l, "\uFFFD"), "\r")
	l = strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return '\uFFFD'
		}
		return r
	}, l)
	if cut {
		l += "…"
	}
	return l
}

// clip cuts s to n bytes on a character boundary, for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
