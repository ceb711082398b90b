package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// launched is a runner under test that the checker started itself (§2: a
// runner launched as a subprocess reports POSTERN_PORT=<port> on stdout
// before any other output).
type launched struct {
	cmd *exec.Cmd
	url string
}

func startLaunched(ctx context.Context, command string, wait time.Duration, log io.Writer) (*launched, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--launch %q: %w", command, err)
	}
	l := &launched{cmd: cmd}
	type first struct {
		line string
		err  error
	}
	got := make(chan first, 1)
	br := bufio.NewReader(out)
	go func() {
		line, err := br.ReadString('\n')
		got <- first{strings.TrimRight(line, "\r\n"), err}
		_, _ = io.Copy(io.Discard, br) // keep the pipe drained
	}()
	select {
	case f := <-got:
		port, ok := strings.CutPrefix(f.line, "POSTERN_PORT=")
		n, perr := strconv.Atoi(port)
		if !ok || perr != nil || n <= 0 || n > 65535 {
			l.stop()
			if f.err != nil && f.line == "" {
				return nil, fmt.Errorf("--launch %q exited or closed stdout before printing POSTERN_PORT=<port>", command)
			}
			return nil, fmt.Errorf("--launch %q: its first stdout line must be POSTERN_PORT=<port> (§2), got %q", command, f.line)
		}
		l.url = fmt.Sprintf("http://127.0.0.1:%d", n)
		return l, nil
	case <-time.After(wait):
		l.stop()
		return nil, fmt.Errorf("--launch %q printed no POSTERN_PORT=<port> within %s", command, wait)
	case <-ctx.Done():
		l.stop()
		return nil, ctx.Err()
	}
}

// stop ends the runner and everything it started.
func (l *launched) stop() {
	if l.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = l.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
