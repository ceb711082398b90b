package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// patient is a launch timeout no test below waits out unless it means to:
// each command either announces itself or fails at once.
const patient = 30 * time.Second

// syncBuffer is a bytes.Buffer safe to write from the stderr copier.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// short makes the grace periods short for one test, so a test of a
// command that holds on does not sit them out.
func short(t *testing.T) {
	oldExit, oldStop := exitGrace, stopGrace
	exitGrace, stopGrace = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { exitGrace, stopGrace = oldExit, oldStop })
}

// start launches command and fails the test unless it is running.
func start(t *testing.T, command string) *Runner {
	t.Helper()
	r, err := Start(context.Background(), command, patient, nil)
	assert.NilError(t, err)
	t.Cleanup(r.Stop)
	return r
}

// failure launches command and returns the *Error it must fail with.
func failure(t *testing.T, command string, timeout time.Duration) *Error {
	t.Helper()
	r, err := Start(context.Background(), command, timeout, nil)
	if r != nil {
		r.Stop()
		t.Fatalf("%q: started, want an error", command)
	}
	var le *Error
	assert.Assert(t, errors.As(err, &le), "%q: %v", command, err)
	assert.Equal(t, le.Command, command)
	return le
}

func TestStart(t *testing.T) {
	r := start(t, "echo POSTERN_PORT=8787; exec sleep 300")
	assert.Equal(t, r.Port, 8787)
	assert.Equal(t, r.URL, "http://127.0.0.1:8787")
	exited, _ := r.Exited()
	assert.Check(t, !exited)
	pgid := r.cmd.Process.Pid
	assert.Check(t, groupAlive(pgid))
	r.Stop()
	r.Stop() // twice is harmless
	assert.Check(t, !groupAlive(pgid))
	exited, status := r.Exited()
	assert.Check(t, exited)
	assert.Check(t, is.Contains(status, "signal"))
}

func TestStartForgivesALineEnding(t *testing.T) {
	r := start(t, `printf 'POSTERN_PORT=65535 \r\n'; exec sleep 300`)
	assert.Equal(t, r.Port, 65535)
	r = start(t, `printf 'POSTERN_PORT=1'`)
	assert.Equal(t, r.Port, 1, "a line never ended is read once stdout closes")
}

func TestStartPassesStderrThrough(t *testing.T) {
	var log syncBuffer
	r, err := Start(context.Background(), "echo listening >&2; echo POSTERN_PORT=9000; echo more >&2; exec sleep 300", patient, &log)
	assert.NilError(t, err)
	// What it writes after the port line arrives while it runs.
	for end := time.Now().Add(patient); !strings.Contains(log.String(), "more") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	r.Stop()
	assert.Equal(t, log.String(), "listening\nmore\n")
}

func TestExitsBeforeThePort(t *testing.T) {
	e := failure(t, "echo the key is missing >&2; exit 3", patient)
	assert.Equal(t, e.What, "exited (exit status 3) before printing POSTERN_PORT=<port>")
	assert.DeepEqual(t, e.Stderr, []string{"the key is missing"})
	assert.Check(t, is.Equal(e.Error(), `command "echo the key is missing >&2; exit 3" exited (exit status 3) before printing POSTERN_PORT=<port>; the last lines of its stderr:
    the key is missing`))

	e = failure(t, "exit 0", patient)
	assert.Equal(t, e.What, "exited (exit status 0) before printing POSTERN_PORT=<port>")
	assert.Check(t, is.Len(e.Stderr, 0))
	assert.Check(t, !strings.Contains(e.Error(), "stderr"), "no stderr, no heading for it")

	e = failure(t, "kill -9 $$", patient)
	assert.Check(t, is.Contains(e.What, "exited (signal: killed)"))
}

func TestExitKeepsOnlyTheLastStderrLines(t *testing.T) {
	e := failure(t, `i=0; while [ $i -lt 50 ]; do echo line $i >&2; i=$((i+1)); done; printf 'no newline' >&2; exit 1`, patient)
	assert.Equal(t, len(e.Stderr), tailLines)
	assert.Equal(t, e.Stderr[0], "line 43")
	assert.Equal(t, e.Stderr[tailLines-1], "no newline")
}

func TestStderrTailIsSafeToPrint(t *testing.T) {
	e := failure(t, `printf 'a\033[31mred\n' >&2; head -c 5000 /dev/zero | tr '\0' x >&2; exit 1`, patient)
	assert.Assert(t, is.Len(e.Stderr, 2))
	assert.Equal(t, e.Stderr[0], "a\uFFFD[31mred")
	assert.Equal(t, e.Stderr[1], strings.Repeat("x", tailWidth)+"…")
}

func TestExitsWhileAChildHoldsStdout(t *testing.T) {
	short(t)
	e := failure(t, "sleep 300 & exit 4", patient)
	assert.Equal(t, e.What, "exited (exit status 4) before printing POSTERN_PORT=<port>")
}

func TestClosesStdoutAndStays(t *testing.T) {
	short(t)
	e := failure(t, "exec >&-; exec sleep 300", patient)
	assert.Equal(t, e.What, "closed its stdout before printing POSTERN_PORT=<port>")
}

func TestFirstLineIsNotThePort(t *testing.T) {
	e := failure(t, "echo hello; echo POSTERN_PORT=8787; exec sleep 300", patient)
	assert.Equal(t, e.What, `printed "hello" as its first stdout line: a launched runner must print POSTERN_PORT=<port> before any other output (§2)`)

	e = failure(t, "echo 'postern_port=8787'; exec sleep 300", patient)
	assert.Check(t, is.Contains(e.What, `printed "postern_port=8787" as its first stdout line`))

	e = failure(t, `head -c 2000 /dev/zero | tr '\0' x; exec sleep 300`, patient)
	assert.Check(t, is.Contains(e.What, "began its stdout with 512 bytes and no newline"))
}

func TestPortIsNotANumber(t *testing.T) {
	for _, port := range []string{"", "abc", "0", "65536", "-1", "+80", "80x", "99999999999999999999", " 80"} {
		e := failure(t, "echo 'POSTERN_PORT="+port+"'; exec sleep 300", patient)
		assert.Check(t, is.Contains(e.What, "the port must be a number from 1 to 65535"), "%q: %s", port, e.What)
		assert.Check(t, is.Contains(e.What, "POSTERN_PORT="), "%q", port)
	}
}

func TestNoPortWithinTheTimeout(t *testing.T) {
	e := failure(t, "echo starting >&2; exec sleep 300", 300*time.Millisecond)
	assert.Equal(t, e.What, "printed no POSTERN_PORT=<port> line within 300ms")
	assert.DeepEqual(t, e.Stderr, []string{"starting"})

	e = failure(t, "printf POSTERN_PORT=8787; exec sleep 300", 300*time.Millisecond)
	assert.Equal(t, e.What, `printed no POSTERN_PORT=<port> line within 300ms (its stdout so far, with no line ending: "POSTERN_PORT=8787")`)
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r, err := Start(ctx, "exec sleep 300", patient, nil)
	assert.Check(t, r == nil)
	assert.Check(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Check(t, strings.Contains(fmt.Sprint(err), "no POSTERN_PORT=<port> line after"), "the error names the wait it cut: %v", err)
}

func TestStopEndsTheWholeGroup(t *testing.T) {
	r := start(t, "sleep 300 & sleep 301 & echo POSTERN_PORT=1234; wait")
	pgid := r.cmd.Process.Pid
	r.Stop()
	assert.Check(t, !groupAlive(pgid), "the children went with it")
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	short(t)
	r := start(t, "trap '' TERM; echo POSTERN_PORT=1234; while :; do sleep 1; done")
	pgid := r.cmd.Process.Pid
	r.Stop()
	assert.Check(t, !groupAlive(pgid))
}

func TestStartFailureLeavesNothingRunning(t *testing.T) {
	short(t)
	var log syncBuffer
	// The child writes its group ID where the test can read it, then the
	// command fails with the child still running.
	_, err := Start(context.Background(), `echo "pgid $$" >&2; sleep 300 & echo nope`, patient, &log)
	assert.Assert(t, err != nil)
	var pgid int
	_, scanErr := fmt.Sscanf(log.String(), "pgid %d", &pgid)
	assert.NilError(t, scanErr)
	assert.Check(t, !groupAlive(pgid))
}

func TestStartWithAddsToTheEnvironment(t *testing.T) {
	r, err := StartWith(context.Background(), `echo POSTERN_PORT=$X_PORT; exec sleep 30`, []string{"X_PORT=4242"}, 5*time.Second, nil)
	assert.NilError(t, err)
	defer r.Stop()
	assert.Equal(t, r.Port, 4242)
}
