package markdown_test

import (
	"bytes"
	"net/http"
	"regexp"
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
	"github.com/sigrix-io/postern-conformance/report/markdown"
	"github.com/sigrix-io/postern-conformance/wire"
)

// hostile is a body that tries to end the collapsed block, the code fence
// and the table, open a tag, and recolour a terminal.
const hostile = "{\"ok\":1}\n````\n</details>\n| a | b |\n<script>alert(1)</script>\n\x1b[31mRED\x00\xff"

func rule(id, section, title string) *runner.Rule {
	return &runner.Rule{ID: id, Section: section, Level: 1, Keyword: runner.Must, Title: title}
}

func sample() *report.Report {
	ex := &wire.Exchange{
		Method: http.MethodPost, URL: "http://127.0.0.1:8787/postern/v0/run",
		ReqHeader: http.Header{"Content-Type": {"text/plain"}, "Authorization": {"[redacted]"}},
		ReqBody:   []byte(`{"inputs":{}}`), Note: "a run labelled text/plain",
		Proto: "HTTP/1.1", Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Evil": {"a|b</details>\x1b[2J"}},
		Body:   []byte(hostile),
	}
	results := []runner.Result{
		{Rule: rule("2.3/media-type-run", "2.3", "run refuses a text/plain body"), Outcome: runner.Fail,
			Findings:  []runner.Finding{{Message: "answered 200 | not 415 </details> <b>bold</b>", Ex: ex}, {Message: "again", Ex: ex}},
			Exchanges: []*wire.Exchange{ex}},
		{Rule: rule("2.3/vary-origin", "2.3", "preflights vary on Origin"), Outcome: runner.Warn, Findings: []runner.Finding{{Message: "no *Vary* [x](http://e)"}}},
		{Rule: rule("4.4/level1-ready", "4.4", "a Level 1 runner is ready"), Outcome: runner.Fail, Findings: []runner.Finding{{Message: "reported degraded", Ex: ex}}},
		{Rule: rule("4.2/order", "4.2", "bad_request first"), Outcome: runner.Error, Reason: "boom"},
		{Rule: rule("4.1/json", "4.1", "describe is JSON"), Outcome: runner.Pass},
		{Rule: rule("4.1/schema", "4.1", "describe validates"), Outcome: runner.Pass},
		{Rule: rule("4.3/run", "4.3", "run runs"), Outcome: runner.Skip, Kind: runner.NeedsOption, Reason: "needs --execute"},
	}
	bl := map[string]bool{"4.4/level1-ready": true}
	return &report.Report{Target: "http://127.0.0.1:8787", Options: report.Options{Origin: "https://app.example.com"},
		Results: engine.Records(results), Baseline: bl, Verdict: levels.Decide(3, engine.Records(results), bl)}
}

func write(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, markdown.Write(&b, r))
	return b.String()
}

// outsideFences is the document without its fenced code blocks, read as
// CommonMark reads fences: a fence closes only on a run of at least as
// many backticks, alone on its line.
func outsideFences(t *testing.T, doc string) (outside []string, fenced []string) {
	t.Helper()
	open := ""
	for _, l := range strings.Split(doc, "\n") {
		tl := strings.TrimLeft(l, " ")
		switch {
		case open == "" && strings.HasPrefix(tl, "```"):
			open = tl[:strings.IndexFunc(tl+"x", func(r rune) bool { return r != '`' })]
		case open != "" && strings.HasPrefix(tl, open) && strings.Trim(tl, "`") == "":
			open = ""
		case open != "":
			fenced = append(fenced, l)
		default:
			outside = append(outside, l)
		}
	}
	assert.Equal(t, open, "", "a fence is left open")
	return outside, fenced
}

var tag = regexp.MustCompile(`<[^>]*>`)

func TestSummary(t *testing.T) {
	out := write(t, sample())
	for _, want := range []string{
		"## ❌ Postern conformance: Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)\n",
		"**Target:** http://127.0.0.1:8787 · **Declared level:** 3 — Stream (describe, status, run, stream) · **Origin:** https://app.example.com · **Execute:** no",
		"| PASS | FAIL | WARN | SKIP | ERROR | KNOWN | total |\n|---:|---:|---:|---:|---:|---:|---:|\n| 2 | 1 | 1 | 1 | 1 | 1 | 7 |\n",
		"| §2.3 | · | **1** | 1 | · | · | · |\n",
		"| §4.1 | 2 | · | · | · | · | · |\n",
		"| §4.4 | · | · | · | · | · | 1 |\n",
		"<summary><b>FAIL</b> 2.3/media-type-run (§2.3) run refuses a text/plain body</summary>",
		"- answered 200 \\| not 415 &lt;/details&gt; &lt;b&gt;bold&lt;/b&gt;\n",
		"  > POST http://127.0.0.1:8787/postern/v0/run\n",
		"    # a run labelled text/plain\n",
		"    Authorization: [redacted]\n",
		"  (the exchange above)",
		"  Reproduce it:\n\n  ```sh\n  curl -sS -i -H 'Authorization: [redacted]' -H 'Content-Type: text/plain' --data-binary '{\"inputs\":{}}' http://127.0.0.1:8787/postern/v0/run\n  ```\n",
		"  the value of Authorization is redacted, as in every report: put yours in its place; the runner accepted",
		"### Rules the checker could not evaluate\n\n- `4.2/order` (§4.2) bad\\_request first: boom\n",
		"### Warnings\n\n- `2.3/vary-origin` (§2.3) preflights vary on Origin: no \\*Vary\\* \\[x\\](http://e)\n",
		"### Known failures, excused by the baseline\n\n- `4.4/level1-ready` (§4.4) a Level 1 runner is ready: reported degraded\n",
	} {
		assert.Check(t, is.Contains(out, want))
	}
	// Only the FAIL that is not excused is expanded with evidence.
	assert.Equal(t, strings.Count(out, "<details>"), 1)
	assert.Check(t, !strings.Contains(out, "4.4/level1-ready (§4.4) a Level 1 runner is ready</summary>"))
}

// TestHostileText: nothing a runner sends ends the collapsed block, a
// table row or the fence, opens a tag, or reaches the page raw.
func TestHostileText(t *testing.T) {
	out := write(t, sample())
	for _, b := range []string{"\x1b", "\x00", "\xff"} {
		assert.Check(t, !strings.Contains(out, b), "output contains %q", b)
	}
	outside, fenced := outsideFences(t, out)
	// Outside the fences the only tags are the summary's own.
	allowed := map[string]bool{"<details>": true, "</details>": true, "<summary>": true, "</summary>": true, "<b>": true, "</b>": true, "<br>": true}
	for _, l := range outside {
		for _, tg := range tag.FindAllString(l, -1) {
			assert.Check(t, allowed[tg], "tag %q from runner text in %q", tg, l)
		}
		if strings.HasPrefix(l, "|") {
			cells := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(l, -1))
			assert.Check(t, cells == 8 || cells == 7 || cells == 9, "table row with %d cells: %q", cells, l)
		}
	}
	assert.Equal(t, strings.Count(strings.Join(outside, "\n"), "</details>"), 1)
	// Inside the fences the runner's text is all there, cleaned.
	body := strings.Join(fenced, "\n")
	for _, want := range []string{"| </details>", "| | a | b |", "| <script>alert(1)</script>", `| \x1b[31mRED\x00\xff`, "| ````", "X-Evil: a|b</details>\\x1b[2J"} {
		assert.Check(t, is.Contains(body, want))
	}
	assert.Check(t, is.Contains(out, "  `````text\n"), "the fence is longer than the body's backtick run")
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain words, fine.":  "plain words, fine.",
		"a | b":               `a \| b`,
		"</details>":          "&lt;/details&gt;",
		"*em* _em_ `code`":    "\\*em\\* \\_em\\_ \\`code\\`",
		"[link](x) ~~s~~ $x$": `\[link\](x) \~\~s\~\~ \$x\$`,
		"# heading":           `\# heading`,
		"- item":              `\- item`,
		"+ item":              `\+ item`,
		"12. item":            `12\. item`,
		"3) item":             `3\) item`,
		"version 1.2":         "version 1.2",
		"a & b":               "a &amp; b",
		`back\slash`:          `back\\slash`,
		"line\nbreak\x1b":     `line\\nbreak\\x1b`,
	} {
		assert.Check(t, is.Equal(markdown.Escape(in), want), "%q", in)
	}
	assert.Equal(t, markdown.HTML(`<a href="x">'&'</a>`), "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;")
	assert.Equal(t, markdown.Code("4.1/json"), "`4.1/json`")
	assert.Equal(t, markdown.Code("a`b|c"), "`` a`b\\|c ``")
}

// TestWalk: an entitlement walk's report has its own heading and no
// declared level.
func TestWalk(t *testing.T) {
	rules := entitlement.All()
	res := []engine.Result[*entitlement.Env]{
		{Rule: rules[0], Outcome: runner.Pass},
		{Rule: rules[1], Outcome: runner.Fail, Findings: []runner.Finding{{Message: "the token was echoed in status"}}},
		{Rule: rules[2], Outcome: runner.Fail, Findings: []runner.Finding{{Message: "status answered 503"}}},
	}
	rep := walkReport(res, entitlement.Options{Launch: "my-runner --port 0 | tee log"}, baseline.Of(rules[2].ID))
	out := write(t, rep)
	assert.Check(t, is.Contains(out, "## ❌ Postern entitlement walk: Entitlement mishandled: 1 MUST rule of §5 broken. (1 known failure excused by the baseline.)\n"))
	assert.Check(t, is.Contains(out, "**Target:** launched: my-runner --port 0 \\| tee log · **An entitlement walk:** each step launched the runner with a token of its own"))
	assert.Check(t, !strings.Contains(out, "Declared level"))
	assert.Check(t, !strings.Contains(out, "**Origin:**"))
	assert.Check(t, is.Contains(out, "<summary><b>FAIL</b> "+rules[1].ID))
	assert.Check(t, is.Contains(out, "- the token was echoed in status\n"))
	assert.Check(t, is.Contains(out, "### Known failures, excused by the baseline\n\n- `"+rules[2].ID+"`"))

	ok := walkReport(res[:1], entitlement.Options{}, nil)
	out = write(t, ok)
	assert.Check(t, is.Contains(out, "## ✅ Postern entitlement walk: Entitlement handled as §5 requires.\n"))
	assert.Check(t, !strings.Contains(out, "### Failures"))
}

// TestBudget: a report too long for a job summary keeps every FAIL but
// leaves the evidence out once past the budget.
func TestBudget(t *testing.T) {
	big := &wire.Exchange{Method: "GET", URL: "http://x/", Proto: "HTTP/1.1", Status: 500, Body: bytes.Repeat([]byte("0123456789abcdef\n"), 200)}
	var results []runner.Result
	for range 600 {
		results = append(results, runner.Result{Rule: rule("2/x", "2", "t"), Outcome: runner.Fail,
			Findings: []runner.Finding{{Message: "m", Ex: big}}})
	}
	out := write(t, &report.Report{Results: engine.Records(results)})
	assert.Check(t, len(out) < markdown.Budget+64<<10, "%d bytes", len(out))
	assert.Equal(t, strings.Count(out, "<details>"), 600)
	assert.Check(t, is.Contains(out, "(evidence left out: the summary is long; see the JSON report)"))
}

// walkReport is the report of a walk, as the command builds it.
func walkReport(res []engine.Result[*entitlement.Env], o entitlement.Options, bl *baseline.Baseline) *report.Report {
	recs := engine.Records(res)
	return report.New(report.Header{Mode: entitlement.Mode, Target: entitlement.Target(o)}, recs, entitlement.Decide(recs, bl.Set()), bl, report.Run{})
}
