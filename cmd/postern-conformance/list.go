package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"io"
	"sort"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
	"github.com/urfave/cli/v3"
)

func listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "print the rule catalogue (or its coverage of the spec)",
		UsageText: "postern-conformance list [--entitlement | --distributor | --client] [--json | --markdown | --coverage] [--rule PATTERN]",
		Description: `Lists every rule the suite checks: its stable ID, section, level, keyword,
how that keyword binds it, what it needs to be decided, and its title. IDs
are what --rule, --baseline and the reports use.

The binding says how SPEC.md binds the behaviour the rule checks: direct (a
bold MUST, MUST NOT or REQUIRED states it), by a chain (named), by the wire
contract (§3 makes a runner implement its verbs as the named section defines
them: a status and code, a media type, the event grammar, a member's type,
range or meaning), or inferred (only a schema states it, or SPEC leaves it
open). A direct, chain or contract binding under a MUST-class keyword can
fail a runner; an inferred rule warns, and says so.

--coverage prints how much of SPEC.md §1–§8 the rules cover, from the
traceability matrix (checks/traceability.tsv): every normative statement,
mapped to the rules that check it or to the reason none can; the
obligations on a client no scenario can observe are listed with theirs.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "as a JSON array"},
			&cli.BoolFlag{Name: "markdown", Usage: "as a Markdown table"},
			&cli.BoolFlag{Name: "coverage", Usage: "print the coverage figures of the traceability matrix"},
			&cli.StringSliceFlag{Name: "rule", Usage: "only rules matching `PATTERN`"},
			&cli.BoolFlag{Name: "entitlement", Usage: "list the steps of the entitlement walk (postern-conformance entitlement) instead"},
			&cli.BoolFlag{Name: "distributor", Usage: "list the rules of the distributor check (postern-conformance distributor) instead"},
			&cli.BoolFlag{Name: "client", Usage: "list the rules of the client check (postern-conformance client) instead"},
			&cli.BoolFlag{Name: "no-color", Usage: "accepted for symmetry: the catalogue is never coloured"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			w := cmd.Root().Writer
			if cmd.Bool("coverage") {
				return coverage(w)
			}
			all := runner.All()
			if cmd.Bool("entitlement") {
				all = nil
				for _, r := range entitlement.All() {
					all = append(all, described(r))
				}
			}
			if cmd.Bool("distributor") {
				all = nil
				for _, r := range distributor.All() {
					all = append(all, described(r))
				}
			}
			if cmd.Bool("client") {
				all = nil
				for _, r := range client.All() {
					all = append(all, described(r))
				}
			}
			rules := runner.Select(all, cmd.StringSlice("rule"))
			if len(rules) == 0 {
				return exitError{exitCannotRun, "no rule matches"}
			}
			switch {
			case cmd.Bool("json"):
				return listJSON(w, rules)
			case cmd.Bool("markdown"):
				listMarkdown(w, rules)
			default:
				listText(w, rules)
			}
			return nil
		},
	}
}

type ruleEntry struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Level   int    `json:"level"`
	Keyword string `json:"keyword"`
	// Binding is direct, chain, contract or inferred; Chain states the
	// chain of a chain or contract binding.
	Binding  string   `json:"binding"`
	Chain    string   `json:"chain,omitempty"`
	Strength string   `json:"breaks_as"`
	Advisory bool     `json:"advisory"`
	Needs    []string `json:"needs"`
	Title    string   `json:"title"`
	Faults   []string `json:"faults"`
	// Covers are the traceability rows (checks/traceability.tsv) the rule
	// checks: the obligations of SPEC.md it stands for.
	Covers []string `json:"covers"`
}

func entries(rules []*runner.Rule) []ruleEntry {
	faults := map[string][]string{}
	for _, f := range fixtures.AllFaults() {
		faults[f.Rule] = append(faults[f.Rule], f.Name)
	}
	for _, f := range refclient.Faults() {
		faults[f.Rule] = append(faults[f.Rule], f.Name)
	}
	covers := map[string][]string{}
	rows, _ := checks.Trace() // a malformed matrix fails the tests, not the listing
	for _, row := range rows {
		for _, id := range row.Checks {
			covers[id] = append(covers[id], row.ID)
		}
	}
	var out []ruleEntry
	for _, r := range rules {
		needs := r.NeedNames()
		if needs == nil {
			needs = []string{}
		}
		fs := faults[r.ID]
		if fs == nil {
			fs = []string{}
		}
		cv := covers[r.ID]
		if cv == nil {
			cv = []string{}
		}
		out = append(out, ruleEntry{ID: r.ID, Section: r.Section, Level: r.Level, Keyword: string(r.Keyword),
			Binding: string(r.BindingOf()), Chain: r.ChainText(),
			Strength: string(r.Strength()), Advisory: r.Advisory, Needs: needs, Title: r.Title, Faults: fs, Covers: cv})
	}
	return out
}

func listJSON(w io.Writer, rules []*runner.Rule) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(entries(rules))
}

func listMarkdown(w io.Writer, rules []*runner.Rule) {
	fmt.Fprintln(w, "| ID | § | Level | Keyword | Binding | Breaks as | Needs | Rule | Planted fault |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, e := range entries(rules) {
		fmt.Fprintf(w, "| `%s` | %s | %d | %s | %s | %s | %s | %s | %s |\n", e.ID, e.Section, e.Level, e.Keyword,
			bindingWords(e), e.Strength, strings.Join(e.Needs, ", "), mdEscape(e.Title), "`"+strings.Join(e.Faults, "`, `")+"`")
	}
}

// bindingWords is the binding as listed: "chain: <words>" names its chain,
// "contract: §3: implements the verb as §N defines it" its section.
func bindingWords(e ruleEntry) string {
	if e.Chain != "" {
		return e.Binding + ": " + e.Chain
	}
	return e.Binding
}

// mdEscape keeps a cell's text from closing the cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func listText(w io.Writer, rules []*runner.Rule) {
	width := 0
	for _, r := range rules {
		width = max(width, len(r.ID))
	}
	count := map[string]int{}
	for _, e := range entries(rules) {
		needs := ""
		if len(e.Needs) > 0 {
			needs = "  [needs " + strings.Join(e.Needs, ", ") + "]"
		}
		chain := ""
		if e.Chain != "" {
			chain = "  [" + bindingWords(e) + "]"
		}
		count[e.Binding]++
		fmt.Fprintf(w, "%-*s  §%-6s L%d  %-10s %-8s %s%s%s\n", width, e.ID, e.Section, e.Level, e.Keyword, e.Binding, e.Title, chain, needs)
	}
	fmt.Fprintf(w, "\n%d rules: %d direct, %d by a chain, %d by the wire contract, %d inferred (these only warn)\n",
		len(rules), count[string(runner.Direct)], count[string(runner.Chain)], count[string(runner.Contract)], count[string(runner.Inferred)])
}

func coverage(w io.Writer) error {
	rows, err := checks.Trace()
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	c := checks.TraceCoverage(rows)
	fmt.Fprintf(w, "Traceability of SPEC.md §1–§8: %d normative obligations\n\n", c.Rows)
	fmt.Fprintf(w, "  %-26s %4d  (%.0f%%)\n", "checked by a rule", c.Checked, pct(c.Checked, c.Rows))
	for _, b := range checks.Bindings {
		fmt.Fprintf(w, "    %-24s %4d  %s\n", string(b), c.ByBinding[b], bindingWordsCoverage[b])
	}
	var reasons []string
	for r := range c.ByReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return c.ByReason[reasons[i]] > c.ByReason[reasons[j]] })
	for _, r := range reasons {
		fmt.Fprintf(w, "  %-26s %4d  %s\n", "not checked: "+r, c.ByReason[r], reasonWords[r])
	}
	fmt.Fprintf(w, "\nObligations on a runner: %d, checked %d (%.0f%%).\n", c.RunnerRows, c.RunnerChecked, pct(c.RunnerChecked, c.RunnerRows))
	d := c.BySubject["distributor"]
	fmt.Fprintf(w, "Obligations on a distributor: %d, checked %d (%.0f%%) by postern-conformance distributor.\n", d[0], d[1], pct(d[1], d[0]))
	for _, r := range rows {
		if why := checkedWhere(r); why != "" {
			fmt.Fprintf(w, "  %s (%s) is checked %s.\n", r.ID, r.Obligation, why)
		}
	}
	cl := c.BySubject["client"]
	fmt.Fprintf(w, "Obligations on a client: %d, checked %d (%.0f%%) by postern-conformance client; the rest no scenario can observe:\n", cl[0], cl[1], pct(cl[1], cl[0]))
	for _, r := range rows {
		if r.Subject == "client" && len(r.Checks) == 0 {
			_, why, _ := strings.Cut(r.Reason, ":")
			fmt.Fprintf(w, "  %-10s %s\n             %s\n", r.ID, r.Obligation, strings.TrimSpace(why))
		}
	}
	fmt.Fprintf(w, "Checked without --execute: %d of %d obligations (%.0f%%), %d of the %d on a runner (%.0f%%); only with --execute: %d more.\n",
		c.Default, c.Rows, pct(c.Default, c.Rows), c.RunnerDefault, c.RunnerRows, pct(c.RunnerDefault, c.RunnerRows), c.ExecuteOnly)
	return nil
}

// checkedWhere says where a row is checked, when every rule checking it
// decides it only on some targets (distributor.Where), or "".
func checkedWhere(r checks.TraceRow) string {
	why := ""
	for _, id := range r.Checks {
		w, ok := distributor.Where()[id]
		if !ok {
			return ""
		}
		why = w
	}
	return why
}

var bindingWordsCoverage = map[runner.Binding]string{
	runner.Direct:   "a bold keyword states it: a breach fails",
	runner.Chain:    "a keyword reaches it by a short chain: a breach fails",
	runner.Contract: "§3: the verb as its section defines it: a breach fails",
	runner.Inferred: "only a schema states it, or SPEC leaves it open: a breach warns",
}

var reasonWords = map[string]string{
	"client":       "binds a client, and no scenario of the client check can observe it",
	"distributor":  "binds a distributor",
	"internal":     "internal to the runner: nothing shows on the wire",
	"harness":      "needs a harness: a fake distributor, a clock, a restart, a disconnect",
	"execute":      "needs a real run: a later --execute rule",
	"unobservable": "cannot be decided from outside",
	"gap":          "observable, not yet checked",
	"bundle":       "binds an agent bundle",
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// described is a step of the walk in the shape the catalogue reads (a
// runner.Rule with no probe).
func described[E any](h *engine.Rule[E]) *runner.Rule {
	return &runner.Rule{ID: h.ID, Section: h.Section, Level: h.Level, Keyword: h.Keyword, Binding: h.Binding,
		Chain: h.Chain, Title: h.Title, Advisory: h.Advisory}
}
