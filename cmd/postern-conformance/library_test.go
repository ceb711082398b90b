package main

// Tests of the flags that map onto the library: --strict-baseline,
// --deadline and the other durations, and --launch's errors as a user meets
// them.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/urfave/cli/v3"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// runErr is run that also returns the exit message, which exitCode would
// print on stderr.
func runErr(t *testing.T, args ...string) (code int, out, msg string) {
	t.Helper()
	var buf bytes.Buffer
	a := app()
	a.Writer, a.ErrWriter = &buf, &buf
	err := a.Run(context.Background(), append([]string{"postern-conformance"}, args...))
	var ee exitError
	if errors.As(err, &ee) {
		msg = ee.msg
	} else if err != nil {
		msg = err.Error()
	}
	return exitCode(err), buf.String(), msg
}

// passingRule is a rule the reference runner passes in default mode.
func passingRule(t *testing.T) string {
	t.Helper()
	for _, r := range runner.All() {
		if r.Level == 1 && r.Section == "4.4" {
			return r.ID
		}
	}
	t.Fatal("no §4.4 Level 1 rule")
	return ""
}

func TestStrictBaseline(t *testing.T) {
	fault, err := fixtures.LookupFault("bare-405")
	assert.NilError(t, err)
	pass := passingRule(t)
	file := filepath.Join(t.TempDir(), "baseline.txt")
	assert.NilError(t, os.WriteFile(file, []byte("# known\n"+fault.Rule+"\n"+pass+"  # fixed since\n"), 0o644))
	sel := []string{"--rule", fault.Rule, "--rule", pass, "--no-color"}

	code, out, _ := runErr(t, append([]string{"demo", "--fault", fault.Name, "--baseline", file}, sel...)...)
	assert.Equal(t, code, 0, "a stale entry alone does not fail the run: %s", out)
	assert.Check(t, is.Contains(out, "baseline.txt:3: "+pass+" is in the baseline but now PASS; delete its line"))

	code, out, msg := runErr(t, append([]string{"demo", "--fault", fault.Name, "--baseline", file, "--strict-baseline"}, sel...)...)
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(msg, "the baseline is stale"))
	assert.Check(t, is.Contains(msg, pass+" (now PASS) no longer fails; delete its line"))
	assert.Check(t, !strings.Contains(msg, fault.Rule), "the excused FAIL is not stale")

	// Without the fault, its own entry is stale too.
	code, _, msg = runErr(t, append([]string{"demo", "--baseline", file, "--strict-baseline"}, sel...)...)
	assert.Equal(t, code, 1)
	assert.Check(t, is.Contains(msg, fault.Rule+" (now PASS)"))

	// A rule the run did not check is not stale: a later run may decide it.
	code, out, _ = runErr(t, "demo", "--fault", fault.Name, "--baseline", file, "--strict-baseline", "--rule", fault.Rule)
	assert.Equal(t, code, 0, out)
	assert.Check(t, !strings.Contains(out, "is in the baseline"))

	code, _, msg = runErr(t, "demo", "--strict-baseline")
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "--strict-baseline needs --baseline FILE"))
}

func TestBaselineErrorsNameFileAndLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "baseline.txt")
	assert.NilError(t, os.WriteFile(file, []byte(passingRule(t)+"\n\n9.9/not-a-rule  # typo\n"), 0o644))
	code, _, msg := runErr(t, "demo", "--baseline", file)
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "--baseline: "+file+`:3: "9.9/not-a-rule" is not a rule ID`))

	code, _, msg = runErr(t, "demo", "--baseline", filepath.Join(t.TempDir(), "absent"))
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "no such file"))
}

func TestFailSaysWhyOnExit(t *testing.T) {
	fault, err := fixtures.LookupFault("bare-405")
	assert.NilError(t, err)
	code, _, msg := runErr(t, "demo", "--fault", fault.Name, "--rule", fault.Rule)
	assert.Equal(t, code, 1)
	assert.Equal(t, msg, "1 rule FAILs not excused by a baseline: "+fault.Rule)
}

// parseOptions maps args through the check flags, as runCheck does.
func parseOptions(t *testing.T, args ...string) (runner.Options, error) {
	t.Helper()
	var o runner.Options
	var oerr error
	c := &cli.Command{Name: "x", Flags: checkFlags(), Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
		Action: func(_ context.Context, cmd *cli.Command) error {
			o, oerr = options(cmd, "http://127.0.0.1:8787")
			return nil
		}}
	assert.NilError(t, c.Run(context.Background(), append([]string{"x"}, args...)))
	return o, oerr
}

func TestDeadline(t *testing.T) {
	o, err := parseOptions(t)
	assert.NilError(t, err)
	assert.Equal(t, o.Deadline, time.Duration(0), "left out: checks picks its default")
	o, err = parseOptions(t, "--deadline", "2.5")
	assert.NilError(t, err)
	assert.Equal(t, o.Deadline, 2500*time.Millisecond)

	for _, bad := range []string{"0", "-1", "NaN", "inf", "1e12"} {
		_, err := parseOptions(t, "--deadline", bad)
		assert.Check(t, is.ErrorContains(err, "--deadline "), bad)
		assert.Check(t, is.ErrorContains(err, "leave --deadline out for the default"), bad)
	}
	code, _, msg := runErr(t, "--deadline", "-3", "http://127.0.0.1:1")
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "--deadline -3: give a positive number of seconds"))

	code, out, _ := runErr(t, "demo", "--deadline", "120", "--rule", passingRule(t), "--no-color")
	assert.Equal(t, code, 0, out)
}

// TestDeadlineDefaultIsWhatHelpSays holds the help text to
// runner.DefaultDeadline.
func TestDeadlineDefaultIsWhatHelpSays(t *testing.T) {
	assert.Equal(t, deadlineDefault, "2 × --timeout + 5, or 600 with --execute")
	for _, timeout := range []time.Duration{time.Second, 3500 * time.Millisecond, 10 * time.Second} {
		assert.Equal(t, runner.DefaultDeadline(timeout, false), 2*timeout+5*time.Second)
		assert.Equal(t, runner.DefaultDeadline(timeout, true), 600*time.Second)
	}
}

func TestDurationFlags(t *testing.T) {
	o, err := parseOptions(t, "--timeout", "0.25", "--patience", "0")
	assert.NilError(t, err)
	assert.Equal(t, o.Timeout, 250*time.Millisecond)
	assert.Equal(t, o.Patience, time.Duration(0), "0 is the default patience")
	for _, args := range [][]string{
		{"--timeout", "0"}, {"--timeout", "NaN"}, {"--timeout", "-inf"}, {"--timeout", "1e300"},
		{"--patience", "-1"}, {"--patience", "NaN"},
	} {
		_, err := parseOptions(t, args...)
		assert.Check(t, is.ErrorContains(err, args[0]+" "), "%v", args)
	}
	code, _, msg := runErr(t, "--launch", "exec sleep 300", "--launch-timeout", "0")
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "--launch-timeout 0: give a positive number of seconds"))
}

func TestLaunchErrors(t *testing.T) {
	for _, c := range []struct{ command, want string }{
		{"echo no key >&2; exit 3", `--launch: command "echo no key >&2; exit 3" exited (exit status 3) before printing POSTERN_PORT=<port>; the last lines of its stderr:
    no key`},
		{"echo hello; exec sleep 300", `printed "hello" as its first stdout line`},
		{"echo POSTERN_PORT=70000; exec sleep 300", "the port must be a number from 1 to 65535"},
	} {
		code, _, msg := runErr(t, "--launch", c.command)
		assert.Check(t, is.Equal(code, 2), c.command)
		assert.Check(t, is.Contains(msg, c.want), c.command)
	}
	code, _, msg := runErr(t, "--launch", "exec sleep 300", "--launch-timeout", "0.2")
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(msg, "printed no POSTERN_PORT=<port> line within 200ms"))
}

func TestHelpGroupsTheNewFlags(t *testing.T) {
	_, out, _ := runErr(t, "--help")
	_, rest, ok := strings.Cut(out, "Probing:")
	assert.Assert(t, ok, out)
	probing, rest, ok := strings.Cut(rest, "Reports:")
	assert.Assert(t, ok, out)
	_, rules, ok := strings.Cut(rest, "Rules:")
	assert.Assert(t, ok, out)
	assert.Check(t, is.Contains(probing, "--deadline SECONDS"))
	assert.Check(t, is.Contains(probing, "the rules not yet decided SKIP as undecided, and the verdict is not determined (exit 2)"))
	assert.Check(t, is.Contains(probing, "(default: 2 × --timeout + 5, or 600 with --execute)"))
	assert.Check(t, is.Contains(rules, "--strict-baseline"))
}
