// Package checks is the catalogue above the modes: the traceability matrix
// of SPEC.md §1–§8 (traceability.tsv), one obligation a row, mapped to the
// rules of whichever mode checks it (checks/runner, checks/entitlement,
// checks/distributor, checks/client) or to the reason none can, and the coverage counted
// from it. Nothing else lives here: each mode is a sibling package below,
// and no mode imports another.
package checks

import (
	_ "embed"
	"fmt"
	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The traceability matrix: every normative statement of SPEC.md §1–§8, one
// independently checkable obligation a row, with the rules that cover it or
// the reason none can. traceability.tsv is the data; this file parses it.
//
// Columns: id, section, keyword, subject, obligation, checks, reason,
// binding.
//   - id is "T<section>-<nn>", numbered within the section in reading order.
//   - checks is a space-separated list of rule IDs (may be empty).
//   - reason is empty when checks is not; otherwise a word from TraceReasons,
//     optionally followed by ": note".
//   - binding, for a row some rule checks, is how a bold keyword of SPEC.md
//     reaches the obligation: "direct", "chain: <the chain in a few
//     words>", "contract: §N" (§3 makes a runner implement its level's
//     verbs, and §N states the verb's wire contract in plain sentences: the
//     status and code of a condition, a media type, the event grammar, a
//     member's type, range or meaning), or "inferred: <the sentence that
//     supports the other reading>" (rationale, what only a schema states,
//     latitude, or a reading a careful implementer could contest); empty for
//     a row no rule checks. A rule's own Binding agrees with its rows (see
//     the tests): an inferred rule checks inferred rows only, and warns.

//go:embed traceability.tsv
var traceTSV []byte

// TraceRow is one obligation of the specification.
type TraceRow struct {
	ID, Section, Keyword, Subject, Obligation string
	Checks                                    []string
	Reason                                    string
	// Binding is how the keyword reaches the obligation ("" for a row no
	// rule checks); Chain names the chain where Binding is Chain, and the
	// section ("§4.3") where it is Contract; Why, for an Inferred row, names
	// the sentence that supports the other reading.
	Binding engine.Binding
	Chain   string
	Why     string
}

// ReasonWord is the reason without its note: "harness: needs a restart" →
// "harness". Empty for a row with no reason.
func (r TraceRow) ReasonWord() string {
	w, _, _ := strings.Cut(r.Reason, ":")
	return strings.TrimSpace(w)
}

// TraceReasons are the words a row's reason may start with.
//
// gap marks an obligation a runner could be judged on from outside, without
// executing the agent, for which no rule exists yet: the to-do list for the
// registry, kept visible rather than filed under a reason that is not true.
var TraceReasons = []string{
	"client",       // binds a client
	"distributor",  // binds a distributor
	"internal",     // internal to the runner, not observable over the wire
	"harness",      // needs a fake distributor, clock control, a restart, a disconnect…
	"execute",      // observable only by running the agent (--execute)
	"unobservable", // cannot be decided from outside at all
	"gap",          // runner-observable, no rule yet
}

// TraceSubjects are the parties a row may bind.
var TraceSubjects = []string{"runner", "client", "distributor", "bundle", "any"}

var traceKeywords = map[string]bool{
	string(engine.Must): true, string(engine.MustNot): true, string(engine.Required): true,
	string(engine.Should): true, string(engine.ShouldNot): true,
}

const traceHeader = "id\tsection\tkeyword\tsubject\tobligation\tchecks\treason\tbinding"

const traceColumns = 8

var traceID = regexp.MustCompile(`^T([0-9]+(?:\.[0-9]+)*)-([0-9]{2,3})$`)

var (
	traceOnce sync.Once
	traceRows []TraceRow
	traceErr  error
)

// Trace returns the traceability matrix, parsed once.
func Trace() ([]TraceRow, error) {
	traceOnce.Do(func() { traceRows, traceErr = parseTrace(traceTSV) })
	return traceRows, traceErr
}

// parseTrace parses the TSV. It rejects a line with the wrong column count,
// a keyword outside RFC 2119's binding and advisory five, a malformed or
// duplicate id, an id whose section disagrees with the section column, and a
// binding that is not direct, inferred or "chain: words".
// Whether a row's checks exist and its reason is allowed is the tests' to
// judge, against the registry.
func parseTrace(data []byte) ([]TraceRow, error) {
	text := strings.TrimPrefix(string(data), "\ufeff")
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) == 0 || lines[0] != traceHeader {
		return nil, fmt.Errorf("traceability.tsv: line 1: header is not %q", traceHeader)
	}
	var rows []TraceRow
	seen := map[string]int{}
	for i, line := range lines[1:] {
		n := i + 2
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != traceColumns {
			return nil, fmt.Errorf("traceability.tsv: line %d: %d columns, want %d", n, len(f), traceColumns)
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		r := TraceRow{
			ID: f[0], Section: f[1], Keyword: f[2], Subject: f[3],
			Obligation: f[4], Checks: strings.Fields(f[5]), Reason: f[6],
		}
		m := traceID.FindStringSubmatch(r.ID)
		if m == nil {
			return nil, fmt.Errorf("traceability.tsv: line %d: malformed id %q", n, r.ID)
		}
		if m[1] != r.Section {
			return nil, fmt.Errorf("traceability.tsv: line %d: id %s does not match section %q", n, r.ID, r.Section)
		}
		if prev, dup := seen[r.ID]; dup {
			return nil, fmt.Errorf("traceability.tsv: line %d: duplicate id %s (first on line %d)", n, r.ID, prev)
		}
		seen[r.ID] = n
		if !traceKeywords[r.Keyword] {
			return nil, fmt.Errorf("traceability.tsv: line %d: %s: bad keyword %q", n, r.ID, r.Keyword)
		}
		if r.Obligation == "" {
			return nil, fmt.Errorf("traceability.tsv: line %d: %s: empty obligation", n, r.ID)
		}
		b, words, err := parseBinding(f[7])
		if err != nil {
			return nil, fmt.Errorf("traceability.tsv: line %d: %s: %v", n, r.ID, err)
		}
		r.Binding = b
		if b == engine.Inferred {
			r.Why = words
		} else {
			r.Chain = words
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// parseBinding reads the binding column: the binding and the words after
// its colon (a chain, a contract's section, an inferred row's reason).
func parseBinding(s string) (engine.Binding, string, error) {
	if s == "" || s == string(engine.Direct) {
		return engine.Binding(s), "", nil
	}
	word, rest, _ := strings.Cut(s, ":")
	rest = strings.TrimSpace(rest)
	switch b := engine.Binding(word); b {
	case engine.Chain:
		if rest != "" {
			return b, rest, nil
		}
		return "", "", fmt.Errorf("binding %q names no chain", s)
	case engine.Contract:
		if engine.ContractSection(rest) {
			return b, rest, nil
		}
		return "", "", fmt.Errorf("binding %q names no section (\"contract: §4.3\")", s)
	case engine.Inferred:
		if rest != "" {
			return b, rest, nil
		}
		return "", "", fmt.Errorf("binding %q names no sentence supporting the other reading (\"inferred: <why>\")", s)
	}
	return "", "", fmt.Errorf("binding %q is not direct, \"chain: <words>\", \"contract: §N\" or \"inferred: <why>\"", s)
}

// Bindings are the bindings a checked row may carry, in order of strength.
var Bindings = []engine.Binding{engine.Direct, engine.Chain, engine.Contract, engine.Inferred}

// Coverage summarises the matrix. Each [2]int is {rows, checked}.
type Coverage struct {
	Rows    int
	Checked int
	// ByReason counts the unchecked rows by reason word (before ':').
	ByReason  map[string]int
	ByKeyword map[string][2]int
	BySubject map[string][2]int
	// ByBinding counts the checked rows by binding: those a rule may fail
	// a runner on (direct, chain, contract) and those it only warns on
	// (inferred).
	ByBinding map[engine.Binding]int

	// The rows on a runner: all of them, and those some rule checks.
	RunnerRows, RunnerChecked int
	// Default counts the checked rows some rule decides without --execute
	// (RunnerDefault those on a runner); ExecuteOnly, the checked rows
	// every rule citing them needs --execute for.
	Default, RunnerDefault, ExecuteOnly int
}

// TraceCoverage counts rows, checked rows, and their spread. Whether a
// row needs --execute is read from the rules in the registry it cites.
func TraceCoverage(rows []TraceRow) Coverage {
	c := Coverage{
		ByReason:  map[string]int{},
		ByKeyword: map[string][2]int{},
		BySubject: map[string][2]int{},
		ByBinding: map[engine.Binding]int{},
	}
	for _, r := range rows {
		c.Rows++
		checked := len(r.Checks) > 0
		runner := r.Subject == "runner"
		if runner {
			c.RunnerRows++
		}
		k, s := c.ByKeyword[r.Keyword], c.BySubject[r.Subject]
		k[0]++
		s[0]++
		if checked {
			c.Checked++
			k[1]++
			s[1]++
			c.ByBinding[r.Binding]++
			if runner {
				c.RunnerChecked++
			}
			switch {
			case needsExecute(r):
				c.ExecuteOnly++
			case runner:
				c.Default++
				c.RunnerDefault++
			default:
				c.Default++
			}
		} else {
			c.ByReason[r.ReasonWord()]++
		}
		c.ByKeyword[r.Keyword], c.BySubject[r.Subject] = k, s
	}
	return c
}

// needsExecute reports a row every registered rule citing it needs
// --execute for (a rule not in the registry decides nothing).
func needsExecute(r TraceRow) bool {
	for _, id := range r.Checks {
		rule, ok := TracedRule(id)
		if !ok {
			continue
		}
		if !slices.Contains(rule.Needs, runner.NeedExecute.Name) {
			return false
		}
	}
	return true
}

// Traced is what the traceability reads of a rule, whichever mode's
// registry holds it: the runner check's (All), the entitlement harness's
// (checks/entitlement), the distributor check's (checks/distributor) or
// the client check's (checks/client).
type Traced struct {
	ID, Title, Mode string
	Keyword         engine.Keyword
	Binding         engine.Binding
	// Chain is the rule's Chain: its chain, or its contract's section.
	Chain    string
	Strength engine.Outcome
	Needs    []string
}

// TracedRules is every rule of every mode.
func TracedRules() []Traced {
	var out []Traced
	for _, r := range runner.All() {
		out = append(out, Traced{r.ID, r.Title, "check", r.Keyword, r.BindingOf(), r.Chain, r.Strength(), r.NeedNames()})
	}
	for _, r := range entitlement.All() {
		out = append(out, Traced{r.ID, r.Title, "entitlement", r.Keyword, r.BindingOf(), r.Chain, r.Strength(), r.NeedNames()})
	}
	for _, r := range distributor.All() {
		out = append(out, Traced{r.ID, r.Title, "distributor", r.Keyword, r.BindingOf(), r.Chain, r.Strength(), r.NeedNames()})
	}
	for _, r := range client.All() {
		out = append(out, Traced{r.ID, r.Title, "client", r.Keyword, r.BindingOf(), r.Chain, r.Strength(), r.NeedNames()})
	}
	return out
}

// TracedRule is the rule of any mode with id (the first, in TracedRules'
// order, were two modes to share one).
func TracedRule(id string) (Traced, bool) {
	tracedOnce.Do(func() {
		tracedByID = map[string]Traced{}
		for _, r := range TracedRules() {
			if _, dup := tracedByID[r.ID]; !dup {
				tracedByID[r.ID] = r
			}
		}
	})
	r, ok := tracedByID[id]
	return r, ok
}

// tracedByID indexes TracedRules once: TraceCoverage looks a rule up for
// every row, and a report counts coverage for every run.
var (
	tracedOnce sync.Once
	tracedByID map[string]Traced
)
