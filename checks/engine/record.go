package engine

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
)

// About is a rule as a report shows it, whatever its mode: what it checks
// and how it binds, without its probe or its environment.
type About struct {
	ID, Section string
	Level       int
	Keyword     Keyword
	Binding     Binding // never "": Direct where the rule leaves it unset
	Chain       string
	Title       string
	Advisory    bool
	Needs       []string
}

// About describes r.
func (r *Rule[E]) About() About {
	return About{ID: r.ID, Section: r.Section, Level: r.Level, Keyword: r.Keyword, Binding: r.BindingOf(),
		Chain: r.Chain, Title: r.Title, Advisory: r.Advisory, Needs: r.NeedNames()}
}

// Strength is how a broken rule so described is reported: FAIL or WARN.
func (a About) Strength() Outcome {
	if a.Keyword.Binds() && !a.Advisory && a.Binding != Inferred {
		return Fail
	}
	return Warn
}

// Record is what one rule came to, as any report reads it: the rule
// described, its outcome (with a SKIP's kind), findings and evidence. It
// is the same for every mode.
type Record struct {
	Rule      About
	Outcome   Outcome
	Kind      SkipKind // a SKIP's kind; "" for any other outcome
	Findings  []Finding
	Reason    string
	Notes     []string
	Exchanges []*wire.Exchange
	Elapsed   time.Duration
}

// Record is res as a report reads it.
func (res Result[E]) Record() Record {
	rec := Record{Outcome: res.Outcome, Kind: res.Kind, Findings: res.Findings, Reason: res.Reason,
		Notes: res.Notes, Exchanges: res.Exchanges, Elapsed: res.Elapsed}
	if res.Rule != nil {
		rec.Rule = res.Rule.About()
	}
	if rec.Outcome == Skip && rec.Kind == "" {
		rec.Kind = Undecided // a SKIP nobody classified is not taken for decided
	}
	return rec
}

// Records are results as a report reads them, in order.
func Records[E any](results []Result[E]) []Record {
	out := make([]Record, len(results))
	for i, res := range results {
		out[i] = res.Record()
	}
	return out
}

// Undecided reports whether rec is a SKIP the checker could not decide.
func (rec Record) Undecided() bool { return rec.Outcome == Skip && rec.Kind == Undecided }

// Verdict is what a mode concludes from its records: the line a report
// ends on, and the figures behind it. Each mode decides its own (the
// runner check in package levels, the entitlement walk in its package);
// the reports only render it.
type Verdict struct {
	// Scope is the line a text report writes above the tally: what the
	// verdict was reached against ("Declared level: 3 — Stream (…)").
	Scope string `json:"-"`
	// Declared is the level the target declares, for a mode with levels
	// (0 otherwise, or where it declares none).
	Declared   int  `json:"declared_level"`
	Conformant bool `json:"conformant"`
	Broken     int  `json:"must_broken"` // binding rules in scope that failed
	// Baselined counts failures excused by a baseline file.
	Baselined int `json:"baselined"`
	// Undecided counts the rules in scope the checker could not decide. A
	// verdict with any, and nothing broken, is not determined: no
	// conformance is claimed, and the run exits ExitCannotCheck.
	Undecided int    `json:"undecided"`
	Text      string `json:"text"`
}

// Determined reports whether the verdict says one way or the other: a
// breach, or every rule in scope decided. A verdict with nothing broken
// and rules left undecided says neither.
func (v Verdict) Determined() bool { return v.Broken > 0 || v.Undecided == 0 }

// Cause says in a few words what kept records undecided, for a verdict
// line: the run's deadline where most of them ran out of time (the user's
// own --deadline said so); else the request the target most often left
// without a whole answer, never sent once its route stopped answering
// first ("the runner stopped answering POST run"); else the first
// undecided rule's reason. who names the target ("the runner").
func Cause(records []Record, who string) string {
	gaveUp, unanswered := &tally{}, &tally{}
	n, late, own := 0, 0, false
	first := ""
	for _, rec := range records {
		if !rec.Undecided() {
			continue
		}
		n++
		if first == "" {
			first = rec.Rule.ID
		}
		if strings.Contains(rec.Reason, "deadline") {
			late++
			own = own || strings.Contains(rec.Reason, "--deadline set")
		}
		for _, ex := range rec.Exchanges {
			switch {
			case ex == nil || Whole(ex) || errors.Is(ex.Err, ErrDeadline):
			case errors.Is(ex.Err, ErrGaveUp):
				gaveUp.add(rec.Rule.ID, ex)
			default:
				unanswered.add(rec.Rule.ID, ex)
			}
		}
	}
	switch {
	case late*2 > n && own:
		return "the --deadline given passed first; a longer one may decide them"
	case late*2 > n:
		return "the run's deadline passed first"
	case gaveUp.best() != "":
		return who + " stopped answering " + gaveUp.best()
	case unanswered.best() != "":
		return who + " stopped answering " + unanswered.best()
	case first != "":
		return "see the reason of each undecided SKIP, " + first + "'s first"
	}
	return ""
}

// tally counts, per request ("POST run"), the records it kept undecided.
type tally struct {
	counts map[string]int
	order  []string
	seen   map[string]bool
}

func (t *tally) add(rule string, ex *wire.Exchange) {
	if t.counts == nil {
		t.counts, t.seen = map[string]int{}, map[string]bool{}
	}
	what := ex.Method + " " + path.Base(pathOf(ex.URL))
	if t.seen[rule+" "+what] {
		return
	}
	t.seen[rule+" "+what] = true
	if t.counts[what] == 0 {
		t.order = append(t.order, what)
	}
	t.counts[what]++
}

// best is the request counted most, the first so counted on a tie.
func (t *tally) best() string {
	best := ""
	for _, what := range t.order {
		if t.counts[what] > t.counts[best] {
			best = what
		}
	}
	return best
}

// pathOf is the path of a URL as an exchange records it.
func pathOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Path
	}
	return raw
}

// Words are what the verdict line of a mode without levels says in each
// case (see Decide).
type Words struct {
	Scope string // Verdict.Scope
	// Broken takes the count of MUST rules broken ("3 MUST rules").
	Broken string
	// Nothing says no rule could be decided at all.
	Nothing string
	// Undecided takes the count of undecided rules (in Unit, Units) and
	// the cause (Cause, with Who).
	Undecided   string
	Unit, Units string
	Who         string
	// Held says every binding rule held.
	Held string
}

// Decide is the verdict of a mode without levels (every rule is in scope)
// on its records: broken, baselined (excused names the rule IDs a baseline
// accepts), undecided, or held, in w's words. Nothing broken with a rule
// left undecided is not determined, and says what kept it so.
func Decide(records []Record, excused map[string]bool, w Words) Verdict {
	v := Verdict{Scope: w.Scope}
	var undecided []Record
	decided := 0
	for _, rec := range records {
		switch {
		case rec.Undecided():
			v.Undecided++
			undecided = append(undecided, rec)
		case rec.Outcome == Skip:
		case rec.Outcome != Fail:
			decided++
		case excused[rec.Rule.ID]:
			v.Baselined++
			decided++
		default:
			v.Broken++
			decided++
		}
	}
	v.Conformant = v.Broken == 0 && v.Undecided == 0 && decided > 0
	switch {
	case v.Broken > 0:
		v.Text = fmt.Sprintf(w.Broken, Count(v.Broken, "MUST rule", "MUST rules"))
	case decided == 0:
		v.Text = w.Nothing
	case v.Undecided > 0:
		v.Text = fmt.Sprintf(w.Undecided, Count(v.Undecided, w.Unit, w.Units), Cause(undecided, w.Who))
	default:
		v.Text = w.Held
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", Count(v.Baselined, "known failure", "known failures"))
	}
	return v
}

// Count is "1 step" or "3 steps".
func Count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
