package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// asCommand lets demo client run this test binary as the reference
// client: TestMain hands a child started with the variable to the command.
func asCommand(t *testing.T) { t.Setenv("POSTERN_CONFORMANCE_AS_COMMAND", "1") }

// demo client runs the reference client through the real command path
// (this binary, re-run with sh -c as reference-client) and ends
// conformant; every report format is written for the mode, the JSON one
// valid against its schema.
func TestDemoClientIsConformant(t *testing.T) {
	asCommand(t)
	dir := t.TempDir()
	files := map[string]string{"junit": filepath.Join(dir, "junit.xml"), "markdown": filepath.Join(dir, "summary.md"), "github-output": filepath.Join(dir, "out.txt")}
	code, out := run(t, "demo", "client", "--json", "--junit", files["junit"], "--markdown", files["markdown"], "--github-output", files["github-output"], "--github=false")
	assert.Equal(t, code, 0, out)

	validates(t, reportSchema(t, ""), out)
	var rep struct {
		Target  string
		Counts  struct{ Fail, Warn, Pass, Skip int }
		Verdict struct {
			Conformant bool
			Text       string
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &rep))
	assert.Check(t, rep.Verdict.Conformant, rep.Verdict.Text)
	assert.Check(t, is.Equal(rep.Counts.Pass, len(client.All())), out)
	assert.Check(t, is.Contains(rep.Target, "reference client"))

	b, err := os.ReadFile(files["junit"])
	assert.NilError(t, err)
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct{} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	assert.NilError(t, xml.Unmarshal(b, &suites))
	assert.Check(t, is.Equal(suites.Failures, 0))
	assert.Check(t, is.Len(suites.Suites[0].Cases, len(client.All())))
	md, err := os.ReadFile(files["markdown"])
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(md), "Postern client check"))
	assert.Check(t, is.Contains(string(md), "Client conformant"))
	gh, err := os.ReadFile(files["github-output"])
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(gh), "verdict=conformant"))
}

// A planted fault, through the command: exit 1, the rule named, its
// GitHub annotation written.
func TestDemoClientFault(t *testing.T) {
	asCommand(t)
	code, out := run(t, "demo", "client", "--fault", "no-lone-cr", "--scenario", "lone-cr", "--no-color", "--github")
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(out, "FAIL  a client reads lone CR line ends"))
	assert.Check(t, is.Contains(out, "::error title=4.3/client-lone-cr"), out)
	assert.Check(t, is.Contains(out, "Client nonconformant: 1 MUST rule broken."))

	code, out = run(t, "demo", "client", "--list-faults")
	assert.Equal(t, code, 0)
	assert.Check(t, is.Contains(out, "retries-forever"))
	code, out = run(t, "client", "--list-scenarios")
	assert.Equal(t, code, 0)
	assert.Check(t, is.Contains(out, "level-2-stream"))
}

// Bad input is one line and exit 2, never a page of FAILs.
func TestClientBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"client"}, "no client to check"},
		{[]string{"client", "--command", "no-such-client-7f3a9c"}, "sh found no such command (exit 127)"},
		{[]string{"client", "--command", "true"}, "The adapter is broken"},
		{[]string{"client", "--command", "sleep 20", "--client-timeout", "0.5"}, "had not finished"},
		{[]string{"client", "--command", "true", "--scenario", "nope"}, "is no scenario"},
		{[]string{"client", "--command", "true", "--rule", "9.9"}, "matches no rule of the client check"},
		{[]string{"client", "--command", "true", "--client-timeout", "0"}, "--client-timeout"},
	} {
		code, _, msg := runErr(t, c.args...)
		assert.Check(t, is.Equal(code, 2), "%v: %s", c.args, msg)
		assert.Check(t, is.Contains(msg, c.want), "%v", c.args)
		assert.Check(t, !strings.Contains(strings.TrimSpace(msg), "\n"), "one line: %q", msg)
	}
}

// The adapter contract is stated in --help as the README states it.
func TestClientHelpStatesTheContract(t *testing.T) {
	_, out := run(t, "client", "--help")
	assert.Check(t, is.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(client.Contract), " ")))
	readme, err := os.ReadFile("../../README.md")
	assert.NilError(t, err)
	for _, line := range []string{"POSTERN_CONFORMANCE_SCENARIO", "names the scenario, for logs only", "a number: one within its validation", "The client must finish within"} {
		assert.Check(t, strings.Contains(string(readme), line), "README.md does not say %q", line)
	}
}
