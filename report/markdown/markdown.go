// Package markdown renders a report as a GitHub-flavoured Markdown
// summary: the verdict, the counts by outcome, a table by section, and each
// FAIL with its evidence in a collapsed <details> block. It is what a
// GitHub Actions job summary ($GITHUB_STEP_SUMMARY) shows, and what
// --markdown writes for other CI systems or an issue.
//
// Text from the runner is untrusted. Every line of it is first cleaned as
// report's writers clean it (no control characters, no line breaks), then
// escaped for where it goes: in prose and table cells, Markdown
// punctuation is backslash-escaped and < > & become entities, so no tag
// (a </details>, say) and no table cell break (|) can come from it; in
// evidence, it sits in a code fence longer than any run of backticks it
// holds, which nothing inside can close.
package markdown

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Limits of the summary. GitHub shows at most 1 MiB of a step's summary;
// past Budget, FAILs are listed without their evidence.
const (
	Budget        = 512 << 10
	maxFindings   = 5    // findings shown per rule
	bodyExcerpt   = 2048 // bytes of a body shown
	maxBodyLines  = 40   // lines of a body shown
	maxMessage    = 1000 // runes of a message
	maxHeaderLine = 500
)

// Write writes the Markdown summary of r to w.
func Write(w io.Writer, r *report.Report) error {
	d := &doc{}
	d.header(r)
	d.counts(r)
	d.sections(r)
	d.failures(r)
	d.others(r)
	_, err := io.WriteString(w, d.b.String())
	return err
}

type doc struct{ b strings.Builder }

func (d *doc) line(parts ...string) {
	for _, p := range parts {
		d.b.WriteString(p)
	}
	d.b.WriteByte('\n')
}

func (d *doc) header(r *report.Report) {
	mark := "❌"
	switch {
	case r.Verdict.Conformant:
		mark = "✅"
	case !r.Verdict.Determined():
		mark = "❔"
	}
	d.line("## ", mark, " ", Escape("Postern "+r.ModeName()), ": ", Escape(r.Verdict.Text))
	d.line()
	facts := []string{"**Target:** " + Escape(r.Target)}
	if label, rest, ok := strings.Cut(r.Verdict.Scope, ": "); ok {
		facts = append(facts, "**"+Escape(label)+":** "+Escape(rest))
	} else if r.Verdict.Scope != "" {
		facts = append(facts, Escape(r.Verdict.Scope))
	}
	if r.ModeName() == report.ModeCheck {
		o := r.Options
		origin := "none"
		if o.Origin != "" {
			origin = Escape(o.Origin)
		}
		facts = append(facts, "**Origin:** "+origin, "**Execute:** "+yesNo(o.Execute))
		if len(o.Rules) > 0 {
			facts = append(facts, "**Rules:** "+Escape(strings.Join(o.Rules, " ")))
		}
	}
	if len(r.Baseline) > 0 {
		facts = append(facts, fmt.Sprintf("**Baseline:** %d rule(s) excused", len(r.Baseline)))
	}
	d.line(strings.Join(facts, " · "))
	d.line()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (d *doc) counts(r *report.Report) {
	c := r.Counts()
	d.line("| PASS | FAIL | WARN | SKIP | ERROR | KNOWN | total |")
	d.line("|---:|---:|---:|---:|---:|---:|---:|")
	d.line(fmt.Sprintf("| %d | %d | %d | %d | %d | %d | %d |", c.Pass, c.Fail, c.Warn, c.Skip, c.Error, c.Baselined, c.Total()))
	d.line()
	if s := r.StartsLine(); s != "" {
		d.line(Escape(s))
	}
	if c.Skip > 0 {
		d.line(Escape(fmt.Sprintf("SKIP: %d not applicable, %d need an option, %d undecided.", c.NotApplicable, c.NeedsOption, c.Undecided)))
		d.line()
	}
	for _, st := range r.Stale {
		d.line("- ", Escape("stale baseline entry: "+st.String()))
	}
	if len(r.Stale) > 0 {
		d.line()
	}
}

// outcome is the column a result counts in: PASS FAIL WARN SKIP ERROR
// KNOWN.
func outcome(r *report.Report, res engine.Record) string {
	switch res.Outcome {
	case engine.Pass, engine.Warn, engine.Skip:
		return string(res.Outcome)
	case engine.Fail:
		if known(r, res) {
			return "KNOWN"
		}
		return "FAIL"
	}
	return "ERROR"
}

func known(r *report.Report, res engine.Record) bool {
	return res.Outcome == engine.Fail && r.Baseline[ruleOf(res).ID]
}

var unknownRule = engine.About{ID: "?", Section: "?", Title: "(result without a rule)"}

func ruleOf(res engine.Record) engine.About {
	if res.Rule.ID == "" {
		return unknownRule
	}
	return res.Rule
}

var columns = []string{"PASS", "FAIL", "WARN", "SKIP", "ERROR", "KNOWN"}

// sections writes one row per section, in order of first appearance.
func (d *doc) sections(r *report.Report) {
	var order []string
	by := map[string]map[string]int{}
	for _, res := range r.Results {
		s := ruleOf(res).Section
		if by[s] == nil {
			by[s] = map[string]int{}
			order = append(order, s)
		}
		by[s][outcome(r, res)]++
	}
	if len(order) == 0 {
		d.line("No rule was checked.")
		d.line()
		return
	}
	d.line("### By section")
	d.line()
	d.line("| Section | " + strings.Join(columns, " | ") + " |")
	d.line("|---" + strings.Repeat("|---:", len(columns)) + "|")
	for _, s := range order {
		row := "| " + Escape("§"+s)
		for _, col := range columns {
			n := by[s][col]
			cell := "·"
			if n > 0 {
				cell = fmt.Sprint(n)
				if col == "FAIL" || col == "ERROR" {
					cell = "**" + cell + "**"
				}
			}
			row += " | " + cell
		}
		d.line(row + " |")
	}
	d.line()
}

// ruleHeading is "`2.1/wrong-method` (§2.1) title", escaped as prose.
func ruleHeading(rule engine.About) string {
	return Code(rule.ID) + " " + Escape("(§"+rule.Section+") "+rule.Title)
}

// failures writes each FAIL with its findings and evidence, collapsed.
func (d *doc) failures(r *report.Report) {
	var fails []engine.Record
	for _, res := range r.Results {
		if outcome(r, res) == "FAIL" {
			fails = append(fails, res)
		}
	}
	if len(fails) == 0 {
		return
	}
	d.line("### Failures")
	d.line()
	for _, res := range fails {
		rule := ruleOf(res)
		d.line("<details>")
		d.line("<summary><b>FAIL</b> ", HTML(rule.ID), " (§", HTML(rule.Section), ") ", HTML(rule.Title), "</summary>")
		d.line()
		d.line(ruleHeading(rule), " — ", Escape(string(rule.Keyword)), ", Level ", fmt.Sprint(rule.Level))
		d.line()
		d.findings(r, res, d.b.Len() < Budget)
		d.line("</details>")
		d.line()
	}
}

// findings writes the findings of res, each with the exchange that shows
// it when evidence is wanted; an exchange cited twice is drawn once.
func (d *doc) findings(r *report.Report, res engine.Record, evidence bool) {
	shown := map[*wire.Exchange]bool{}
	for i, f := range res.Findings {
		if i == maxFindings {
			d.line(fmt.Sprintf("… %d more finding(s) in the JSON or text report.", len(res.Findings)-i))
			d.line()
			return
		}
		msg := report.Lines(f.Message)
		if len(msg) == 0 {
			msg = []string{"(no message)"}
		}
		for j, l := range msg {
			msg[j] = Escape(report.Clip(l, maxMessage))
		}
		d.line("- ", strings.Join(msg, "<br>"))
		d.line()
		if f.Ex == nil {
			continue
		}
		switch {
		case shown[f.Ex]:
			d.line("  (the exchange above)")
			d.line()
		case !evidence:
			d.line("  (evidence left out: the summary is long; see the JSON report)")
			d.line()
		default:
			shown[f.Ex] = true
			d.fence("  ", "text", exchangeLines(f.Ex))
			d.reproduce("  ", r.Reproduce(f))
		}
	}
	if len(res.Findings) == 0 && res.Reason != "" {
		d.line(Escape(report.FirstLine(res.Reason, maxMessage)))
		d.line()
	}
}

// exchangeLines draws one request and its answer, each line cleaned.
func exchangeLines(ex *wire.Exchange) []string {
	out := []string{"> " + report.Clean(ex.RequestLine())}
	if ex.Note != "" {
		out = append(out, "  # "+report.FirstLine(ex.Note, maxHeaderLine))
	}
	out = append(out, headerLines("  ", ex.ReqHeader)...)
	if len(ex.ReqBody) > 0 {
		out = append(out, bodyLines("  | ", ex.ReqBody)...)
	}
	out = append(out, "< "+report.Clean(ex.StatusLine()))
	if !ex.Answered() {
		return out
	}
	out = append(out, headerLines("  ", ex.Header)...)
	if len(ex.Body) == 0 {
		return append(out, "  (empty body)")
	}
	return append(out, bodyLines("  | ", ex.Body)...)
}

func headerLines(indent string, h http.Header) []string {
	var out []string
	for _, l := range wire.FormatHeader(h) {
		out = append(out, indent+report.Clip(report.Clean(l), maxHeaderLine))
	}
	return out
}

// bodyLines is an excerpt of b, a line per line, behind prefix.
func bodyLines(prefix string, b []byte) []string {
	s := string(b)
	cut := len(b) > bodyExcerpt
	if cut {
		n := bodyExcerpt
		for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); i++ {
			n--
		}
		s = string(b[:n])
	}
	ls := report.Lines(s)
	var out []string
	for i, l := range ls {
		if i == maxBodyLines {
			return append(out, fmt.Sprintf("%s… %d more line(s)", prefix, len(ls)-i))
		}
		out = append(out, prefix+l)
	}
	if cut {
		out = append(out, prefix+"… (cut)")
	}
	return out
}

// reproduce writes the curl line that sends the evidence's request
// again, fenced, with what to know about it; or why there is none.
func (d *doc) reproduce(indent string, rep wire.Reproduction) {
	switch {
	case rep.Curl != "":
		d.line(indent, "Reproduce it:")
		d.line()
		d.fence(indent, "sh", []string{report.Clean(rep.Curl)})
		if rep.Note != "" {
			d.line(indent, Escape(report.Clip(rep.Note, maxMessage)))
			d.line()
		}
	case rep.Note != "":
		d.line(indent, Escape(report.Clip("No curl line reproduces it: "+rep.Note, maxMessage)))
		d.line()
	}
}

// fence writes lines, already cleaned, as a code block of lang indented
// by indent (under a list item), fenced with more backticks than any line
// holds in a row.
func (d *doc) fence(indent, lang string, lines []string) {
	longest := 0
	for _, l := range lines {
		longest = max(longest, backticks(l))
	}
	f := strings.Repeat("`", max(3, longest+1))
	d.line(indent, f, lang)
	for _, l := range lines {
		d.line(indent, l)
	}
	d.line(indent, f)
	d.line()
}

// others lists warnings, known failures and errors, one line each.
func (d *doc) others(r *report.Report) {
	for _, group := range []struct{ outcome, heading string }{
		{"ERROR", "Rules the checker could not evaluate"},
		{"WARN", "Warnings"},
		{"KNOWN", "Known failures, excused by the baseline"},
	} {
		var items []string
		for _, res := range r.Results {
			if outcome(r, res) != group.outcome {
				continue
			}
			item := "- " + ruleHeading(ruleOf(res))
			switch {
			case len(res.Findings) > 0:
				item += ": " + Escape(report.FirstLine(res.Findings[0].Message, maxMessage))
				if n := len(res.Findings); n > 1 {
					item += fmt.Sprintf(" (and %d more)", n-1)
				}
			case res.Reason != "":
				item += ": " + Escape(report.FirstLine(res.Reason, maxMessage))
			}
			items = append(items, item)
		}
		if len(items) == 0 {
			continue
		}
		d.line("### ", group.heading)
		d.line()
		for _, it := range items {
			d.line(it)
		}
		d.line()
	}
}

// Escape makes one line of text safe as Markdown prose or a table cell:
// cleaned as report cleans runner text, < > & written as entities, the
// punctuation that opens Markdown's inline constructs (\ ` * _ [ ] | ~ and
// GitHub's math, $) backslash-escaped, and a line start that would make a
// block (# - + = 1. 1) or a quote) escaped too. No tag, table cell break,
// emphasis, link, list or heading can come out of it.
func Escape(s string) string {
	s = report.Clean(s)
	// An ordered list marker: digits then . or ), at the line start.
	mark := 0
	for mark < len(s) && s[mark] >= '0' && s[mark] <= '9' {
		mark++
	}
	if mark == 0 || mark == len(s) || (s[mark] != '.' && s[mark] != ')') {
		mark = -1
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_[]|~$#", r), i == 0 && strings.ContainsRune("-+=", r), i == mark:
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// HTML makes one line of text safe inside an HTML element, where Markdown
// is not read (a <summary>): cleaned, and & < > " ' as entities.
func HTML(s string) string {
	return htmlEscaper.Replace(report.Clean(s))
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// Code is s as an inline code span, cleaned, with | escaped for a table
// (GitHub splits table cells even inside code).
func Code(s string) string {
	s = strings.ReplaceAll(report.Clean(s), "|", `\|`)
	longest := backticks(s)
	f := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") {
		return f + " " + s + " " + f
	}
	return f + s + f
}

// backticks is the longest run of backticks in s: a code span or fence
// around s needs one more.
func backticks(s string) int {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
