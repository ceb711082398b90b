package main

// End-to-end tests of the command line: each exit code, each report format,
// baselines, --launch, and every planted fault as a user would meet it.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestMain lets the test binary stand in for the command, so --launch can
// start it as a runner under test. The package's parallel tests mostly
// wait on the processes they launch and take their cases through
// checks/posterntest/pace, which holds them to what the machine carries: they start
// together (pace.RaiseParallel), not two at a time.
func TestMain(m *testing.M) {
	if os.Getenv("POSTERN_CONFORMANCE_AS_COMMAND") == "1" {
		os.Exit(exitCode(app().Run(context.Background(), os.Args)))
	}
	pace.RaiseParallel()
	os.Exit(m.Run())
}

// run executes the command in-process and returns its exit code and stdout.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	a := app()
	a.Writer = &out
	a.ErrWriter = &out
	code := exitCode(a.Run(context.Background(), append([]string{"postern-conformance"}, args...)))
	return code, out.String()
}

func TestDemoIsConformantAtLevel3(t *testing.T) {
	code, out := run(t, "demo", "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "Conformant at Level 3."))
	assert.Check(t, is.Contains(out, " 0 fail"))
	assert.Check(t, !strings.Contains(out, "\x1b["), "no colour when asked for none")
}

func TestExitCodes(t *testing.T) {
	code, out := run(t, "demo", "--fault", "bare-405", "--no-color")
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(out, "Nonconformant at declared Level 3: 1 MUST rule broken."))

	for _, args := range [][]string{
		{"http://127.0.0.1:1"},                 // unreachable
		{"ftp://example.test"},                 // not http
		{"http://127.0.0.1:1/elsewhere"},       // a path that is not the prefix
		{},                                     // no target
		{"--bogus-flag", "http://127.0.0.1:1"}, // unknown flag
		{"--origin", "app.example.com", "http://x"},     // not an origin
		{"--header", "no colon", "http://127.0.0.1:1"},  // malformed header
		{"--rule", "9.9/nothing", "http://127.0.0.1:1"}, // selects nothing
		{"--timeout", "0", "http://127.0.0.1:1"},
		{"demo", "--fault", "no-such-fault"},
		{"demo", "--posture", "no-such-posture"},
		{"demo", "--level", "4"},
	} {
		code, out := run(t, args...)
		assert.Check(t, is.Equal(code, 2), "%v: %s", args, out)
	}
}

func TestNotARunner(t *testing.T) {
	srv, err := fixtures.Start(fixtures.Config{}, 0)
	assert.NilError(t, err)
	srv.Close() // a closed port: unreachable
	code, _ := run(t, srv.URL)
	assert.Equal(t, code, 2)
}

func TestSHOULDOnlyWarns(t *testing.T) {
	var should *fixtures.Fault
	for _, f := range fixtures.Faults() {
		if r := runner.Lookup(f.Rule); r != nil && r.Strength() == runner.Warn && len(f.Also) == 0 { // Also may hold a MUST
			f := f
			should = &f
			break
		}
	}
	if should == nil {
		t.Skip("no SHOULD fault planted yet")
	}
	code, out := run(t, "demo", "--fault", should.Name, "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "WARN"))
	code, _ = run(t, "demo", "--fault", should.Name, "--strict")
	assert.Equal(t, code, 1)
}

// reportSchema compiles the JSON report's schema, at ref within it (""
// for one runner's report, report.FleetSchemaRef for a fleet's).
func reportSchema(t *testing.T, ref string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
	assert.NilError(t, err)
	assert.NilError(t, c.AddResource("report.schema.json", doc))
	sch, err := c.Compile("report.schema.json" + ref)
	assert.NilError(t, err)
	return sch
}

// validates asserts that out is one JSON document, nothing else, and that
// sch accepts it.
func validates(t *testing.T, sch *jsonschema.Schema, out string, msgAndArgs ...any) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	assert.NilError(t, err, "stdout is one JSON document, nothing else: %s", out)
	assert.NilError(t, sch.Validate(inst), msgAndArgs...)
}

func TestJSONReportValidatesAgainstItsSchema(t *testing.T) {
	code, out := run(t, "demo", "--json", "--fault", "bare-405")
	assert.Equal(t, code, 1)
	sch := reportSchema(t, "")
	validates(t, sch, out)

	_, verbose := run(t, "demo", "--json", "--verbose")
	validates(t, sch, verbose, "with every exchange kept")

	var rep struct {
		Results []struct{ ID, Outcome string }
		Verdict struct{ Conformant bool }
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, len(rep.Results), len(runner.All()), "every rule appears in the report")
	assert.Check(t, !rep.Verdict.Conformant)
}

func TestJUnitReport(t *testing.T) {
	file := filepath.Join(t.TempDir(), "junit.xml")
	code, _ := run(t, "demo", "--fault", "bare-405", "--junit", file)
	assert.Equal(t, code, 1)
	b, err := os.ReadFile(file)
	assert.NilError(t, err)
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	assert.NilError(t, xml.Unmarshal(b, &suites))
	assert.Equal(t, suites.Failures, 1)
	assert.Equal(t, len(suites.Suites), 1)
	assert.Equal(t, len(suites.Suites[0].Cases), len(runner.All()))
}

func TestBaselineExcusesKnownFailures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "baseline.txt")
	code, _ := run(t, "demo", "--fault", "bare-405", "--write-baseline", file)
	assert.Equal(t, code, 1)
	b, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(b), "2.1/wrong-method"))
	code, out := run(t, "demo", "--fault", "bare-405", "--baseline", file, "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "KNOWN"))

	assert.NilError(t, os.WriteFile(file, []byte("9.9/not-a-rule\n"), 0o644))
	code, _ = run(t, "demo", "--baseline", file)
	assert.Equal(t, code, 2, "a baseline naming no rule is a usage error")
}

func TestLaunch(t *testing.T) {
	self, err := os.Executable()
	assert.NilError(t, err)
	launch := fmt.Sprintf("POSTERN_CONFORMANCE_AS_COMMAND=1 exec %q serve", self)
	code, out := run(t, "--launch", launch, "--origin", fixtures.AllowedOrigin, "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "Conformant at Level 3."))

	code, _ = run(t, "--launch", "echo hello")
	assert.Equal(t, code, 2, "a launched command must announce POSTERN_PORT first")
	code, _ = run(t, "--launch", "exit 3")
	assert.Equal(t, code, 2)
}

func TestListEnumeratesEveryRule(t *testing.T) {
	code, out := run(t, "list", "--json")
	assert.Equal(t, code, 0)
	var list []ruleEntry
	assert.NilError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, len(list), len(runner.All()))
	for _, e := range list {
		assert.Check(t, e.ID != "" && e.Section != "" && e.Level >= 1 && e.Keyword != "" && e.Title != "", "%+v", e)
		assert.Check(t, len(e.Faults) > 0 && len(e.Covers) > 0, "%s: a fault that proves it and an obligation it covers", e.ID)
		switch e.Binding {
		case "direct", "inferred":
			assert.Check(t, e.Chain == "", "%s: a chain named beside binding %s", e.ID, e.Binding)
		case "chain":
			assert.Check(t, e.Chain != "", "%s: a chain binding names its chain", e.ID)
		case "contract":
			assert.Check(t, strings.HasPrefix(e.Chain, "§3: implements the verb as §"), "%s: a contract binding states its chain: %q", e.ID, e.Chain)
		default:
			t.Errorf("%s: binding %q", e.ID, e.Binding)
		}
		if e.Binding == "inferred" {
			assert.Check(t, is.Equal(e.Strength, "WARN"), e.ID)
		}
	}
	code, out = run(t, "list", "--rule", "4.4/update-current")
	assert.Equal(t, code, 0)
	assert.Check(t, is.Contains(out, " inferred "))
	code, out = run(t, "list", "--rule", "4.2/null-required")
	assert.Equal(t, code, 0)
	assert.Check(t, is.Contains(out, "[chain: null is no value"))
	code, out = run(t, "list", "--markdown")
	assert.Equal(t, code, 0)
	assert.Check(t, is.Contains(out, "| `2.1/wrong-method` |"))
	assert.Check(t, is.Contains(out, "| Binding |"))
	assert.Check(t, is.Contains(out, "| chain: null is no value"))
	code, out = run(t, "list", "--coverage")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "normative obligations"))
	assert.Check(t, is.Regexp(`(?m)^ +inferred +\d+ `, out))
	assert.Check(t, is.Regexp(`(?m)^ +chain +\d+ `, out))
	// A row checked only on some targets says where, and why not elsewhere.
	assert.Check(t, is.Regexp(`(?m)^ +T5\.6-09 .* is checked only on a distributor on loopback.*off loopback it is not checked`, out))
}

// TestEveryFaultThroughTheCommand is how a user meets a fault: demo --fault
// X reports X's rule FAIL (WARN for a SHOULD), and each rule X lists in
// Also FAIL or WARN; it exits 1 where any of them FAILs, 0 otherwise.
func TestEveryFaultThroughTheCommand(t *testing.T) {
	for _, f := range fixtures.Faults() {
		f := f
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			defer pace.AcquireCPU()()
			// The check's own deadline is the case's, not the default's
			// 25 s, which a loaded machine can spend (-race too).
			args := []string{"demo", "--json", "--patience", "0.4", "--fault", f.Name, "--deadline", seconds(pace.Budget{Work: 5 * time.Second}.Deadline())}
			if f.Execute {
				args = append(args, "--execute")
			}
			code, out := run(t, args...)
			rule := runner.Lookup(f.Rule)
			assert.Assert(t, rule != nil)
			var rep struct {
				Results []struct{ ID, Outcome string }
			}
			assert.NilError(t, json.Unmarshal([]byte(out), &rep))
			outcomes := map[string]string{}
			for _, r := range rep.Results {
				outcomes[r.ID] = r.Outcome
			}
			breach := runner.Breach(f.Rule, f.Clause)
			assert.Equal(t, outcomes[f.Rule], string(breach), "fault %s", f.Name)
			want := 0
			if breach == runner.Fail {
				want = 1
			}
			for _, id := range f.Also {
				got := outcomes[id]
				assert.Check(t, got == string(runner.Fail) || got == string(runner.Warn),
					"fault %s lists %s as also broken, which came out %q", f.Name, id, got)
				if got == string(runner.Fail) {
					want = 1
				}
			}
			assert.Equal(t, code, want, "fault %s", f.Name)
		})
	}
}
