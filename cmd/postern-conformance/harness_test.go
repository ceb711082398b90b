package main

// The harness the tests of launched processes share: one run of the
// command read from its JSON report, told apart into a verdict to judge
// and a run that cannot be judged (a launch that failed, a deadline that
// passed), which is a test error naming its cause, never a verdict.
// Scheduling and deadlines are checks/posterntest/pace's.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
)

// reported is one run of the command, read from its JSON report.
type reported struct {
	code     int
	outcomes map[string]string // rule → outcome; a SKIP says its kind: "SKIP undecided"
	reasons  map[string]string // rule → the reason of a SKIP or ERROR, or its first finding
	verdict  string
	stderr   string // the run's own stderr, and the error it ended with
	json     bool   // whether a JSON report came
	// launchErr is why a launch failed (the command's --launch, or a
	// walk's step that could not launch its runner): nothing to judge.
	launchErr string
	// ranOut are the rules the run's own deadline left undecided.
	ranOut []string
}

// runReport runs the command in process with args and --json, within ctx.
// It reports through what it returns, never through a testing.T, so that
// it may run on any goroutine.
func runReport(ctx context.Context, args ...string) reported {
	var out, errOut bytes.Buffer
	a := app()
	a.Writer, a.ErrWriter = &out, &errOut
	err := a.Run(ctx, append(append([]string{"postern-conformance"}, args...), "--json"))
	got := reported{code: exitCode(err), outcomes: map[string]string{}, reasons: map[string]string{}}
	if err != nil {
		errOut.WriteString(err.Error())
		if msg := err.Error(); strings.HasPrefix(msg, "--launch: ") {
			got.launchErr = msg
		}
	}
	got.stderr = errOut.String()
	var rep struct {
		Results []struct {
			ID, Outcome, Reason string
			Skip                *string
			Findings            []struct{ Message string }
		}
		Verdict struct{ Text string }
	}
	if json.Unmarshal(out.Bytes(), &rep) != nil {
		return got
	}
	got.json, got.verdict = true, rep.Verdict.Text
	for _, r := range rep.Results {
		got.outcomes[r.ID] = r.Outcome
		if r.Skip != nil {
			got.outcomes[r.ID] += " " + *r.Skip
		}
		if r.Reason != "" {
			got.reasons[r.ID] = r.Reason
		} else if len(r.Findings) > 0 {
			got.reasons[r.ID] = r.Findings[0].Message
		}
		switch {
		case r.Outcome != "SKIP":
		case strings.Contains(r.Reason, "could not be launched"):
			if got.launchErr == "" {
				got.launchErr = r.ID + ": " + r.Reason
			}
		case strings.Contains(r.Reason, "deadline") && strings.Contains(r.Reason, "passed"):
			got.ranOut = append(got.ranOut, r.ID)
		}
	}
	return got
}

// why is what the report said of rule id, to follow an outcome.
func (r reported) why(id string) string {
	if s := r.reasons[id]; s != "" {
		return " (" + s + ")"
	}
	return ""
}

// unjudged is why a run cannot be judged, or "": a step that failed (err),
// a launch that failed, a deadline (pc's, or the run's own) that passed.
// A run that could not be judged is a test error with its cause, never a
// verdict.
func (r reported) unjudged(pc *pace.Case, err error) string {
	switch {
	case err != nil && pc.Over():
		return pc.RanOut(err.Error())
	case err != nil:
		return err.Error()
	case r.launchErr != "":
		return "the launch failed, so nothing was judged: " + r.launchErr
	case pc.Over():
		return pc.RanOut(strings.TrimSpace(r.stderr))
	case len(r.ranOut) > 0:
		return pc.RanOut(fmt.Sprintf("the run's own --deadline passed with %d rules undecided: %s",
			len(r.ranOut), strings.Join(r.ranOut, ", ")))
	case !r.json:
		return fmt.Sprintf("exit %d and no JSON report: %s", r.code, strings.TrimSpace(r.stderr))
	}
	return ""
}

// walkBudget is the deadline of a walk with args (--grace, --window) and
// the case's, which adds the trial launch: the window and grace waited out
// by the steps that run one after another, and the steps' own work,
// launches included.
func walkBudget(args []string) (walk, whole time.Duration) {
	window, grace := entitlement.DefaultWindow, entitlement.DefaultGrace
	for i := 0; i+1 < len(args); i++ {
		v, err := strconv.ParseFloat(args[i+1], 64)
		if err != nil {
			continue
		}
		switch args[i] {
		case "--window":
			window = time.Duration(v * float64(time.Second))
		case "--grace":
			grace = time.Duration(v * float64(time.Second))
		}
	}
	walk = pace.Budget{Waits: 6 * (window + grace), Work: 15 * time.Second}.Deadline()
	return walk, walk + pace.Budget{Launches: 1}.Deadline()
}

// walkTimeout is a walk's per-request deadline for the tests: the
// default, times what -race costs. A runner under a loaded machine may
// take seconds past its own deadline for the distributor (the reference
// runner's is 2 s) to answer; the default's 5 s was missed (4.6's sweep
// saw a stream with no answer).
func walkTimeout() string { return seconds(entitlement.DefaultTimeout * pace.Slowdown()) }

// begin starts a case of t's with b's deadline, released when t ends.
func begin(t *testing.T, b pace.Budget) *pace.Case {
	pc, cancel := pace.Begin(context.Background(), b.Deadline())
	t.Cleanup(cancel)
	return pc
}

// python is the interpreter python3 on PATH runs, found once.
var python struct {
	once sync.Once
	path string
	err  error
}

// needPython is the interpreter that python3 on PATH runs, by its own path
// and shell-quoted, for a launch command or a hook; it skips or fails t
// as needTool does where there is none. Where python3 is a pyenv shim (a
// bash script that runs pyenv to find the interpreter: CI's machine), each
// start through it costs about 0.8 s of CPU and seconds of wall time on a
// loaded machine, where the interpreter itself starts in 0.07 s; the
// tests start hundreds.
func needPython(t *testing.T) string {
	t.Helper()
	needTool(t, "python3", "python3")
	python.once.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		python.path, python.err = strings.TrimSpace(string(out)), err
		if err == nil && python.path == "" {
			python.err = errors.New("it printed no sys.executable")
		}
	})
	if python.err != nil {
		t.Fatalf("python3 cannot say where its interpreter is: %v", python.err)
	}
	return shellQuote(python.path)
}

// seconds is d as a flag's value in seconds.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
