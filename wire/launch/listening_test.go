package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// freePort is a loopback port nothing listens on (for now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.NilError(t, l.Close())
	return port
}

// refusedPort is a loopback port that refuses connections and stays so:
// one below the ephemeral range, which no test's listener on port 0 is
// handed (a port freePort found may be taken by a runner another test
// binary launches meanwhile, and then answers).
func refusedPort(t *testing.T) int {
	t.Helper()
	for _, port := range []int{1, 9, 13, 17, 19} {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return port
		}
		c.Close()
	}
	t.Skip("every low port tried is listened on here")
	return 0
}

// A runner that announces its port before it listens there (uvicorn
// handed a bound socket) is waited for: here the listener comes 300 ms
// after the announcement.
func TestListeningWaitsOutARefusal(t *testing.T) {
	port := freePort(t)
	r := start(t, fmt.Sprintf("echo POSTERN_PORT=%d; exec sleep 300", port))
	go func() {
		time.Sleep(300 * time.Millisecond)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			t.Cleanup(func() { l.Close() })
		}
	}()
	began := time.Now()
	assert.NilError(t, r.Listening(context.Background(), 10*time.Second))
	assert.Check(t, time.Since(began) >= 250*time.Millisecond, "returned after %s", time.Since(began))
}

// listeningFails launches command (which announces port and never
// listens there) and returns the *Error Listening ends in within bound.
func listeningFails(t *testing.T, command string, bound time.Duration) (*Runner, *Error) {
	t.Helper()
	short(t)
	r, err := Start(context.Background(), command, patient, nil)
	assert.NilError(t, err)
	t.Cleanup(r.Stop)
	err = r.Listening(context.Background(), bound)
	var le *Error
	assert.Assert(t, errors.As(err, &le), "%v", err)
	return r, le
}

// A port that refuses every connection up to the bound is an error that
// says what happened, and the runner is stopped.
func TestListeningGivesUpAtItsBound(t *testing.T) {
	r, le := listeningFails(t, fmt.Sprintf("echo POSTERN_PORT=%d; exec sleep 300", refusedPort(t)), 300*time.Millisecond)
	assert.Check(t, strings.Contains(le.What, "refused every connection for"), le.What)
	assert.Check(t, !groupAlive(r.cmd.Process.Pid))
}

func TestListeningNotesAnExit(t *testing.T) {
	_, le := listeningFails(t, fmt.Sprintf("echo POSTERN_PORT=%d; sleep 0.2; exit 4", refusedPort(t)), 10*time.Second)
	assert.Check(t, strings.Contains(le.What, "exited (exit status 4) after printing POSTERN_PORT"), le.What)
}
