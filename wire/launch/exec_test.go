package launch

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExecCapturesAndExits(t *testing.T) {
	r := Exec(context.Background(), `printf out; printf err >&2; exit 3`, []string{"X=1"}, ExecOptions{})
	if !r.Started || r.ExitCode != 3 || r.Killed || string(r.Stdout.Bytes()) != "out" || string(r.Stderr.Bytes()) != "err" {
		t.Fatalf("%+v %q %q", r, r.Stdout.Bytes(), r.Stderr.Bytes())
	}
	r = Exec(context.Background(), `printf "$X"`, []string{"X=given"}, ExecOptions{})
	if string(r.Stdout.Bytes()) != "given" {
		t.Errorf("the environment given: %q", r.Stdout.Bytes())
	}
}

// Output is kept within its cap, however much comes; the tail is kept too.
func TestExecBoundsOutput(t *testing.T) {
	r := Exec(context.Background(), `head -c 300000 /dev/zero; printf END`, nil, ExecOptions{StdoutCap: 1000})
	if len(r.Stdout.Bytes()) != 1000 || !r.Stdout.Truncated() || r.Stdout.Total() != 300003 || !strings.HasSuffix(string(r.Stdout.Tail()), "END") || len(r.Stdout.Tail()) != TailBytes {
		t.Errorf("kept %d, total %d, tail %q…", len(r.Stdout.Bytes()), r.Stdout.Total(), r.Stdout.Tail()[len(r.Stdout.Tail())-3:])
	}
}

// At the deadline the whole group is killed, what it started in the
// background too, and Exec returns promptly.
func TestExecKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := Exec(ctx, `sleep 30 & echo $!; wait`, nil, ExecOptions{})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if !r.Killed {
		t.Errorf("not marked killed: %+v", r)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout.Bytes())))
	if err != nil {
		t.Fatalf("no pid: %q", r.Stdout.Bytes())
	}
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep %d outlived its group", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command that exits and leaves a child holding its stdout does not keep
// Exec waiting past the pipe grace, and the child is killed.
func TestExecLeftoverChild(t *testing.T) {
	start := time.Now()
	r := Exec(context.Background(), `sleep 30 & echo $!`, nil, ExecOptions{PipeGrace: 200 * time.Millisecond})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if r.Killed || r.ExitCode != 0 {
		t.Errorf("%+v", r)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(r.Stdout.Bytes())))
	deadline := time.Now().Add(3 * time.Second)
	for pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the leftover sleep %d outlived its group", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie reports a process that has ended and not been reaped (nobody
// here may reap the sleep: its parent, sh, is gone too, or is the test).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
