package github_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"github.com/sigrix-io/postern-conformance/report/github"
)

func rule(id, section, title string) *runner.Rule {
	return &runner.Rule{ID: id, Section: section, Level: 1, Keyword: runner.Must, Title: title}
}

func finding(msg string) runner.Finding { return runner.Finding{Message: msg} }

// sample has one result of every outcome, a FAIL the baseline excuses, and
// a title with the characters a property value escapes.
func sample() *report.Report {
	results := []runner.Result{
		{Rule: rule("2.1/wrong-method", "2.1", "wrong methods get the envelope, not a bare 405"), Outcome: runner.Fail,
			Findings: []runner.Finding{finding("GET run was refused 405 without the envelope\nsecond line"), finding("PUT status too")}},
		{Rule: rule("2.3/vary-origin", "2.3", "preflights vary on Origin"), Outcome: runner.Warn, Findings: []runner.Finding{finding("no Vary: 100% sure")}},
		{Rule: rule("4.4/level1-ready", "4.4", "a Level 1 runner is ready"), Outcome: runner.Fail, Findings: []runner.Finding{finding("reported degraded")}},
		{Rule: rule("4.2/order", "4.2", "bad_request first"), Outcome: runner.Error, Reason: "boom: the checker broke\nstack"},
		{Rule: rule("4.1/json", "4.1", "describe is JSON"), Outcome: runner.Pass},
		{Rule: rule("4.3/run", "4.3", "run runs"), Outcome: runner.Skip, Kind: runner.NeedsOption, Reason: "needs --execute"},
	}
	return &report.Report{Target: "http://127.0.0.1:8787", Results: engine.Records(results), Baseline: map[string]bool{"4.4/level1-ready": true},
		Verdict: levels.Decide(3, engine.Records(results), map[string]bool{"4.4/level1-ready": true})}
}

func write(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, github.Write(&b, r))
	return b.String()
}

func TestAnnotations(t *testing.T) {
	out := write(t, sample())
	want := strings.Join([]string{
		"::error title=2.1/wrong-method (§2.1)%3A wrong methods get the envelope%2C not a bare 405::GET run was refused 405 without the envelope",
		"::error title=2.1/wrong-method (§2.1)%3A wrong methods get the envelope%2C not a bare 405::PUT status too",
		"::warning title=2.3/vary-origin (§2.3)%3A preflights vary on Origin::no Vary: 100%25 sure",
		"::notice title=4.4/level1-ready (§4.4)%3A a Level 1 runner is ready::known failure, excused by the baseline: reported degraded",
		"::error title=4.2/order (§4.2)%3A bad_request first::the checker could not evaluate this rule: boom: the checker broke",
	}, "\n") + "\n"
	assert.Equal(t, out, want)
}

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"100%", "100%25", "100%25"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
		{"k: v, w", "k: v, w", "k%3A v%2C w"},
		{"%0A", "%250A", "%250A"}, // an escape sequence in the text stays text
		{"::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"},
	} {
		assert.Check(t, is.Equal(github.EscapeData(c.in), c.data), "data %q", c.in)
		assert.Check(t, is.Equal(github.EscapeProperty(c.in), c.prop), "property %q", c.in)
	}
}

// commands reads out as GitHub does: every line whose first non-blank
// characters are "::" is a command.
func commands(out string) []string {
	var cmds []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "::") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// TestNoInjection: whatever a runner puts in a finding or a rule's text,
// each annotation stays one line and one command, and no terminal escape
// or line break survives.
func TestNoInjection(t *testing.T) {
	hostile := []string{
		"x\n::error::forged",
		"x\r::add-mask::secret",
		"x\r\n  ::stop-commands::tok",
		"x%0A::warning::forged",
		"x\u2028::error::forged",
		"x\u0085::error::forged",
		"\x1b[31mred\x1b[0m\x07\x00 \xff\xfe \u202eevil",
	}
	var results []runner.Result
	for i, h := range hostile {
		results = append(results, runner.Result{
			Rule:    &runner.Rule{ID: fmt.Sprintf("x/%d\n::error::id", i), Section: "2.1\r\n::error::", Title: h, Keyword: runner.Must},
			Outcome: runner.Fail, Findings: []runner.Finding{finding(h)},
		})
	}
	out := write(t, &report.Report{Results: engine.Records(results)})
	cmds := commands(out)
	assert.Equal(t, len(cmds), len(hostile), out)
	assert.Equal(t, strings.Count(out, "\n"), len(hostile), "one line per annotation:\n%s", out)
	for _, c := range cmds {
		assert.Check(t, strings.HasPrefix(c, "::error title=x/"), c)
		assert.Check(t, !strings.ContainsAny(c, "\r\x1b\x00\x07\u2028\u0085\u202e"), "%q", c)
		// The title ends at the first "::"; nothing of the runner's opens
		// another property or command there.
		head, _, ok := strings.Cut(strings.TrimPrefix(c, "::"), "::")
		assert.Check(t, ok)
		assert.Check(t, !strings.ContainsAny(strings.TrimPrefix(head, "error title="), ":,"), "%q", head)
	}
	assert.Check(t, is.Contains(out, "::x\n"), "a message is the finding's first line")
	assert.Check(t, is.Contains(out, `::x\r::add-mask::secret`), "the rest of the line stays, made visible")
	assert.Check(t, is.Contains(out, `\x1b[31mred`))
	assert.Check(t, is.Contains(out, "x%250A::warning::forged"))
}

func TestManyFindings(t *testing.T) {
	var fs []runner.Finding
	for i := range 12 {
		fs = append(fs, finding(fmt.Sprint("finding ", i)))
	}
	out := write(t, &report.Report{Results: engine.Records([]runner.Result{{Rule: rule("a/b", "2", "t"), Outcome: runner.Fail, Findings: fs}})})
	cmds := commands(out)
	assert.Equal(t, len(cmds), github.MaxPerRule)
	assert.Check(t, strings.HasSuffix(cmds[len(cmds)-1], "::and 8 more findings (see the report)"), cmds[len(cmds)-1])

	long := strings.Repeat("é", 2000)
	out = write(t, &report.Report{Results: engine.Records([]runner.Result{{Rule: rule("a/b", "2", long), Outcome: runner.Warn, Findings: []runner.Finding{finding(long)}}})})
	assert.Check(t, len(out) < 2000, "title and message are clipped: %d bytes", len(out))
	assert.Check(t, is.Contains(out, "…"))
}

func TestOutputs(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, github.WriteOutputs(&b, sample(), github.Files{JSON: "/tmp/r.json", JUnit: "/tmp/j.xml", HTML: "/tmp/p.html"}))
	assert.Equal(t, b.String(), strings.Join([]string{
		"verdict=nonconformant",
		"verdict-text=Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)",
		"level=3", "failures=1", "warnings=1", "known=1", "errors=1", "undecided=0",
		"report-json=/tmp/r.json", "report-junit=/tmp/j.xml", "report-html=/tmp/p.html",
	}, "\n")+"\n")

	// A value with a line break goes in the delimited form, whose
	// delimiter the value does not hold.
	b.Reset()
	assert.NilError(t, github.WriteOutputs(&b, sample(), github.Files{JSON: "/tmp/a\nverdict=conformant"}))
	out := b.String()
	i := strings.Index(out, "report-json<<")
	assert.Assert(t, i >= 0, out)
	delim := strings.SplitN(out[i+len("report-json<<"):], "\n", 2)[0]
	assert.Check(t, len(delim) > 20)
	assert.Check(t, is.Contains(out, "report-json<<"+delim+"\n/tmp/a\nverdict=conformant\n"+delim+"\n"))
	assert.Check(t, is.Equal(strings.Count(out, "verdict=nonconformant\n"), 1))

	clean := &report.Report{Results: engine.Records([]runner.Result{{Rule: rule("a/b", "2", "t"), Outcome: runner.Pass}})}
	clean.Verdict = levels.Decide(2, clean.Results, nil)
	outs := github.Outputs(clean, github.Files{})
	assert.DeepEqual(t, outs[:4], []github.Output{{"verdict", "conformant"}, {"verdict-text", "Conformant at Level 2."}, {"level", "2"}, {"failures", "0"}})
}

func TestPause(t *testing.T) {
	var b bytes.Buffer
	resume, err := github.Pause(&b)
	assert.NilError(t, err)
	b.WriteString("::error::from the runner\n")
	assert.NilError(t, resume())
	ls := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Equal(t, len(ls), 3)
	token := strings.TrimPrefix(ls[0], "::stop-commands::")
	assert.Check(t, len(token) >= 32 && token != ls[0], ls[0])
	assert.Equal(t, ls[2], "::"+token+"::")

	var b2 bytes.Buffer
	_, err = github.Pause(&b2)
	assert.NilError(t, err)
	assert.Check(t, b2.String() != ls[0]+"\n", "every pause has a token of its own")
}

// TestWalk: an entitlement walk's report annotates and outputs the same
// way; its verdict can be undecided, and it declares no level.
func TestWalk(t *testing.T) {
	rules := entitlement.All()
	res := []engine.Result[*entitlement.Env]{
		{Rule: rules[0], Outcome: runner.Pass},
		{Rule: rules[1], Outcome: runner.Fail, Findings: []runner.Finding{finding("the token was echoed in status")}},
		{Rule: rules[2], Outcome: runner.Fail, Findings: []runner.Finding{finding("status answered 503")}},
	}
	rep := walkReport(res, entitlement.Options{Launch: "my-runner --port 0"}, baseline.Of(rules[2].ID))
	out := write(t, rep)
	cmds := commands(out)
	assert.Equal(t, len(cmds), 2, out)
	assert.Check(t, strings.HasPrefix(cmds[0], "::error title="+rules[1].ID+" (§"+rules[1].Section+")%3A "), cmds[0])
	assert.Check(t, strings.HasSuffix(cmds[0], "::the token was echoed in status"))
	assert.Check(t, strings.HasPrefix(cmds[1], "::notice title="+rules[2].ID), cmds[1])
	outs := github.Outputs(rep, github.Files{})
	assert.DeepEqual(t, outs[0], github.Output{Name: "verdict", Value: "nonconformant"})
	assert.DeepEqual(t, outs[2], github.Output{Name: "level", Value: "0"})

	undecided := walkReport([]engine.Result[*entitlement.Env]{{Rule: rules[0], Outcome: runner.Skip, Kind: runner.Undecided, Reason: "no status"}},
		entitlement.Options{}, nil)
	assert.Equal(t, github.Verdict(undecided), "undecided")
	assert.Equal(t, write(t, undecided), "::warning title=Not determined%3A rules left undecided::"+undecided.Verdict.Text+"\n")
}

// walkReport is the report of a walk, as the command builds it.
func walkReport(res []engine.Result[*entitlement.Env], o entitlement.Options, bl *baseline.Baseline) *report.Report {
	recs := engine.Records(res)
	return report.New(report.Header{Mode: entitlement.Mode, Target: entitlement.Target(o)}, recs, entitlement.Decide(recs, bl.Set()), bl, report.Run{})
}
