package distributor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
)

// Command is a Hook that runs a shell command (sh -c) in its own process
// group, which is ended with it. A command that exits non-zero fails the
// hook, with the end of its stderr.
type Command string

// Run runs the command.
func (c Command) Run(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", string(c))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%q did not return in time", string(c))
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no stderr"
		}
		return fmt.Errorf("%q: %v: %s", string(c), err, msg)
	}
	return nil
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if over := t.b.Len() - 2048; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(t.b.String()), "\n", " ⏎ ")), " ")
}
