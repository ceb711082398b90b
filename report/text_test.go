package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fatih/color"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report"
)

func text(t *testing.T, r *report.Report, s report.Style) string {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, report.WriteText(&b, r, s))
	return b.String()
}

func TestTextPlain(t *testing.T) {
	out := text(t, fixture(), report.Style{})
	golden.Assert(t, out, "text.golden")

	// No colour, and nothing from the runner reaches the log raw.
	for _, b := range []string{"\x1b", "\x00", "\x07", "\xff", "\u202e"} {
		assert.Check(t, !strings.Contains(out, b), "output contains %q", b)
	}
	assert.Check(t, is.Contains(out, `\x1b[31mRED`))

	// Grouped by section in order of first appearance; the late §2.3 rule
	// joins its section.
	i44, i23, i42 := strings.Index(out, "\n  §4.4\n"), strings.Index(out, "\n  §2.3\n"), strings.Index(out, "\n  §4.2\n")
	assert.Check(t, i44 >= 0 && i23 > i44 && i42 > i23, "sections out of order:\n%s", out)
	assert.Check(t, strings.Index(out, "a CORS answer varies on Origin") < i42)

	for _, want := range []string{
		"Postern conformance · http://127.0.0.1:8787\n",
		"schemas: embedded\n",
		"origin: https://app.example.com · execute: no · rules: 2.3 4.* · headers: Authorization\n",
		"    PASS  status answers without credentials",
		"    FAIL  run refuses a text/plain body",
		"[2.3/media-type-run]",
		"    WARN  preflight from an unknown origin is refused",
		"    SKIP  run refuses a missing required input",
		"          needs --execute: deciding it means running the agent\n",
		"    ERROR bad_request is decided before missing_credential",
		"          the checker failed evaluating this rule: boom\n",
		"    KNOWN a revoked entitlement is refused",
		"          Execute — describe, status, run\n",
		// evidence
		"          > POST http://127.0.0.1:8787/postern/v0/run\n",
		"            # a well-formed run labelled text/plain\n",
		"            Content-Type: text/plain\n",
		"            Origin: https://app.example.com\n",
		"          < HTTP/1.1 200\n",
		"            Access-Control-Allow-Origin: *\n",
		"            Vary: Origin\n",
		`            | {"ok":true}\x00\x1b[31mRED\x1b[0m\xff\xfe` + "\n",
		"            | ]]></failure>\n",
		"            (the exchange above)\n",
		"          > OPTIONS http://127.0.0.1:8787/postern/v0/run\n",
		"            Access-Control-Request-Method: POST\n",
		"          < no answer: no answer before the deadline\n",
		// footer
		"\nDeclared level: 2 — Execute (describe, status, run)\n",
		"\n3 pass  1 fail  1 warn  1 skip (1 needs an option)  1 error  1 known\n",
		"\nNonconformant at declared Level 2: 1 MUST rule broken. (1 known failure excused by the baseline.)\n",
	} {
		assert.Check(t, is.Contains(out, want))
	}
	// Not verbose: no User-Agent, no stack, no unrelated response header,
	// no evidence for the known failure.
	for _, absent := range []string{"User-Agent", "goroutine", "X-Evil", `"run_id"`} {
		assert.Check(t, !strings.Contains(out, absent), "unexpected %q", absent)
	}
	assert.Check(t, strings.HasSuffix(out, ".)\n"))
}

func TestTextVerbose(t *testing.T) {
	out := text(t, fixture(), report.Style{Verbose: true})
	golden.Assert(t, out, "text-verbose.golden")
	for _, want := range []string{
		"            User-Agent: postern-conformance\n",
		"            Authorization: [redacted]\n",
		`            X-Evil: a\x1b[2Jb` + "\n",
		"            | {\"inputs\":{}}\n",
		"          goroutine 1 [running]:\n",
		`            | {"run_id":"r-1"}` + "\n",
		"timeout: 10s",
		"postern-conformance 0.0.0-test · started 2026-01-02T03:04:05Z · took 2.345s",
	} {
		assert.Check(t, is.Contains(out, want))
	}
	assert.Check(t, !strings.Contains(out, "\x1b"))
}

func TestTextColor(t *testing.T) {
	plain := text(t, fixture(), report.Style{})
	colored := text(t, fixture(), report.Style{Color: true})
	assert.Check(t, is.Contains(colored, "\x1b[32mPASS\x1b[0m"))
	assert.Check(t, is.Contains(colored, "\x1b[31;1mFAIL\x1b[0;22m"))
	assert.Check(t, is.Contains(colored, "\x1b[33mKNOWN\x1b[0m"))
	assert.Check(t, is.Contains(colored, "\x1b[31;1mNonconformant"))
	// Colour is the only difference.
	assert.Equal(t, stripANSI(colored), plain)

	// Style wins over fatih/color's global switch, both ways.
	saved := color.NoColor
	defer func() { color.NoColor = saved }()
	color.NoColor = true
	assert.Equal(t, text(t, fixture(), report.Style{Color: true}), colored)
	color.NoColor = false
	assert.Equal(t, text(t, fixture(), report.Style{}), plain)
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] == ';' || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			i = j // skip the final letter
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestTextConformantAndUndeclared(t *testing.T) {
	r := fixture()
	r.Results = r.Results[:2]
	r.Verdict = levels.Decide(3, r.Results, nil)
	out := text(t, r, report.Style{Color: true})
	assert.Check(t, is.Contains(out, "Declared level: 3 — Stream (describe, status, run, stream)\n"))
	assert.Check(t, is.Contains(out, "\n2 pass  0 fail  0 warn  0 skip\n"))
	assert.Check(t, is.Contains(out, "\x1b[32;1mConformant at Level 3.\x1b[0;22m\n"))

	r.Verdict = levels.Decide(0, r.Results, nil)
	out = text(t, r, report.Style{})
	assert.Check(t, is.Contains(out, "Declared level: none\n"))
}

func TestTextManyFindings(t *testing.T) {
	r := fixture()
	res := &r.Results[2]
	for i := 0; i < 7; i++ {
		res.Findings = append(res.Findings, runner.Finding{Message: "more"})
	}
	out := text(t, r, report.Style{})
	assert.Check(t, is.Contains(out, "          … 5 more findings not shown (verbose shows all)\n"))
	out = text(t, r, report.Style{Verbose: true})
	assert.Check(t, !strings.Contains(out, "not shown"))
}

func TestTextResultWithoutRule(t *testing.T) {
	r := fixture()
	r.Results = append(r.Results, runner.Result{Outcome: runner.Error, Reason: "lost"}.Record())
	out := text(t, r, report.Style{})
	assert.Check(t, is.Contains(out, "    ERROR (result without a rule)"))
}

func TestAutoStyle(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	assert.NilError(t, err)
	defer f.Close()
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	assert.Equal(t, report.AutoStyle(f), report.Style{}, "a file is not a terminal")
	assert.Equal(t, report.AutoStyle(nil), report.Style{})
}

func TestCounts(t *testing.T) {
	r := fixture()
	assert.DeepEqual(t, r.Counts(), report.Counts{Pass: 3, Fail: 1, Warn: 1, Skip: 1, Error: 1, Baselined: 1, NeedsOption: 1})
	r.Baseline = nil
	assert.DeepEqual(t, r.Counts(), report.Counts{Pass: 3, Fail: 2, Warn: 1, Skip: 1, Error: 1, NeedsOption: 1})
}
