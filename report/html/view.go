package html

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire"
)

// The page's views: everything the template shows, computed first, so the
// template only lays it out. Every string here is plain text, whatever it
// came from; the template escapes it for where it goes.

// reportView is one report: a page's whole, or a fleet runner's part.
type reportView struct {
	Prefix       string // anchors' prefix: "" alone, "r2-" in a fleet
	Runner       string // a fleet runner's anchor, or ""
	Unchecked    string // why a fleet's runner could not be checked, or ""
	Filters      bool   // the filter bar goes here
	Heading      string
	Verdict      string
	VerdictClass string
	Facts        []fact
	Counts       string
	Skips        []string // the SKIPs by kind, options named
	Stale        []string
	Tiles        []tile
	Coverage     []string
	Sections     []sectionView
	Empty        bool // no rule was checked
}

type fact struct{ Name, Value string }

// tile is one section on the map.
type tile struct {
	Href, Section, Class, Worst, Counts string
}

type sectionView struct {
	Anchor, Section, Class, Worst string
	Rules                         []ruleView
	Skips                         []skipGroup
}

// skipGroup is a section's SKIPs of one kind.
type skipGroup struct {
	Kind, Class string
	Rules       []ruleView
}

type ruleView struct {
	Anchor, ID, Title, Label, Class, Outcome string
	Open                                     bool
	Meta                                     string
	Why                                      string
	Option                                   string // the option a needs-option SKIP names
	Reason                                   []string
	Findings                                 []findingView
	More                                     int // findings past the ones shown
	Notes                                    [][]string
	Exchanges                                []*exchangeView
	Timeline                                 *timelineView
}

type findingView struct {
	Message  []string
	Inferred bool
	Evidence *exchangeView
	Same     bool // the evidence is the exchange shown above
	Curl     string
	Note     string
	NoCurl   string
	Judged   string // when a timed finding was judged, against which edges
}

type exchangeView struct {
	Request    string
	Note       string
	ReqHeaders []string
	ReqBody    []string
	Status     string
	Answered   bool
	Headers    []string
	Body       []string
	BodyNote   string
}

// Limits of what a page shows of one finding's evidence.
const (
	bodyExcerpt = 4096 // bytes of a body
	bodyLines   = 80   // lines of a body
	maxFindings = 20   // findings of one rule
)

// view builds the view of r, its anchors prefixed with prefix.
func view(r *report.Report, prefix string) *reportView {
	v := &reportView{Prefix: prefix, Verdict: report.Clean(r.Verdict.Text), VerdictClass: verdictClass(r)}
	v.Heading = report.Clean("Postern " + r.ModeName() + " · " + r.Target)
	v.Facts = facts(r)
	c := r.Counts()
	v.Counts = c.String()
	v.Skips = skipSummary(r, c)
	for _, st := range r.Stale {
		v.Stale = append(v.Stale, "stale baseline entry: "+st.String())
	}
	v.Coverage = coverage(r)
	order, by := sections(r)
	v.Empty = len(order) == 0
	for _, sec := range order {
		sv := sectionView{Anchor: prefix + "s-" + sec, Section: "§" + sec}
		worst := -1
		counts := map[string]int{}
		groups := map[engine.SkipKind]*skipGroup{}
		for _, res := range by[sec] {
			rv := ruleOf(r, res, prefix)
			counts[rv.Outcome]++
			if rank := rankOf(r, res); rank > worst {
				worst, sv.Class, sv.Worst = rank, rv.Class, worstWord(r, res)
			}
			if res.Outcome != engine.Skip {
				sv.Rules = append(sv.Rules, rv)
				continue
			}
			g := groups[res.Kind]
			if g == nil {
				g = &skipGroup{Kind: report.KindWords(res.Kind), Class: skipClass(res.Kind)}
				groups[res.Kind] = g
			}
			g.Rules = append(g.Rules, rv)
		}
		for _, k := range []engine.SkipKind{engine.Undecided, engine.NeedsOption, engine.NotApplicable} {
			if g := groups[k]; g != nil {
				sv.Skips = append(sv.Skips, *g)
				delete(groups, k)
			}
		}
		for _, g := range groups { // a kind the engine may add: shown, last
			sv.Skips = append(sv.Skips, *g)
		}
		v.Sections = append(v.Sections, sv)
		v.Tiles = append(v.Tiles, tile{Href: "#" + sv.Anchor, Section: sv.Section, Class: sv.Class, Worst: sv.Worst, Counts: tally(counts)})
	}
	return v
}

func verdictClass(r *report.Report) string {
	switch {
	case r.Verdict.Conformant:
		return "good"
	case !r.Verdict.Determined():
		return "undetermined"
	}
	return "bad"
}

// facts are the header's facts: what was checked, how, with what.
func facts(r *report.Report) []fact {
	var out []fact
	add := func(name, value string) { out = append(out, fact{name, report.Clean(value)}) }
	add("Target", r.Target)
	if label, rest, ok := strings.Cut(r.Verdict.Scope, ": "); ok {
		add(label, rest)
	} else if r.Verdict.Scope != "" {
		add("Scope", r.Verdict.Scope)
	}
	o := r.Options
	if r.ModeName() == report.ModeCheck {
		add("--execute", yesNo(o.Execute))
		add("--origin", orNone(o.Origin))
		if o.Execute && o.MaxRuns > 0 {
			add("--max-runs", fmt.Sprint(o.MaxRuns))
		}
	}
	if len(o.Headers) > 0 {
		add("--header", strings.Join(o.Headers, ", ")+" (values never shown)")
	}
	if len(o.Rules) > 0 {
		add("--rule", strings.Join(o.Rules, " "))
	}
	if o.Timeout > 0 {
		add("--timeout", o.Timeout.String())
	}
	if o.Deadline > 0 {
		add("--deadline", o.Deadline.String())
	}
	if s := r.StartsLine(); s != "" {
		add("Agent starts", s)
	}
	if len(r.Baseline) > 0 {
		add("Baseline", engine.Count(len(r.Baseline), "rule excused", "rules excused"))
	}
	add("Schemas", r.Schemas)
	tool := report.ToolName
	if r.Tool != "" {
		tool = r.Tool
	}
	if r.ToolVersion != "" {
		tool += " " + r.ToolVersion
	}
	add("Checker", tool)
	if !r.Started.IsZero() {
		add("Started", r.Started.UTC().Format(time.RFC3339))
	}
	add("Took", r.Elapsed.Round(time.Millisecond).String())
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// option finds the options a needs-option SKIP's reason names.
var option = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// optionOf is the option (or options) a needs-option SKIP would be
// decided with, as its reason names it.
func optionOf(res engine.Record) string {
	var names []string
	seen := map[string]bool{}
	for _, o := range option.FindAllString(res.Reason, -1) {
		if !seen[o] {
			seen[o] = true
			names = append(names, o)
		}
	}
	if len(names) == 0 {
		return "an option"
	}
	return strings.Join(names, " and ")
}

// skipSummary is the SKIPs by kind, the options that would decide the
// needs-option ones counted by option.
func skipSummary(r *report.Report, c report.Counts) []string {
	if c.Skip == 0 {
		return nil
	}
	var out []string
	if c.Undecided > 0 {
		out = append(out, fmt.Sprintf("%d undecided", c.Undecided))
	}
	if c.NeedsOption > 0 {
		var order []string
		by := map[string]int{}
		for _, res := range r.Results {
			if res.Outcome == engine.Skip && res.Kind == engine.NeedsOption {
				o := optionOf(res)
				if by[o] == 0 {
					order = append(order, o)
				}
				by[o]++
			}
		}
		parts := make([]string, len(order))
		for i, o := range order {
			parts[i] = fmt.Sprintf("%s %d", o, by[o])
		}
		out = append(out, fmt.Sprintf("%d %s: %s", c.NeedsOption, needWord(c.NeedsOption), strings.Join(parts, ", ")))
	}
	if c.NotApplicable > 0 {
		out = append(out, fmt.Sprintf("%d not applicable", c.NotApplicable))
	}
	return out
}

func needWord(n int) string {
	if n == 1 {
		return "needs an option"
	}
	return "need an option"
}

// sections are the results of r by section, in order of first
// appearance (report.Report.Sections).
func sections(r *report.Report) (order []string, by map[string][]engine.Record) {
	order, idx := r.Sections()
	by = make(map[string][]engine.Record, len(idx))
	for s, is := range idx {
		for _, i := range is {
			by[s] = append(by[s], r.Results[i])
		}
	}
	return order, by
}

// outcome is what a result shows as: PASS FAIL WARN SKIP ERROR, or KNOWN
// for a FAIL the baseline excuses.
func outcome(r *report.Report, res engine.Record) string {
	switch {
	case r.Known(res):
		return "KNOWN"
	case res.Outcome == engine.Pass, res.Outcome == engine.Fail, res.Outcome == engine.Warn, res.Outcome == engine.Skip:
		return string(res.Outcome)
	}
	return "ERROR"
}

// rankOf orders outcomes by how much they matter, for a section's colour:
// a FAIL, an ERROR, an undecided SKIP (it keeps a verdict from being
// reached), a WARN, a KNOWN, a PASS, then the other SKIPs.
func rankOf(r *report.Report, res engine.Record) int {
	switch outcome(r, res) {
	case "FAIL":
		return 7
	case "ERROR":
		return 6
	case "WARN":
		return 4
	case "KNOWN":
		return 3
	case "PASS":
		return 2
	case "SKIP":
		if res.Kind == engine.Undecided {
			return 5
		}
		return 1
	}
	return 0
}

// worstWord is the outcome a section's tile is coloured by, in words.
func worstWord(r *report.Report, res engine.Record) string {
	o := outcome(r, res)
	if o == "SKIP" {
		return "SKIP: " + report.KindWords(res.Kind)
	}
	return o
}

func classOf(o string, res engine.Record) string {
	if o == "SKIP" {
		return skipClass(res.Kind)
	}
	return strings.ToLower(o)
}

func skipClass(k engine.SkipKind) string {
	if k == engine.Undecided {
		return "undecided"
	}
	return "skip"
}

// tally is "3 PASS · 1 FAIL", in a fixed order.
func tally(counts map[string]int) string {
	var parts []string
	for _, o := range []string{"FAIL", "ERROR", "WARN", "KNOWN", "PASS", "SKIP"} {
		if n := counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	return strings.Join(parts, " · ")
}

// ruleOf is one result's view.
func ruleOf(r *report.Report, res engine.Record, prefix string) ruleView {
	rule := report.RuleOf(res)
	o := outcome(r, res)
	rv := ruleView{Anchor: prefix + "r-" + rule.ID, ID: rule.ID, Title: rule.Title, Label: o, Outcome: o, Class: classOf(o, res)}
	rv.Meta = fmt.Sprintf("%s · Level %d · %s", rule.Keyword, rule.Level, rule.Binding)
	if rule.Chain != "" {
		rv.Meta += ": " + rule.Chain
	}
	switch o {
	case "FAIL", "WARN", "ERROR":
		rv.Open = true
	}
	rv.Why = report.WarnsOnly(res)
	if o == "KNOWN" {
		rv.Why = "known failure, excused by the baseline"
	}
	switch {
	case res.Outcome == engine.Skip:
		rv.Reason = report.Lines(report.SkipReason(res))
		if res.Kind == engine.NeedsOption {
			rv.Option = optionOf(res)
		}
	case len(res.Findings) == 0 && res.Reason != "":
		rv.Reason = report.Lines(res.Reason)
	}
	for _, n := range res.Notes {
		rv.Notes = append(rv.Notes, report.Lines(n))
	}
	tl := r.Timelines[rule.ID]
	shown := map[*wire.Exchange]bool{}
	for i, f := range res.Findings {
		if i == maxFindings {
			rv.More = len(res.Findings) - i
			break
		}
		fv := findingView{Message: report.Lines(f.Message), Inferred: f.Inferred}
		if len(fv.Message) == 0 {
			fv.Message = []string{"(no message)"}
		}
		if f.Ex != nil {
			if shown[f.Ex] {
				fv.Same = true
			} else {
				shown[f.Ex] = true
				fv.Evidence = exchangeOf(f.Ex)
				rep := r.Reproduce(f)
				fv.Curl, fv.Note = report.Clean(rep.Curl), rep.Note
				if rep.Curl == "" {
					fv.Note, fv.NoCurl = "", rep.Note
				}
			}
			fv.Judged = judged(tl, f.Ex)
		}
		rv.Findings = append(rv.Findings, fv)
	}
	if o != "PASS" && o != "SKIP" || r.Options.AllEvidence {
		for _, ex := range res.Exchanges {
			if ex != nil {
				rv.Exchanges = append(rv.Exchanges, exchangeOf(ex))
			}
		}
	}
	if tl != nil {
		rv.Timeline = draw(tl, res)
	}
	return rv
}

// exchangeOf is one request and its answer, each line cleaned.
func exchangeOf(ex *wire.Exchange) *exchangeView {
	v := &exchangeView{Request: report.Clean(ex.RequestLine()), Note: report.FirstLine(ex.Note, 0),
		ReqHeaders: headerLines(ex.ReqHeader), Status: report.Clean(ex.StatusLine()), Answered: ex.Answered()}
	if len(ex.ReqBody) > 0 {
		v.ReqBody, _ = bodyOf(ex.ReqBody, false)
	}
	if !ex.Answered() {
		return v
	}
	v.Headers = headerLines(ex.Header)
	switch {
	case ex.BodyUnread:
		v.BodyNote = "(body not read: the status line decided)"
	case len(ex.Body) == 0:
		v.BodyNote = "(empty body)"
	default:
		v.Body, v.BodyNote = bodyOf(ex.Body, ex.Truncated)
	}
	return v
}

func headerLines(h http.Header) []string {
	out := wire.FormatHeader(h)
	for i, l := range out {
		out[i] = report.Clean(l)
	}
	return out
}

// bodyOf is an excerpt of b, a line per line, and what was left out.
func bodyOf(b []byte, truncated bool) ([]string, string) {
	cut := len(b) > bodyExcerpt
	s := b
	if cut {
		n := bodyExcerpt
		for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); i++ {
			n--
		}
		s = b[:n]
	}
	ls := report.Lines(string(s))
	note := ""
	if len(ls) > bodyLines {
		note = fmt.Sprintf("… %d more lines", len(ls)-bodyLines)
		ls = ls[:bodyLines]
	}
	switch {
	case cut:
		note = strings.TrimSpace(note + fmt.Sprintf(" (%d bytes in all; the first %d shown)", len(b), len(s)))
	case truncated:
		note = strings.TrimSpace(note + " (the runner sent more than the checker reads)")
	}
	return ls, note
}

// judged says when a finding citing ex was judged, and against which
// edges, where the rule has a timeline holding ex.
func judged(tl *timeline.Timeline, ex *wire.Exchange) string {
	p, edges, ok := tl.Judged(ex)
	if !ok {
		return ""
	}
	s := fmt.Sprintf("Judged at %s (%s: %s)", since(tl.Start, p.Answered()), report.Clean(p.Label), report.Clean(p.Saw))
	if len(edges) == 0 {
		return s + ", with no window in force: no answer had set one."
	}
	parts := make([]string, len(edges))
	for i, e := range edges {
		parts[i] = fmt.Sprintf("%s at %s", report.Clean(e.Label), since(tl.Start, e.At))
	}
	return s + ", against: " + strings.Join(parts, "; ") + "."
}

// since is at as a time after start: "+2.00 s".
func since(start, at time.Time) string {
	d := at.Sub(start)
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	return fmt.Sprintf("%s%.2f s", sign, d.Seconds())
}
