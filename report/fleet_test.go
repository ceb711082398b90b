package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
)

// fleetFixture is three runners: the fixture's (a FAIL, an ERROR, a WARN
// and more), a conformant one serving an agent whose id is hostile, and
// one that could not be checked.
func fleetFixture() *report.Fleet {
	broken := fixture()
	clean := fixture()
	clean.Target = "http://127.0.0.1:8788"
	clean.Results = []engine.Record{broken.Results[0], broken.Results[1], broken.Results[7]}
	clean.Verdict = levels.Decide(3, clean.Results, nil)
	clean.Baseline = nil
	return &report.Fleet{
		Tool:        "postern-conformance",
		ToolVersion: "0.0.0-test",
		Started:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Elapsed:     3456 * time.Millisecond,
		Runners: []report.Runner{
			{Target: broken.Target, Agent: "acme/summariser", Report: broken},
			{Target: clean.Target, Agent: "acme/\x1b[31mred\u202e", Report: clean},
			{Target: "http://127.0.0.1:1", Err: "cannot reach http://127.0.0.1:1: connection refused\nand a second line"},
		},
	}
}

func TestFleetText(t *testing.T) {
	f := fleetFixture()
	var b bytes.Buffer
	assert.NilError(t, report.WriteFleetText(&b, f, report.Style{}))
	out := b.String()
	golden.Assert(t, out, "fleet-text.golden")
	assert.Check(t, !strings.ContainsAny(out, "\x1b\u202e"), "the runner's own text is cleaned")

	// Each section is the runner's own report, as WriteText writes it.
	for _, rn := range f.Runners[:2] {
		var one bytes.Buffer
		assert.NilError(t, report.WriteText(&one, rn.Report, report.Style{}))
		assert.Check(t, is.Contains(out, one.String()))
	}
	assert.Check(t, is.Contains(out, "Not checked: cannot reach http://127.0.0.1:1: connection refused\n"))
	assert.Check(t, !strings.Contains(out, "and a second line"))

	b.Reset()
	assert.NilError(t, report.WriteFleetText(&b, f, report.Style{Color: true}))
	assert.Check(t, is.Contains(b.String(), "\x1b["), "colour where asked for")
}

func TestFleetJSONValidatesAndHoldsEachRunnersReport(t *testing.T) {
	f := fleetFixture()
	var b bytes.Buffer
	assert.NilError(t, report.WriteFleetJSON(&b, f))
	out := b.Bytes()
	golden.AssertBytes(t, out, "fleet.golden.json")

	for _, strict := range []bool{false, true} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
		assert.NilError(t, err)
		if strict {
			closeObjects(doc)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		assert.NilError(t, c.AddResource("report.schema.json", doc))
		sch, err := c.Compile("report.schema.json" + report.FleetSchemaRef)
		assert.NilError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		assert.NilError(t, err)
		assert.NilError(t, sch.Validate(inst), "strict=%v", strict)
		// A runner's report must be a report: a broken one is refused.
		inst.(map[string]any)["runners"].([]any)[0].(map[string]any)["report"].(map[string]any)["format_version"] = 2
		assert.Check(t, sch.Validate(inst) != nil)
		// And the single-runner schema does not take a fleet for a report.
		one, err := c.Compile("report.schema.json")
		assert.NilError(t, err)
		inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(out))
		assert.Check(t, one.Validate(inst) != nil)
	}

	var doc struct {
		Format  string         `json:"format"`
		Counts  map[string]int `json:"counts"`
		Runners []struct {
			Target string          `json:"target"`
			Agent  *string         `json:"agent"`
			Error  *string         `json:"error"`
			Report json.RawMessage `json:"report"`
		} `json:"runners"`
	}
	assert.NilError(t, json.Unmarshal(out, &doc))
	assert.Equal(t, doc.Format, report.FleetFormat)
	assert.DeepEqual(t, doc.Counts, map[string]int{"runners": 3, "conformant": 1, "nonconformant": 1, "unchecked": 1, "undetermined": 0})
	for i, rn := range doc.Runners[:2] {
		var alone, within any
		assert.NilError(t, json.Unmarshal(writeJSON(t, f.Runners[i].Report), &alone))
		assert.NilError(t, json.Unmarshal(rn.Report, &within))
		assert.DeepEqual(t, within, alone)
		assert.Check(t, rn.Error == nil)
	}
	assert.Equal(t, *doc.Runners[1].Agent, "acme/\x1b[31mred\u202e", "JSON carries the text as it came, escaped")
	gone := doc.Runners[2]
	assert.Check(t, gone.Agent == nil)
	assert.Check(t, is.Contains(*gone.Error, "connection refused"))
	assert.Equal(t, string(gone.Report), "null")
}

func TestFleetJUnitHasASuitePerRunner(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, report.WriteFleetJUnit(&b, fleetFixture()))
	golden.Assert(t, b.String(), "fleet-junit.golden.xml")
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name   string `xml:"name,attr"`
			Tests  int    `xml:"tests,attr"`
			Errors int    `xml:"errors,attr"`
			Cases  []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	assert.NilError(t, xml.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, len(doc.Suites), 3)
	assert.Equal(t, doc.Suites[0].Name, "postern-conformance http://127.0.0.1:8787")
	assert.Equal(t, doc.Tests, 8+3+1)
	assert.Equal(t, doc.Failures, 1)
	assert.Equal(t, doc.Errors, 2, "the fixture's ERROR and the runner not checked")
	gone := doc.Suites[2]
	assert.Equal(t, gone.Errors, 1)
	assert.Equal(t, gone.Cases[0].Error.Type, "unreachable")
	assert.Check(t, is.Contains(gone.Cases[0].Error.Message, "connection refused"))
}

func TestFleetExitIsTheWorstRunners(t *testing.T) {
	f := fleetFixture()
	code, msg := f.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitCannotCheck)
	assert.Check(t, is.Contains(msg, "of 3 runners, 1 could not be checked"))
	assert.Check(t, is.Contains(msg, "http://127.0.0.1:1"))
	assert.Check(t, is.Contains(msg, "1 fails (http://127.0.0.1:8787)"))

	f.Runners = f.Runners[:2] // a FAIL beats a clean runner
	code, _ = f.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitBroken)

	f.Runners = f.Runners[1:]
	code, msg = f.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitOK)
	assert.Equal(t, msg, "no rule FAILs on any of the 1 runner")

	// An ERROR in one runner is exit 2 too, as it is alone.
	f = fleetFixture()
	f.Runners = f.Runners[:1]
	f.Runners[0].Report.Baseline = map[string]bool{"2.3/media-type-run": true, "5/revoked": true}
	code, msg = f.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitCannotCheck)
	assert.Equal(t, msg, "of 1 runner, 1 had a rule the checker could not evaluate (http://127.0.0.1:8787)")
}

// One baseline serves the fleet: an entry is stale only once no runner
// fails its rule, and a strict baseline is held to the fleet as a whole.
func TestAFleetsBaselineIsStaleOnlyWhereNoRunnerNeedsIt(t *testing.T) {
	r := rule("2.1/wrong-method", "2.1", 1, runner.Must, "a wrong method is refused")
	bl := baseline.Of("2.1/wrong-method")
	one := func(o runner.Outcome) report.Runner {
		return report.Runner{Target: "http://x", Report: report.Assemble(nil, []runner.Result{{Rule: r, Outcome: o}}, runner.Options{}, bl, report.Run{})}
	}
	strict := report.Strictness{Baseline: true}

	f := &report.Fleet{Runners: []report.Runner{one(runner.Fail), one(runner.Pass)}}
	assert.Equal(t, len(f.Runners[1].Report.Stale), 1, "stale for the passing runner alone")
	assert.Equal(t, len(f.Stale()), 0, "but the failing one still needs it")
	code, _ := f.Exit(strict)
	assert.Equal(t, code, report.ExitOK)

	f = &report.Fleet{Runners: []report.Runner{one(runner.Pass), one(runner.Pass)}}
	assert.Equal(t, len(f.Stale()), 1)
	code, _ = f.Exit(report.Strictness{})
	assert.Equal(t, code, report.ExitOK)
	code, msg := f.Exit(strict)
	assert.Equal(t, code, report.ExitBroken)
	assert.Check(t, is.Contains(msg, "no runner fails 2.1/wrong-method any more"))
}
