package report_test

import (
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire"
)

// hostileBody is what a runner that means harm (or is merely broken) might
// answer: NUL, a terminal escape that would recolour the log, invalid UTF-8,
// a bidi override, and a line that imitates the report.
const hostileBody = "{\"ok\":true}\x00\x1b[31mRED\x1b[0m\xff\xfe\n    PASS  forged line\u202e evil\n]]></failure>"

func rule(id, section string, level int, kw runner.Keyword, title string, needs ...runner.Need) *runner.Rule {
	return &runner.Rule{ID: id, Section: section, Level: level, Keyword: kw, Title: title, Needs: needs, Probe: func(*runner.T) {}}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// fixture is a run with every outcome: passes in two sections, a FAIL with
// hostile evidence, a WARN whose request got no answer, a SKIP, an ERROR, a
// FAIL the baseline excuses, and a second §2.3 rule after another section.
func fixture() *report.Report {
	base := "http://127.0.0.1:8787/postern/v0/"
	hostile := &wire.Exchange{
		Method:    http.MethodPost,
		URL:       base + "run",
		ReqHeader: hdr("Content-Type", "text/plain", "Origin", "https://app.example.com", "Authorization", "[redacted]", "User-Agent", "postern-conformance"),
		ReqBody:   []byte(`{"inputs":{}}`),
		Note:      "a well-formed run labelled text/plain",
		Proto:     "HTTP/1.1",
		Status:    200,
		Header: hdr("Content-Type", "application/json", "Access-Control-Allow-Origin", "*", "Vary", "Origin",
			"X-Evil", "a\x1b[2Jb"),
		Body:    []byte(hostileBody),
		Elapsed: 12 * time.Millisecond,
	}
	silent := &wire.Exchange{
		Method:    http.MethodOptions,
		URL:       base + "run",
		ReqHeader: hdr("Origin", "https://evil.example", "Access-Control-Request-Method", "POST"),
		Note:      "preflight from an origin nobody allowed",
		Err:       wire.ErrNoAnswer,
		Elapsed:   2 * time.Second,
	}
	revoked := &wire.Exchange{
		Method:    http.MethodPost,
		URL:       base + "run",
		ReqHeader: hdr("Content-Type", "application/json"),
		Proto:     "HTTP/1.1",
		Status:    200,
		Header:    hdr("Content-Type", "application/json"),
		Body:      []byte(`{"run_id":"r-1"}`),
	}
	results := []runner.Result{
		{Rule: rule("4.4/no-credentials", "4.4", 1, runner.Must, "status answers without credentials"),
			Outcome: runner.Pass, Elapsed: 3 * time.Millisecond},
		{Rule: rule("4.4/level", "4.4", 1, runner.Must, "status declares a level"),
			Outcome: runner.Pass, Notes: []string{"Execute — describe, status, run"}, Elapsed: time.Millisecond},
		{Rule: rule("2.3/media-type-run", "2.3", 2, runner.Must, "run refuses a text/plain body", runner.NeedStatus),
			Outcome: runner.Fail, Elapsed: 15 * time.Millisecond,
			Findings: []runner.Finding{
				{Message: "run parsed a text/plain body and answered 200", Ex: hostile},
				{Message: "the answer echoes the body: \x1b]0;pwned\x07"},
				{Message: "and allowed every origin", Ex: hostile},
			},
			Exchanges: []*wire.Exchange{hostile}},
		{Rule: rule("2.3/no-wildcard", "2.3", 1, runner.Should, "preflight from an unknown origin is refused"),
			Outcome: runner.Warn, Elapsed: 2 * time.Second,
			Findings:  []runner.Finding{{Message: "the preflight got no answer", Ex: silent}},
			Exchanges: []*wire.Exchange{silent}},
		{Rule: rule("4.2/missing-input", "4.2", 2, runner.Must, "run refuses a missing required input", runner.NeedExecute),
			Outcome: runner.Skip, Kind: runner.NeedsOption, Reason: "needs --execute: deciding it means running the agent"},
		{Rule: rule("4.6/order", "4.6", 2, runner.Must, "bad_request is decided before missing_credential"),
			Outcome: runner.Error, Reason: "the checker failed evaluating this rule: boom\ngoroutine 1 [running]:\nmain.main()",
			Exchanges: []*wire.Exchange{revoked}, Elapsed: 4 * time.Millisecond},
		{Rule: rule("5/revoked", "5", 2, runner.Must, "a revoked entitlement is refused"),
			Outcome: runner.Fail, Elapsed: 5 * time.Millisecond,
			Findings:  []runner.Finding{{Message: "a revoked entitlement was accepted (answered 200)", Ex: revoked}},
			Exchanges: []*wire.Exchange{revoked}},
		{Rule: rule("2.3/vary", "2.3", 1, runner.Must, "a CORS answer varies on Origin"),
			Outcome: runner.Pass, Elapsed: time.Millisecond},
	}
	baseline := map[string]bool{"5/revoked": true}
	return &report.Report{
		Tool:        "postern-conformance",
		ToolVersion: "0.0.0-test",
		Target:      "http://127.0.0.1:8787",
		Schemas:     "embedded",
		Options: report.Options{
			Origin:  "https://app.example.com",
			Rules:   []string{"2.3", "4.*"},
			Timeout: 10 * time.Second,
			Headers: []string{"Authorization"},
		},
		Started:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Elapsed:  2345 * time.Millisecond,
		Results:  engine.Records(results),
		Verdict:  levels.Decide(2, engine.Records(results), baseline),
		Baseline: baseline,
	}
}
