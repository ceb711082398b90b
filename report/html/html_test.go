package html_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	stdhtml "html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/html"
	"github.com/sigrix-io/postern-conformance/wire"
)

// hostile is what a runner might send to break a page: markup, a script,
// an attribute that would run one, a closing tag for every element the
// page nests it in, a CDATA end, control characters and a bidi override.
const hostile = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2"></pre></details></svg></style><style>body{display:none}</style>]]>` + "\x1b[31m\u202e\x00\xff\"'&amp;"

func rule(id, section string, kw runner.Keyword, title string) *runner.Rule {
	return &runner.Rule{ID: id, Section: section, Level: 1, Keyword: kw, Title: title, Probe: func(*runner.T) {}}
}

// sample is a run with every outcome, the runner's text hostile
// everywhere it can reach the page.
func sample() *report.Report {
	base := "http://127.0.0.1:8787/postern/v0/"
	ex := &wire.Exchange{
		Method: http.MethodGet, URL: base + "run",
		ReqHeader: http.Header{"User-Agent": {"postern-conformance"}},
		Note:      "a method this path does not take",
		Proto:     "HTTP/1.1", Status: 405,
		Header: http.Header{"Content-Type": {"text/html"}, "X-Hostile": {hostile}},
		Body:   []byte(hostile + "\nline two"),
	}
	withheld := &wire.Exchange{Method: http.MethodPost, URL: base + "run", ReqHeader: http.Header{"Content-Type": {"text/plain"}},
		ReqBody: []byte("[300000 bytes announced, none sent]"), Unreplayable: "the body was withheld", Err: wire.ErrNoAnswer}
	results := []runner.Result{
		{Rule: rule("2.1/wrong-method", "2.1", runner.Must, "a wrong method is refused in the envelope"), Outcome: runner.Fail,
			Findings:  []runner.Finding{{Message: "answered 405 without the envelope: " + hostile, Ex: ex}, {Message: "again", Ex: ex}},
			Exchanges: []*wire.Exchange{ex}},
		{Rule: rule("2.3/media-type-run", "2.3", runner.Must, "run refuses text/plain from the head"), Outcome: runner.Fail,
			Findings: []runner.Finding{{Message: "no answer from the head", Ex: withheld}}, Exchanges: []*wire.Exchange{withheld}},
		{Rule: rule("2.3/vary", "2.3", runner.Should, "answers vary on Origin"), Outcome: runner.Warn, Findings: []runner.Finding{{Message: "no Vary"}}},
		{Rule: rule("4.1/schema", "4.1", runner.Must, "describe validates"), Outcome: runner.Pass, Notes: []string{"agent " + hostile}},
		{Rule: rule("4.3/framing", "4.3", runner.Must, "the stream is framed"), Outcome: runner.Skip, Kind: engine.NeedsOption, Reason: "needs --execute: deciding it means running the agent"},
		{Rule: rule("4.4/level", "4.4", runner.Must, "status declares a level"), Outcome: runner.Skip, Kind: engine.NotApplicable, Reason: "not this posture"},
		{Rule: rule("4.6/order", "4.6", runner.Must, "refusals in order"), Outcome: runner.Error, Reason: "boom"},
		{Rule: rule("5/revoked", "5", runner.Must, "revoked is refused"), Outcome: runner.Fail, Findings: []runner.Finding{{Message: "accepted"}}},
	}
	recs := engine.Records(results)
	bl := map[string]bool{"5/revoked": true}
	return &report.Report{ToolVersion: "0.0.0-test", Target: "http://127.0.0.1:8787", Schemas: "embedded",
		Options: report.Options{Origin: "https://app.example.test", Timeout: 10 * time.Second},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: time.Second,
		Results: recs, Baseline: bl, Verdict: levels.Decide(3, recs, bl)}
}

func write(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, html.Write(&b, r))
	return b.String()
}

// contains checks that page holds each of wants, naming only what is
// missing (a page is long).
func contains(t *testing.T, page string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		assert.Check(t, strings.Contains(page, want), "the page does not hold %q", want)
	}
}

func TestPage(t *testing.T) {
	r := sample()
	out := write(t, r)
	for _, want := range []string{
		`<p class="verdict bad" id="verdict">Nonconformant at declared Level 3: 2 MUST rules broken. (1 known failure excused by the baseline.)</p>`,
		"<dt>Target</dt><dd>http://127.0.0.1:8787</dd>",
		"<dt>--origin</dt><dd>https://app.example.test</dd>",
		"<dt>Checker</dt><dd>postern-conformance 0.0.0-test</dd>",
		"<dt>Started</dt><dd>2026-01-02T03:04:05Z</dd>",
		`<a class="tile fail" href="#s-2.1" title="worst: FAIL">§2.1<small>1 FAIL</small></a>`,
		`<a class="tile skip" href="#s-4.3" title="worst: SKIP: needs an option">`,
		`<details class="rule fail" id="r-2.1/wrong-method" data-outcome="FAIL" open>`,
		`<details class="rule pass" id="r-4.1/schema" data-outcome="PASS">`,
		`<details class="rule known" id="r-5/revoked" data-outcome="KNOWN">`,
		`<details class="skips skip"><summary>1 SKIP: needs an option</summary>`,
		`<p class="option">It would be decided with --execute.</p>`,
		"SKIP: 1 needs an option: --execute 1",
		`<pre class="curl">curl -sS -i --max-time 10 http://127.0.0.1:8787/postern/v0/run</pre>`,
		"No curl line reproduces it: the body was withheld",
		"(the exchange above)",
		"This run checked ",
	} {
		contains(t, out, want)
	}
	assert.Check(t, is.Equal(strings.Count(out, `data-outcome="FAIL"`), r.Counts().Fail), "one FAIL entry a FAIL counted")
	assert.Check(t, is.Equal(strings.Count(out, `data-outcome="SKIP"`), r.Counts().Skip))
}

// TestHostileStaysText: what the runner sent reaches the page only
// escaped: no tag, attribute or closing tag of its own survives, and the
// control characters show as escapes.
func TestHostileStaysText(t *testing.T) {
	out := write(t, sample())
	for _, raw := range []string{"<script>window", "<img", "onerror=\"", "</pre></details>", "<style>body{display:none}", "\x1b", "\u202e", "\x00"} {
		assert.Check(t, !strings.Contains(out, raw), "the page holds %q raw", raw)
	}
	contains(t, out, "&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=&#34;window.pwned=2&#34;&gt;", `\x1b[31m\u202e\x00\xff`)
	// The page's own: one style, one script, each allowed by its hash.
	assert.Check(t, is.Equal(strings.Count(out, "<script"), 1))
	assert.Check(t, is.Equal(strings.Count(out, "<style"), 1))
}

var (
	cspMeta = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`)
	styleEl = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	script  = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
)

// TestPolicy: the page allows only its own style and script, by hash, and
// loads nothing.
func TestPolicy(t *testing.T) {
	out := write(t, sample())
	m := cspMeta.FindStringSubmatch(out)
	assert.Assert(t, m != nil)
	policy := stdhtml.UnescapeString(m[1])
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}
	assert.Check(t, is.Contains(policy, "default-src 'none'"))
	assert.Check(t, is.Contains(policy, "style-src "+sum(styleEl.FindStringSubmatch(out)[1])))
	assert.Check(t, is.Contains(policy, "script-src "+sum(script.FindStringSubmatch(out)[1])))
	for _, remote := range []string{"http://", "https://", "//"} {
		for _, attr := range []string{`src="` + remote, `href="` + remote} {
			assert.Check(t, !strings.Contains(out, attr), "the page loads %s", attr)
		}
	}
}

// TestTimeline: a timed rule's timeline is drawn, its judged probe ringed
// and the edges it was judged against bold, and said in words.
func TestTimeline(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ex := &wire.Exchange{Method: http.MethodGet, URL: "http://127.0.0.1:1/postern/v0/status", Status: 200, Proto: "HTTP/1.1"}
	early := &wire.Exchange{Method: http.MethodGet, URL: "http://127.0.0.1:1/postern/v0/status", Status: 200, Proto: "HTTP/1.1"}
	tl := &timeline.Timeline{Start: start, End: start.Add(5 * time.Second), Upper: "the distributor <b>", Lower: "the runner",
		Bands: []timeline.Band{{From: start, Label: "revoked", State: timeline.Refused}, {From: start.Add(time.Second), Label: "active", State: timeline.InForce}},
		Calls: []timeline.Event{{At: start.Add(10 * time.Millisecond), Label: "check 1", Saw: "revoked", State: timeline.Refused, Group: "check 1"}},
		Probes: []timeline.Event{{At: start.Add(20 * time.Millisecond), Label: "GET status", Saw: "revoked", State: timeline.Refused, Ex: early},
			{At: start.Add(3 * time.Second), Label: "GET status", Saw: "revoked", State: timeline.Refused, Ex: ex}},
		Edges: []timeline.Edge{{At: start.Add(2 * time.Second), Label: "window of check 1 ends (checked_at … + 2 s)", Kind: timeline.Window, Group: "check 1"},
			{At: start.Add(4 * time.Second), Label: "grace of check 1 ends", Kind: timeline.Grace, Group: "check 1"}}}
	results := []runner.Result{{Rule: rule("5.4/revoked-re-checked", "5.4", runner.Must, "revoked is re-checked"), Outcome: runner.Fail,
		Findings: []runner.Finding{{Message: "still revoked", Ex: ex}}, Exchanges: []*wire.Exchange{early, ex}}}
	recs := engine.Records(results)
	r := &report.Report{Mode: "entitlement walk", Target: "launched", Results: recs, Verdict: engine.Decide(recs, nil, engine.Words{Broken: "%s broken."}),
		Timelines: map[string]*timeline.Timeline{"5.4/revoked-re-checked": tl}}
	out := stdhtml.UnescapeString(write(t, r))
	for _, want := range []string{
		`<figure class="timeline">`,
		`<rect class="band st-refused"`,
		`<circle class="probe st-refused judged"`,
		`<line class="edge edge-window judged"`,
		`+2.00 s window of check 1 ends</text>`,
		"Judged at +3.00 s (GET status: revoked), against: window of check 1 ends (checked_at … + 2 s) at +2.00 s; grace of check 1 ends at +4.00 s.",
		"+2.00 s: window of check 1 ends (checked_at … + 2 s) (a finding was judged against it)",
	} {
		contains(t, out, want)
	}
	assert.Check(t, is.Equal(len(regexp.MustCompile(`<circle class="probe [^"]* judged"`).FindAllStringIndex(out, -1)), 1), "the probe the finding cites")
	assert.Check(t, is.Equal(len(regexp.MustCompile(`<line class="edge [^"]* judged"`).FindAllStringIndex(out, -1)), 2), "the two edges of the check before it")
	contains(t, write(t, r), "the distributor &lt;b&gt;")
}

func TestFleetPage(t *testing.T) {
	one, two := sample(), sample()
	two.Results = two.Results[3:4] // a PASS only
	two.Verdict = levels.Decide(3, two.Results, nil)
	two.Baseline = nil
	f := &report.Fleet{Runners: []report.Runner{
		{Target: one.Target, Agent: "acme/<b>x</b>", Report: one},
		{Target: "http://127.0.0.1:9", Report: two},
		{Target: "http://127.0.0.1:1", Err: "connection refused <script>"},
	}}
	var b bytes.Buffer
	assert.NilError(t, html.WriteFleet(&b, f))
	out := b.String()
	for _, want := range []string{
		`<td><a href="#runner-1">http://127.0.0.1:8787</a></td><td>acme/&lt;b&gt;x&lt;/b&gt;</td>`,
		`<td class="cell fail"><a href="#r1-s-2.1" title="§2.1: FAIL">FAIL</a></td>`,
		`<td class="cell pass"><a href="#r2-s-4.1" title="§4.1: PASS">PASS</a></td>`,
		`<section class="runner" id="runner-3">`,
		"Not checked: connection refused &lt;script&gt;",
		`id="r1-r-2.1/wrong-method"`,
		`<section class="sect" id="r2-s-4.1">`,
	} {
		contains(t, out, want)
	}
	assert.Check(t, is.Equal(strings.Count(out, `id="filters"`), 1), "one filter bar for the page")
}
