package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/fleet"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/report/baseline"
)

// Fleet is the report of many runners checked in one invocation
// (checks/fleet): each runner's own Report, or why it could not be
// checked. Every format renders it runner by runner, each as the runner's
// own report would be, then the fleet as a whole.
type Fleet struct {
	Tool        string // "postern-conformance"
	ToolVersion string
	Started     time.Time
	Elapsed     time.Duration
	Runners     []Runner
}

// Runner is one runner of a fleet.
type Runner struct {
	Target string
	// Agent is the agent the runner serves, agent.id as describe (else
	// status) gives it; "" where neither does. It is the runner's own
	// text, untrusted.
	Agent string
	// Report is the runner's report; nil where it could not be checked.
	Report *Report
	// Err is why the runner could not be checked at all, or "".
	Err string
}

// AssembleFleet builds the report of a fleet: results as fleet.Check
// returned them for the options o (Target aside), bl the baseline held
// against every runner (nil for none). Each runner's Report is what
// Assemble makes of its check alone.
func AssembleFleet(results []fleet.Result, o runner.Options, bl *baseline.Baseline, run Run) *Fleet {
	f := &Fleet{ToolVersion: run.ToolVersion, Started: run.Started, Elapsed: run.Elapsed}
	for _, res := range results {
		rn := Runner{Target: res.Target}
		if res.Err != nil {
			rn.Err = res.Err.Error()
			f.Runners = append(f.Runners, rn)
			continue
		}
		ro := o
		ro.Target = res.Target
		rn.Report = Assemble(res.Env, res.Results, ro, bl, Run{
			ToolVersion: run.ToolVersion, Started: res.Started, Elapsed: res.Elapsed, AllEvidence: run.AllEvidence,
		})
		rn.Target = rn.Report.Target
		if res.Env != nil {
			if rn.Agent = runner.Str(res.Env.Describe.Obj, "agent", "id"); rn.Agent == "" {
				rn.Agent = runner.Str(res.Env.Status.Obj, "agent", "id")
			}
		}
		f.Runners = append(f.Runners, rn)
	}
	return f
}

func (f *Fleet) tool() string {
	if f.Tool == "" {
		return ToolName
	}
	return f.Tool
}

// FleetCounts tallies a fleet's runners.
type FleetCounts struct {
	Runners, Conformant, Nonconformant, Unchecked int
	// Undetermined are the runners checked whose verdict is not
	// determined: nothing broken, rules left undecided. They are not
	// counted as Nonconformant.
	Undetermined int
}

// Counts tallies the runners: conformant, not, not determined, or not
// checked at all.
func (f *Fleet) Counts() FleetCounts {
	c := FleetCounts{Runners: len(f.Runners)}
	for _, rn := range f.Runners {
		switch {
		case rn.Report == nil:
			c.Unchecked++
		case rn.Report.Verdict.Conformant:
			c.Conformant++
		case !rn.Report.Verdict.Determined():
			c.Undetermined++
		default:
			c.Nonconformant++
		}
	}
	return c
}

// Stale are the baseline's entries that no runner needs any more: the
// rule was checked and passed (or warned) on some runner, and FAILed on
// none. An entry one runner still fails stays, since the one baseline
// serves the whole fleet. In the baseline's order, each once.
func (f *Fleet) Stale() []baseline.Stale {
	failing := map[string]bool{}
	for _, rn := range f.Runners {
		if rn.Report == nil {
			continue
		}
		for _, res := range rn.Report.Results {
			if res.Outcome == engine.Fail && res.Rule.ID != "" {
				failing[res.Rule.ID] = true
			}
		}
	}
	var out []baseline.Stale
	seen := map[string]bool{}
	for _, rn := range f.Runners {
		if rn.Report == nil {
			continue
		}
		for _, st := range rn.Report.Stale {
			if !failing[st.ID] && !seen[st.ID] {
				seen[st.ID] = true
				out = append(out, st)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// Exit is the fleet's exit status, the worst of its runners' (each by
// Report.Exit under s; a runner that could not be checked is
// ExitCannotCheck: 2 beats 1 beats 0), and one line naming the runners
// behind it. A strict baseline is held against the fleet as a whole
// (Stale), not runner by runner.
func (f *Fleet) Exit(s Strictness) (code int, message string) {
	by := map[int][]string{}
	var unchecked, undetermined []string
	each := Strictness{Warn: s.Warn}
	for _, rn := range f.Runners {
		if rn.Report == nil {
			unchecked = append(unchecked, clean(rn.Target))
			code = ExitCannotCheck
			continue
		}
		c, _ := rn.Report.Exit(each)
		if c == ExitCannotCheck && !rn.Report.Verdict.Determined() && rn.Report.Counts().Error == 0 {
			undetermined = append(undetermined, clean(rn.Target))
		} else {
			by[c] = append(by[c], clean(rn.Target))
		}
		code = max(code, c)
	}
	n := len(f.Runners)
	var parts []string
	if len(unchecked) > 0 {
		parts = append(parts, fmt.Sprintf("%d could not be checked (%s)", len(unchecked), some(unchecked)))
	}
	if t := by[ExitCannotCheck]; len(t) > 0 {
		parts = append(parts, fmt.Sprintf("%d had a rule the checker could not evaluate (%s)", len(t), some(t)))
	}
	if len(undetermined) > 0 {
		parts = append(parts, fmt.Sprintf("%d left rules undecided, so %s not determined (%s)", len(undetermined),
			either(len(undetermined), "its verdict is", "their verdicts are"), some(undetermined)))
	}
	if t := by[ExitBroken]; len(t) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(t), either(len(t), "fails", "fail"), some(t)))
	}
	if len(parts) == 0 {
		if stale := f.Stale(); s.Baseline && len(stale) > 0 {
			ids := make([]string, len(stale))
			for i, st := range stale {
				ids[i] = st.ID
			}
			return ExitBroken, fmt.Sprintf("the baseline is stale, and a strict baseline fails the run: no runner fails %s any more; delete %s",
				some(ids), either(len(ids), "its line", "their lines"))
		}
		if s.Warn {
			return code, fmt.Sprintf("no rule FAILs or WARNs on any of the %s", engine.Count(n, "runner", "runners"))
		}
		return code, fmt.Sprintf("no rule FAILs on any of the %s", engine.Count(n, "runner", "runners"))
	}
	return code, fmt.Sprintf("of %s, %s", engine.Count(n, "runner", "runners"), strings.Join(parts, "; "))
}

// fleetColumn caps a column of the closing table.
const fleetColumn = 40

// WriteFleetText writes one section per runner, each its own text report
// (or why it could not be checked), then a closing table of the fleet:
// runner, agent, declared level and verdict.
func WriteFleetText(w io.Writer, f *Fleet, style Style) error {
	var b strings.Builder
	for i, rn := range f.Runners {
		t := newText(style)
		if i > 0 {
			t.line("", "")
		}
		t.line("", t.p.dim.Sprintf("=== runner %d of %d ===", i+1, len(f.Runners)))
		if rn.Report == nil {
			t.line("", t.p.bold.Sprint("Postern conformance · "+clean(rn.Target)))
			t.line("", "")
			t.line("", t.p.bad.Sprint("Not checked: "+firstLine(rn.Err, 0)))
			b.WriteString(t.b.String())
			continue
		}
		b.WriteString(t.b.String())
		if err := WriteText(&b, rn.Report, style); err != nil {
			return err
		}
	}
	t := newText(style)
	t.fleetTable(f)
	b.WriteString(t.b.String())
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *text) fleetTable(f *Fleet) {
	type row struct{ target, agent, level, verdict string }
	rows := []row{{"RUNNER", "AGENT", "LEVEL", "VERDICT"}}
	good := []bool{true}
	for _, rn := range f.Runners {
		r := row{target: clip(clean(rn.Target), fleetColumn), agent: clip(clean(orNone(rn.Agent)), fleetColumn), level: "-"}
		ok := false
		switch rp := rn.Report; {
		case rp == nil:
			r.agent = "-"
			r.verdict = "Not checked: " + firstLine(rn.Err, 2*fleetColumn)
		default:
			r.level = "none"
			if rp.Verdict.Declared > 0 {
				r.level = strconv.Itoa(rp.Verdict.Declared)
			}
			r.verdict, ok = clean(rp.Verdict.Text), rp.Verdict.Conformant
		}
		rows = append(rows, r)
		good = append(good, ok)
	}
	wt, wa, wl := 0, 0, 0
	for _, r := range rows {
		wt = max(wt, utf8.RuneCountInString(r.target))
		wa = max(wa, utf8.RuneCountInString(r.agent))
		wl = max(wl, utf8.RuneCountInString(r.level))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-utf8.RuneCountInString(s)) }
	t.line("", "")
	t.line("", t.p.bold.Sprintf("=== the fleet: %s ===", engine.Count(len(f.Runners), "runner", "runners")))
	for i, r := range rows {
		verdict := r.verdict
		switch {
		case i == 0:
			verdict = t.p.dim.Sprint(verdict)
		case good[i]:
			verdict = t.p.good.Sprint(verdict)
		default:
			verdict = t.p.bad.Sprint(verdict)
		}
		head := pad(r.target, wt) + "  " + pad(r.agent, wa) + "  " + pad(r.level, wl) + "  "
		if i == 0 {
			head = t.p.dim.Sprint(head)
		}
		t.line("  ", head, verdict)
	}
	c := f.Counts()
	t.line("", "")
	undetermined := ""
	if c.Undetermined > 0 {
		undetermined = fmt.Sprintf("%d not determined  ", c.Undetermined)
	}
	t.line("", fmt.Sprintf("%d conformant  %d nonconformant  %s%d not checked · took %s", c.Conformant, c.Nonconformant, undetermined, c.Unchecked, f.Elapsed.Round(time.Millisecond)))
}

// FleetFormat identifies the JSON document of a fleet (FORMAT.md); its
// schema is FleetSchemaRef within the report's schema.
const FleetFormat = "postern-conformance/fleet"

// FleetSchemaRef is where, in Schema(), the fleet document's schema is.
const FleetSchemaRef = "#/$defs/fleet"

type jsonFleet struct {
	Format        string            `json:"format"`
	FormatVersion int               `json:"format_version"`
	Tool          jsonTool          `json:"tool"`
	Started       string            `json:"started"`
	ElapsedMS     int64             `json:"elapsed_ms"`
	Counts        jsonFleetCounts   `json:"counts"`
	Runners       []jsonFleetRunner `json:"runners"`
}

type jsonFleetCounts struct {
	Runners       int `json:"runners"`
	Conformant    int `json:"conformant"`
	Nonconformant int `json:"nonconformant"`
	Unchecked     int `json:"unchecked"`
	Undetermined  int `json:"undetermined"`
}

type jsonFleetRunner struct {
	Target string          `json:"target"`
	Agent  *string         `json:"agent"`
	Error  *string         `json:"error"`
	Report json.RawMessage `json:"report"`
}

// WriteFleetJSON writes the fleet as one JSON document: the fleet's
// counts, and per runner its target, agent, error and report, the report
// being the very document WriteJSON writes for that runner alone (null
// where the runner could not be checked). FORMAT.md describes it.
func WriteFleetJSON(w io.Writer, f *Fleet) error {
	c := f.Counts()
	doc := jsonFleet{
		Format:        FleetFormat,
		FormatVersion: FormatVersion,
		Tool:          jsonTool{Name: f.tool(), Version: f.ToolVersion},
		Started:       f.Started.UTC().Format(time.RFC3339),
		ElapsedMS:     f.Elapsed.Milliseconds(),
		Counts:        jsonFleetCounts(c),
		Runners:       make([]jsonFleetRunner, 0, len(f.Runners)),
	}
	for _, rn := range f.Runners {
		jr := jsonFleetRunner{Target: strings.ToValidUTF8(rn.Target, "\uFFFD"), Report: json.RawMessage("null")}
		if rn.Agent != "" {
			a := strings.ToValidUTF8(rn.Agent, "\uFFFD")
			jr.Agent = &a
		}
		if rn.Report == nil {
			e := strings.ToValidUTF8(rn.Err, "\uFFFD")
			jr.Error = &e
		} else {
			var b bytes.Buffer
			if err := WriteJSON(&b, rn.Report); err != nil {
				return err
			}
			jr.Report = b.Bytes()
		}
		doc.Runners = append(doc.Runners, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WriteFleetJUnit writes the fleet as one JUnit document with one
// <testsuite> per runner, each as WriteJUnit writes it; a runner that
// could not be checked is a suite of one testcase in <error>.
func WriteFleetJUnit(w io.Writer, f *Fleet) error {
	suites := make([]junitSuite, 0, len(f.Runners))
	for _, rn := range f.Runners {
		if rn.Report != nil {
			suites = append(suites, junitSuiteOf(rn.Report))
			continue
		}
		suites = append(suites, junitSuite{
			Name:       xmlSafe(clean("postern-conformance " + rn.Target)),
			Tests:      1,
			Errors:     1,
			Time:       seconds(0),
			Timestamp:  f.Started.UTC().Format("2006-01-02T15:04:05"),
			Properties: []junitProperty{{"target", xmlSafe(clean(rn.Target))}},
			Cases: []junitCase{{
				Classname: "runner",
				Name:      "the runner could be checked",
				Time:      seconds(0),
				Error: &junitProblem{
					Message: xmlSafe(firstLine(rn.Err, maxMessage)),
					Type:    "unreachable",
					Text:    xmlSafe(strings.Join(lines(rn.Err), "\n")),
				},
			}},
		})
	}
	return writeJUnit(w, f.tool(), seconds(f.Elapsed), suites)
}
