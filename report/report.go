// Package report renders one checking run three ways: a text report for a
// person or a CI log (WriteText), a versioned JSON document for programs
// (WriteJSON, described in FORMAT.md and by the embedded JSON Schema), and
// JUnit XML for CI test dashboards (WriteJUnit).
//
// Every format reads the same Report and none of them judges anything,
// whatever the mode: the outcomes come from the mode's rules, as the
// engine's records (engine.Record), and the verdict from the mode (levels
// for the runner check, the walk's own package for the entitlement walk).
// New builds the Report of any mode's run, Assemble that of a runner
// check, and Exit maps a report to the exit status the command and the Go
// API share. Text from the runner
// (bodies, header values, messages quoting them) is untrusted; each writer
// makes it safe for its medium — no terminal escapes in text, valid UTF-8 in
// JSON, only XML 1.0 characters in JUnit.
package report

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/levels"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"github.com/sigrix-io/postern-conformance/wire"
)

// ToolName is the name reports carry when Report.Tool is empty.
const ToolName = "postern-conformance"

// Report is one checking run, the thing every format renders.
type Report struct {
	Tool        string // "postern-conformance"
	ToolVersion string
	// Mode is what was checked, in a word or two, for titles: ModeCheck
	// for the runner check, or another mode's own ("entitlement walk").
	Mode     string
	Target   string // runner origin
	Schemas  string // which schema set was used: "embedded" or a directory
	Options  Options
	Started  time.Time
	Elapsed  time.Duration
	Results  []engine.Record
	Verdict  engine.Verdict
	Baseline map[string]bool // rule IDs excused by a baseline (may be nil)
	// Stale are the baseline's entries whose rule was checked and no
	// longer fails, in the baseline's order.
	Stale []baseline.Stale
	// AgentStarts is how many times the check started the agent, by its
	// own count of the runs it sent that a runner could have executed
	// (runner.Env.AgentStarts); nil where --execute was not given.
	AgentStarts *int
	// Timelines are what the timed rules saw over time, by rule ID: each
	// step of an entitlement walk (entitlement.Env.Timelines), a
	// distributor check's timed rules (distributor.Env.Timelines). Only
	// the HTML page draws them; nil for a mode without.
	Timelines map[string]*timeline.Timeline
}

// ModeCheck is the Mode of a runner check.
const ModeCheck = "conformance"

// ModeName is r.Mode, ModeCheck where it is unset.
func (r *Report) ModeName() string {
	if r.Mode == "" {
		return ModeCheck
	}
	return r.Mode
}

// Header is what a mode says about its run besides its records and
// verdict (see New).
type Header struct {
	Mode    string // see Report.Mode; "" is ModeCheck
	Target  string
	Schemas string // "" is "embedded"
	Options Options
}

// New builds the report of a run of any mode: records are its results as
// the engine describes them (engine.Records), v the verdict the mode
// reached on them with bl's excuses (bl.Set()), and bl the baseline held
// against them (nil for none).
func New(h Header, records []engine.Record, v engine.Verdict, bl *baseline.Baseline, run Run) *Report {
	r := &Report{
		ToolVersion: run.ToolVersion,
		Mode:        h.Mode,
		Target:      h.Target,
		Schemas:     h.Schemas,
		Options:     h.Options,
		Started:     run.Started,
		Elapsed:     run.Elapsed,
		Results:     records,
		Verdict:     v,
		Baseline:    bl.Set(),
		Stale:       bl.Compare(records).Stale,
	}
	r.Options.AllEvidence = r.Options.AllEvidence || run.AllEvidence
	if r.Mode == "" {
		r.Mode = ModeCheck
	}
	if r.Schemas == "" {
		r.Schemas = "embedded"
	}
	return r
}

// Options are the choices the user made for the run, as the report shows
// them.
type Options struct {
	Origin  string
	Execute bool
	Rules   []string // selection patterns; empty means every rule
	Timeout time.Duration
	// Deadline is the whole run's deadline, the default resolved.
	Deadline time.Duration
	Headers  []string // names of the headers sent on every request, never values
	// MaxRuns is the budget of agent starts (--max-runs), the default
	// resolved; zero without --execute.
	MaxRuns int
	// AllEvidence keeps every exchange in the JSON report, a PASS's too, so
	// the report records what was probed as well as what broke.
	AllEvidence bool
}

// Counts tallies outcomes. A FAIL excused by the baseline counts as
// Baselined, not Fail. Every SKIP counts in Skip and in the count of its
// kind.
type Counts struct {
	Pass, Fail, Warn, Skip, Error, Baselined int
	NotApplicable, NeedsOption, Undecided    int
}

// Total is the number of results counted.
func (c Counts) Total() int { return c.Pass + c.Fail + c.Warn + c.Skip + c.Error + c.Baselined }

// Counts tallies the results.
func (r *Report) Counts() Counts {
	var c Counts
	for _, res := range r.Results {
		switch res.Outcome {
		case engine.Pass:
			c.Pass++
		case engine.Fail:
			if r.baselined(res) {
				c.Baselined++
			} else {
				c.Fail++
			}
		case engine.Warn:
			c.Warn++
		case engine.Skip:
			c.Skip++
			switch res.Kind {
			case engine.NotApplicable:
				c.NotApplicable++
			case engine.NeedsOption:
				c.NeedsOption++
			default:
				c.Undecided++
			}
		default: // engine.Error, and anything the engine never produces
			c.Error++
		}
	}
	return c
}

// Reproduce is how to send the request f's evidence shows again, as the
// checker sent it under the run's per-request timeout: a curl line, or why
// there is none (wire.Exchange.Reproduce). It is zero for a finding
// without evidence.
func (r *Report) Reproduce(f engine.Finding) wire.Reproduction {
	return f.Ex.Reproduce(r.Options.Timeout)
}

// baselined reports whether res is a FAIL the baseline excuses.
func (r *Report) baselined(res engine.Record) bool {
	return res.Outcome == engine.Fail && res.Rule.ID != "" && r.Baseline[res.Rule.ID]
}

func (r *Report) tool() string {
	if r.Tool == "" {
		return ToolName
	}
	return r.Tool
}

// baselineIDs lists the baseline's rule IDs in order.
func (r *Report) baselineIDs() []string {
	ids := make([]string, 0, len(r.Baseline))
	for id, ok := range r.Baseline {
		if ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// unknownRule stands in for a result that carries no rule, so that a
// malformed result is still reported rather than crashing the report.
var unknownRule = engine.About{ID: "?", Section: "?", Title: "(result without a rule)"}

func ruleOf(res engine.Record) engine.About {
	if res.Rule.ID == "" {
		return unknownRule
	}
	return res.Rule
}

// Run is what a report says about a run beyond what its mode returns.
type Run struct {
	ToolVersion string
	Started     time.Time
	Elapsed     time.Duration
	AllEvidence bool // see Options.AllEvidence
}

// Assemble builds the report of one runner check: env and results as
// runner.Check returned them for the options o, and bl the baseline held
// against them (nil for none). The verdict is levels.Decide's.
func Assemble(env *runner.Env, results []runner.Result, o runner.Options, bl *baseline.Baseline, run Run) *Report {
	h := Header{
		Mode:   ModeCheck,
		Target: o.Target,
		Options: Options{
			Origin:   o.Origin,
			Execute:  o.Execute,
			Rules:    o.Rules,
			Timeout:  o.Timeout,
			Deadline: o.Deadline,
			Headers:  HeaderNames(o.Headers),
		},
	}
	if h.Options.Deadline == 0 {
		h.Options.Deadline = runner.DefaultDeadline(o.Timeout, o.Execute)
	}
	if o.Schemas != nil {
		h.Schemas = o.Schemas.Source
	}
	declared := 0
	if env != nil {
		declared = env.Level
		if env.Client != nil {
			h.Target = env.Client.Base().String()
		}
	}
	records := engine.Records(results)
	r := New(h, records, levels.Decide(declared, records, bl.Set()), bl, run)
	if o.Execute {
		r.Options.MaxRuns = o.MaxRuns
		if r.Options.MaxRuns <= 0 {
			r.Options.MaxRuns = runner.DefaultMaxRuns
		}
		if env != nil && env.Session != nil {
			n := env.AgentStarts()
			r.AgentStarts = &n
		}
	}
	return r
}

// HeaderNames are the names of the headers sent on every request, sorted;
// their values never reach a report.
func HeaderNames(h http.Header) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Exit statuses of a checking run, the same for the command and the Go API.
const (
	ExitOK          = 0 // no FAIL that the baseline does not excuse
	ExitBroken      = 1 // a FAIL, or what Strictness adds to it
	ExitCannotCheck = 2 // a rule ERRORed, or the runner could not be checked at all
)

// Strictness is what fails a run besides a FAIL.
type Strictness struct {
	Warn     bool // a WARN fails the run (a SHOULD broken): --strict
	Baseline bool // a stale baseline entry fails the run: --strict-baseline
}

// Exit is the exit status of the run and one line saying why. In order: a
// FAIL the baseline does not excuse is ExitBroken; a rule the checker could
// not evaluate is ExitCannotCheck, and so is a verdict left undetermined
// by rules the checker could not decide; then, where s asks for it, a
// WARN or a stale baseline entry is ExitBroken.
func (r *Report) Exit(s Strictness) (code int, message string) {
	var fails, errs, warns []string
	for _, res := range r.Results {
		id := ruleOf(res).ID
		switch res.Outcome {
		case engine.Pass, engine.Skip:
		case engine.Fail:
			if !r.baselined(res) {
				fails = append(fails, id)
			}
		case engine.Warn:
			warns = append(warns, id)
		default:
			errs = append(errs, id)
		}
	}
	switch {
	case len(fails) > 0:
		return ExitBroken, fmt.Sprintf("%s not excused by a baseline: %s", engine.Count(len(fails), "rule FAILs", "rules FAIL"), some(fails))
	case len(errs) > 0:
		return ExitCannotCheck, fmt.Sprintf("%s could not be evaluated (the checker failed; see ERROR in the report): %s", engine.Count(len(errs), "rule", "rules"), some(errs))
	case !r.Verdict.Determined():
		return ExitCannotCheck, r.Verdict.Text
	case s.Warn && len(warns) > 0:
		return ExitBroken, fmt.Sprintf("%s, and a WARN fails a strict run: %s", engine.Count(len(warns), "rule WARNs", "rules WARN"), some(warns))
	case s.Baseline && len(r.Stale) > 0:
		stale := make([]string, len(r.Stale))
		for i, st := range r.Stale {
			stale[i] = fmt.Sprintf("%s (now %s)", st.ID, st.Outcome)
		}
		return ExitBroken, fmt.Sprintf("the baseline is stale, and a strict baseline fails the run: %s no longer %s; delete %s",
			some(stale), either(len(stale), "fails", "fail"), either(len(stale), "its line", "their lines"))
	}
	if c := r.Counts(); c.Baselined > 0 {
		return ExitOK, fmt.Sprintf("no rule FAILs but the %s the baseline excuses", engine.Count(c.Baselined, "known failure", "known failures"))
	}
	return ExitOK, "no rule FAILs"
}

func either(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// some lists the first few of ids and says how many more there are.
func some(ids []string) string {
	const shown = 5
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], ", "), len(ids)-shown)
}
