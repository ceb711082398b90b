package report

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Style is how the text report is drawn.
type Style struct {
	// Color draws outcomes and the verdict in ANSI colour.
	Color bool
	// Verbose shows every header of the evidence, request bodies, longer
	// body excerpts, every finding, known failures' evidence, and the whole
	// of a checker error.
	Verbose bool
}

// AutoStyle colours output for f only when f is a terminal, NO_COLOR is
// unset or empty, and TERM is not "dumb". Verbose is left off.
func AutoStyle(f *os.File) Style {
	if f == nil || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return Style{}
	}
	fd := f.Fd()
	return Style{Color: isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)}
}

// Layout limits.
const (
	indentResult   = "    "
	indentDetail   = "          " // under the title: len(indentResult) + 5 + 1
	maxTitleColumn = 60           // titles are padded to align rule IDs up to this width
	bodyExcerpt    = 300          // bytes of a body shown
	bodyExcerptV   = 2048         // … when verbose
	bodyLines      = 6            // lines of a body shown
	bodyLinesV     = 40
	maxFindings    = 5 // findings shown per result unless verbose
	maxReason      = 200
)

// WriteText writes the human report. Without colour it is plain ASCII
// layout (with "§", "·" and "—") that reads well in a CI log.
func WriteText(w io.Writer, r *Report, style Style) error {
	t := newText(style)
	t.timeout = r.Options.Timeout
	t.header(r)
	t.results(r)
	t.footer(r)
	_, err := io.WriteString(w, t.b.String())
	return err
}

// palette holds one colour object per role, each forced on or off so that
// output never depends on fatih/color's global terminal detection.
type palette struct {
	pass, fail, warn, skip, errc, known, dim, bold, good, bad *color.Color
}

func newPalette(on bool) palette {
	mk := func(a ...color.Attribute) *color.Color {
		c := color.New(a...)
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
		return c
	}
	return palette{
		pass:  mk(color.FgGreen),
		fail:  mk(color.FgRed, color.Bold),
		warn:  mk(color.FgYellow),
		skip:  mk(color.FgBlue),
		errc:  mk(color.FgMagenta, color.Bold),
		known: mk(color.FgYellow),
		dim:   mk(color.Faint),
		bold:  mk(color.Bold),
		good:  mk(color.FgGreen, color.Bold),
		bad:   mk(color.FgRed, color.Bold),
	}
}

type text struct {
	b       strings.Builder
	p       palette
	verbose bool
	// timeout is the run's per-request timeout, for the reproduce lines.
	timeout time.Duration
}

func newText(s Style) *text { return &text{p: newPalette(s.Color), verbose: s.Verbose} }

// line writes indent and the already-safe parts, then a newline.
func (t *text) line(indent string, parts ...string) {
	t.b.WriteString(indent)
	for _, p := range parts {
		t.b.WriteString(p)
	}
	t.b.WriteByte('\n')
}

func (t *text) header(r *Report) {
	t.line("", t.p.bold.Sprint("Postern conformance · "+clean(r.Target)))
	t.line("", "schemas: ", clean(orNone(r.Schemas)))
	o := r.Options
	var opts []string
	if r.ModeName() == ModeCheck { // a runner's choices; another mode has none of them
		opts = append(opts, "origin: "+clean(orNone(o.Origin)), "execute: "+yesNo(o.Execute))
	}
	if len(o.Rules) > 0 {
		opts = append(opts, "rules: "+clean(strings.Join(o.Rules, " ")))
	}
	if len(o.Headers) > 0 {
		opts = append(opts, "headers: "+clean(strings.Join(o.Headers, ", ")))
	}
	if t.verbose && o.Timeout > 0 {
		opts = append(opts, "timeout: "+o.Timeout.String())
	}
	if len(opts) > 0 {
		t.line("", strings.Join(opts, " · "))
	}
	if t.verbose {
		tool := r.tool()
		if r.ToolVersion != "" {
			tool += " " + r.ToolVersion
		}
		t.line("", t.p.dim.Sprint(clean(tool)+" · started "+r.Started.UTC().Format(time.RFC3339)+" · took "+r.Elapsed.Round(time.Millisecond).String()))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// sections groups result indexes by section, in order of first appearance.
func sections(results []engine.Record) (order []string, by map[string][]int) {
	by = map[string][]int{}
	for i, res := range results {
		s := ruleOf(res).Section
		if _, seen := by[s]; !seen {
			order = append(order, s)
		}
		by[s] = append(by[s], i)
	}
	return order, by
}

func (t *text) results(r *Report) {
	width := 0
	for _, res := range r.Results {
		if n := utf8.RuneCountInString(clean(ruleOf(res).Title)); n > width {
			width = n
		}
	}
	width = min(width, maxTitleColumn)
	order, by := sections(r.Results)
	for _, sec := range order {
		t.line("", "")
		t.line("  ", t.p.bold.Sprint("§"+clean(sec)))
		for _, i := range by[sec] {
			t.result(r, r.Results[i], width)
		}
	}
}

// label is the outcome as shown, padded to five columns and coloured.
func (t *text) label(o engine.Outcome, known bool) string {
	s, c := string(o), t.p.errc
	switch {
	case known:
		s, c = "KNOWN", t.p.known
	case o == engine.Pass:
		c = t.p.pass
	case o == engine.Fail:
		c = t.p.fail
	case o == engine.Warn:
		c = t.p.warn
	case o == engine.Skip:
		c = t.p.skip
	case o == engine.Error:
	default:
		s = clip(clean(s), 5)
	}
	pad := ""
	if n := utf8.RuneCountInString(s); n < 5 {
		pad = strings.Repeat(" ", 5-n)
	}
	return c.Sprint(s) + pad
}

func (t *text) result(r *Report, res engine.Record, width int) {
	rule := ruleOf(res)
	known := r.baselined(res)
	title := clean(rule.Title)
	if n := utf8.RuneCountInString(title); n < width {
		title += strings.Repeat(" ", width-n)
	}
	t.line(indentResult, t.label(res.Outcome, known), " ", title, "  ", t.p.dim.Sprint("["+clean(rule.ID)+"]"))
	switch res.Outcome {
	case engine.Fail, engine.Warn:
		if known {
			t.line(indentDetail, t.p.known.Sprint("known failure, excused by the baseline"))
		}
		if why := warnsOnly(res); why != "" {
			t.line(indentDetail, t.p.dim.Sprint(why))
		}
		t.findings(indentDetail, res, !known || t.verbose)
	case engine.Skip:
		if why := skipReason(res); why != "" {
			t.line(indentDetail, t.p.dim.Sprint(firstLine(why, maxReason)))
		}
	case engine.Pass:
	default:
		if t.verbose {
			for _, l := range lines(res.Reason) {
				t.line(indentDetail, l)
			}
		} else if res.Reason != "" {
			t.line(indentDetail, firstLine(res.Reason, maxReason))
		}
	}
	for _, n := range res.Notes {
		for _, l := range lines(n) {
			t.line(indentDetail, t.p.dim.Sprint(l))
		}
	}
}

// findings writes each finding's message and, when evidence is wanted, the
// exchange that shows it. An exchange cited twice is drawn once.
func (t *text) findings(indent string, res engine.Record, evidence bool) {
	shown := map[*wire.Exchange]bool{}
	for i, f := range res.Findings {
		if i == maxFindings && !t.verbose {
			t.line(indent, t.p.dim.Sprintf("… %d more finding%s not shown (verbose shows all)", len(res.Findings)-i, plural(len(res.Findings)-i)))
			return
		}
		msg := lines(f.Message)
		if len(msg) == 0 {
			msg = []string{"(no message)"}
		}
		for _, l := range msg {
			t.line(indent, l)
		}
		if !evidence || f.Ex == nil {
			continue
		}
		if shown[f.Ex] {
			t.line(indent+"  ", t.p.dim.Sprint("(the exchange above)"))
			continue
		}
		shown[f.Ex] = true
		t.exchange(indent, f.Ex)
		if t.verbose {
			t.reproduce(indent, f.Ex.Reproduce(t.timeout))
		}
	}
}

// reproduce writes the curl line that sends the evidence's request again,
// behind "$ ", and what to know about it; or why there is none.
func (t *text) reproduce(indent string, rep wire.Reproduction) {
	if rep.Curl == "" {
		if rep.Note != "" {
			t.line(indent, t.p.dim.Sprint("(no curl line reproduces it: "+clean(rep.Note)+")"))
		}
		return
	}
	t.line(indent, "$ ", clean(rep.Curl))
	if rep.Note != "" {
		t.line(indent+"  ", t.p.dim.Sprint("# "+clean(rep.Note)))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// exchange draws the evidence of one request and its answer.
func (t *text) exchange(indent string, ex *wire.Exchange) {
	sub := indent + "  "
	t.line(indent, "> ", clean(ex.RequestLine()))
	if ex.Note != "" {
		t.line(sub, t.p.dim.Sprint("# "+firstLine(ex.Note, maxReason)))
	}
	for _, h := range t.headers(ex.ReqHeader, requestHeader) {
		t.line(sub, h)
	}
	if t.verbose && len(ex.ReqBody) > 0 {
		t.body(sub, ex.ReqBody)
	}
	t.line(indent, "< ", clean(ex.StatusLine()))
	if !ex.Answered() {
		return
	}
	for _, h := range t.headers(ex.Header, responseHeader) {
		t.line(sub, h)
	}
	if ex.BodyUnread {
		t.line(sub, t.p.dim.Sprint("(body not read: the status line decided)"))
		return
	}
	if len(ex.Body) == 0 {
		t.line(sub, t.p.dim.Sprint("(empty body)"))
		return
	}
	t.body(sub, ex.Body)
}

// requestHeader and responseHeader pick the headers shown when not verbose.
func requestHeader(k string) bool {
	return k == "Content-Type" || k == "Origin" || strings.HasPrefix(k, "Access-Control-Request-")
}

func responseHeader(k string) bool {
	return k == "Content-Type" || k == "Vary" || strings.HasPrefix(k, "Access-Control-")
}

// headers renders h as "Name: value" lines in name order: all of them when
// verbose, else those keep picks.
func (t *text) headers(h http.Header, keep func(string) bool) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		if t.verbose || keep(http.CanonicalHeaderKey(k)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, clean(k)+": "+clean(v))
		}
	}
	return out
}

// body draws an excerpt of b, each line behind "| ".
func (t *text) body(indent string, b []byte) {
	n, maxLines := bodyExcerpt, bodyLines
	if t.verbose {
		n, maxLines = bodyExcerptV, bodyLinesV
	}
	ls := lines(textExcerpt(b, n))
	for i, l := range ls {
		if i == maxLines {
			t.line(indent, t.p.dim.Sprintf("| … %d more line%s", len(ls)-i, plural(len(ls)-i)))
			return
		}
		t.line(indent, "| ", l)
	}
}

// textExcerpt is at most n bytes of b, cut on a character boundary, with
// " …" marking a cut. Unlike wire.Excerpt it keeps invalid bytes, which
// clean then shows as \xNN: that a body is not UTF-8 can be the finding.
func textExcerpt(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for i := 0; i < utf8.UTFMax && cut > 0 && !utf8.RuneStart(b[cut]); i++ {
		cut--
	}
	return strings.TrimRight(string(b[:cut]), "\r\n") + " …"
}

func (t *text) footer(r *Report) {
	v := r.Verdict
	t.line("", "")
	if v.Scope != "" {
		t.line("", clean(v.Scope))
	}
	t.line("", countsLine(r.Counts()))
	if r.AgentStarts != nil {
		t.line("", startsLine(r))
	}
	t.line("", "")
	c := t.p.bad
	if v.Conformant {
		c = t.p.good
	}
	t.line("", c.Sprint(clean(v.Text)))
}

// startsLine says how many times an --execute check started the agent,
// against its budget.
func startsLine(r *Report) string {
	return fmt.Sprintf("The agent was started %s (--max-runs %d).", engine.Count(*r.AgentStarts, "time", "times"), r.Options.MaxRuns)
}

// StartsLine is startsLine for the other writers: "" where the check did
// not run the agent.
func (r *Report) StartsLine() string {
	if r.AgentStarts == nil {
		return ""
	}
	return startsLine(r)
}

// countsLine is "34 pass  0 fail  0 warn  2 skip", with the SKIPs' kinds
// after them ("(1 not applicable, 1 needs an option)"), and errors and
// known failures added, only where there are any.
func countsLine(c Counts) string {
	s := fmt.Sprintf("%d pass  %d fail  %d warn  %d skip", c.Pass, c.Fail, c.Warn, c.Skip)
	if kinds := skipKinds(c); kinds != "" {
		s += " (" + kinds + ")"
	}
	if c.Error > 0 {
		s += fmt.Sprintf("  %d error", c.Error)
	}
	if c.Baselined > 0 {
		s += fmt.Sprintf("  %d known", c.Baselined)
	}
	return s
}

// warnsOnly says why a rule under a MUST-class keyword warned rather than
// failed, or "".
func warnsOnly(res engine.Record) string {
	rule := ruleOf(res)
	if res.Outcome != engine.Warn || !rule.Keyword.Binds() {
		return ""
	}
	switch {
	case rule.Binding == engine.Inferred:
		return "warns, not fails: inferred, no bold keyword binds this behaviour"
	case rule.Advisory:
		return "warns, not fails: this MUST can be evidenced from outside, never proven"
	}
	return "warns, not fails: what was found rests on no bold keyword (a constraint only the schema states)"
}

// skipKinds is how the SKIPs of c divide among the kinds, those with any:
// "3 not applicable, 2 need an option, 1 undecided".
func skipKinds(c Counts) string {
	var parts []string
	if c.NotApplicable > 0 {
		parts = append(parts, fmt.Sprintf("%d not applicable", c.NotApplicable))
	}
	if c.NeedsOption > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", c.NeedsOption, either(c.NeedsOption, "needs an option", "need an option")))
	}
	if c.Undecided > 0 {
		parts = append(parts, fmt.Sprintf("%d undecided", c.Undecided))
	}
	return strings.Join(parts, ", ")
}

// skipReason is a SKIP's reason as the reports show it: marked
// "undecided — " where the checker could not decide the rule (the other
// kinds say what they are in their reasons).
func skipReason(res engine.Record) string {
	if res.Kind == engine.Undecided {
		return "undecided — " + res.Reason
	}
	return res.Reason
}

// KindWords is a SKIP's kind as the reports write it before its reason:
// "not applicable", "needs an option", "undecided".
func KindWords(k engine.SkipKind) string {
	switch k {
	case engine.NotApplicable:
		return "not applicable"
	case engine.NeedsOption:
		return "needs an option"
	}
	return "undecided"
}
