package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// runMsg is run, with the one-line message the command exits with.
func runMsg(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	a := app()
	a.Writer, a.ErrWriter = &out, &out
	err := a.Run(context.Background(), append([]string{"postern-conformance"}, args...))
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return exitCode(err), out.String() + msg
}

// runner starts a reference runner with faults for the test.
func refRunner(t *testing.T, faults ...string) string {
	t.Helper()
	srv, err := fixtures.Start(fixtures.Config{Faults: faults}, 0)
	assert.NilError(t, err)
	t.Cleanup(srv.Close)
	return srv.URL
}

func closedPort(t *testing.T) string {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	assert.NilError(t, err)
	srv.Close()
	return srv.URL
}

func TestFleetExitIsTheWorstRunners(t *testing.T) {
	good, other := refRunner(t), refRunner(t)
	bad := refRunner(t, "bare-405")
	gone := closedPort(t)

	code, out := run(t, good, other, "--origin", fixtures.AllowedOrigin, "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "=== runner 2 of 2 ==="))
	assert.Check(t, is.Contains(out, "=== the fleet: 2 runners ==="))
	assert.Check(t, is.Contains(out, "2 conformant  0 nonconformant  0 not checked"))

	code, out = runMsg(t, good, bad, "--origin", fixtures.AllowedOrigin, "--no-color")
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(out, "of 2 runners, 1 fails ("+bad+")"))

	code, out = runMsg(t, good, bad, gone, "--origin", fixtures.AllowedOrigin, "--no-color")
	assert.Equal(t, code, 2, out)
	assert.Check(t, is.Contains(out, "Not checked: cannot reach"))
	assert.Check(t, is.Contains(out, fixtures.AgentID), "the table names each runner's agent")
	for _, want := range []string{"1 could not be checked", gone, "1 fails (" + bad + ")"} {
		assert.Check(t, is.Contains(out, want))
	}
}

func TestFleetTargetsFile(t *testing.T) {
	good, bad := refRunner(t), refRunner(t, "bare-405")
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.txt")
	assert.NilError(t, os.WriteFile(file, []byte("# the fleet\n"+good+"\n\n"+bad+"  # a known breach\n"), 0o644))
	baseline := filepath.Join(dir, "baseline.txt")

	code, out := run(t, "--targets", file, "--write-baseline", baseline, "--no-color")
	assert.Equal(t, code, 1, out)
	written, err := os.ReadFile(baseline)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(written), "2.1/wrong-method"))

	// One baseline serves every runner.
	code, out = run(t, "--targets", file, "--baseline", baseline, "--strict-baseline", "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "KNOWN"))

	// TARGETs and --targets add up; stdin is "-".
	a := app()
	var buf bytes.Buffer
	a.Writer, a.ErrWriter, a.Reader = &buf, &buf, strings.NewReader(bad+"\n")
	code = exitCode(a.Run(context.Background(), []string{"postern-conformance", good, "--targets", "-", "--no-color"}))
	assert.Equal(t, code, 1, buf.String())
	assert.Check(t, is.Contains(buf.String(), "=== runner 2 of 2 ==="))
}

func TestFleetRefusesWhatItCannotCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	assert.NilError(t, os.WriteFile(bad, []byte("http://127.0.0.1:1\n# fine\nftp://nowhere\n"), 0o644))
	empty := filepath.Join(dir, "empty.txt")
	assert.NilError(t, os.WriteFile(empty, []byte("# nobody yet\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--targets", bad}, bad + ":3: target \"ftp://nowhere\" must start with http://"},
		{[]string{"--targets", empty}, "lists no runner"},
		{[]string{"--targets", filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{"http://127.0.0.1:1", "http://127.0.0.1:1/postern/v0"}, "argument 2: http://127.0.0.1:1 is already named at argument 1"},
		{[]string{"http://127.0.0.1:1", "nope://x"}, "argument 2: target \"nope://x\""},
		{[]string{"--launch", "true", "http://127.0.0.1:1", "http://127.0.0.1:2"}, "--launch starts one runner under test"},
		{[]string{"--launch", "true", "--targets", bad}, "--launch starts one runner under test"},
		{[]string{"--fleet-parallel", "0", "http://127.0.0.1:1", "http://127.0.0.1:2"}, "--fleet-parallel 0: give 1 to 64"},
	} {
		code, out := runMsg(t, c.args...)
		assert.Check(t, is.Equal(code, 2), "%v: %s", c.args, out)
		assert.Check(t, is.Contains(out, c.want), "%v", c.args)
	}
}

// One target, whichever way it is given, is the plain check of it.
func TestAFleetOfOneIsThePlainCheck(t *testing.T) {
	good := refRunner(t)
	file := filepath.Join(t.TempDir(), "one.txt")
	assert.NilError(t, os.WriteFile(file, []byte(good+"\n"), 0o644))
	_, alone := run(t, good, "--json")
	_, listed := run(t, "--targets", file, "--json")
	var a, b map[string]any
	assert.NilError(t, json.Unmarshal([]byte(alone), &a))
	assert.NilError(t, json.Unmarshal([]byte(listed), &b))
	assert.Equal(t, b["format"], "postern-conformance/report")
	delete(a, "started")
	delete(a, "elapsed_ms")
	delete(b, "started")
	delete(b, "elapsed_ms")
	assert.Equal(t, len(a), len(b))
	assert.DeepEqual(t, a["verdict"], b["verdict"])
	assert.DeepEqual(t, a["counts"], b["counts"])
}

func TestFleetJSONAndJUnit(t *testing.T) {
	good, bad := refRunner(t), refRunner(t, "bare-405")
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out := run(t, good, bad, "--json", "--junit", junit)
	assert.Equal(t, code, 1)
	validates(t, reportSchema(t, report.FleetSchemaRef), out)

	raw, err := os.ReadFile(junit)
	assert.NilError(t, err)
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	assert.NilError(t, xml.Unmarshal(raw, &suites))
	assert.Equal(t, len(suites.Suites), 2)
	assert.Equal(t, suites.Failures, 1)
}

// In a workflow a fleet annotates every runner's findings and writes each
// runner's Markdown summary, one after the other; --github-output, which
// gives one runner's outputs, is refused.
func TestFleetInAWorkflow(t *testing.T) {
	good, bad := refRunner(t), refRunner(t, "bare-405")
	gone := closedPort(t)
	md := filepath.Join(t.TempDir(), "summary.md")
	code, out := runMsg(t, good, bad, gone, "--github", "--markdown", md, "--no-color")
	assert.Equal(t, code, 2, out)
	assert.Check(t, is.Contains(out, "::error "), "the breach is annotated")
	assert.Check(t, is.Contains(out, "2.1/wrong-method"))
	raw, err := os.ReadFile(md)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(raw), "Not checked: cannot reach"))
	assert.Check(t, strings.Count("\n"+string(raw), "\n## ") == 3, "a section per runner:\n%s", raw)

	code, out = runMsg(t, good, bad, "--github-output", filepath.Join(t.TempDir(), "out"))
	assert.Equal(t, code, 2)
	assert.Check(t, is.Contains(out, "--github-output gives the step outputs of one runner"))
}
