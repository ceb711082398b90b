package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// specSections are the headings of SPEC.md §1–§8 (Appendix A is not
// normative). A row must name one of them.
var specSections = []string{
	"1", "1.1", "1.2", "1.3", "1.4", "1.5",
	"2", "2.1", "2.2", "2.3",
	"3",
	"4", "4.1", "4.1.1", "4.1.2", "4.1.3", "4.1.4", "4.2", "4.3", "4.4", "4.5", "4.6",
	"5", "5.1", "5.2", "5.3", "5.3.1", "5.4", "5.5", "5.6", "5.7", "5.7.1", "5.7.2", "5.7.3", "5.7.4",
	"6", "7", "8",
}

func mustTrace(t *testing.T) []TraceRow {
	t.Helper()
	rows, err := Trace()
	assert.NilError(t, err)
	return rows
}

func TestTraceParses(t *testing.T) {
	rows := mustTrace(t)
	assert.Assert(t, len(rows) >= 200, "only %d rows: the matrix lists every normative statement", len(rows))
}

func TestTraceIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range mustTrace(t) {
		assert.Check(t, !seen[r.ID], "duplicate id %s", r.ID)
		seen[r.ID] = true
	}
}

func TestTraceSectionsExist(t *testing.T) {
	for _, r := range mustTrace(t) {
		assert.Check(t, slices.Contains(specSections, r.Section),
			"%s: section %q is not a heading of SPEC.md §1–§8", r.ID, r.Section)
		assert.Check(t, strings.HasPrefix(r.ID, "T"+r.Section+"-"), "%s: id does not carry section %s", r.ID, r.Section)
	}
}

func TestTraceSubjects(t *testing.T) {
	for _, r := range mustTrace(t) {
		assert.Check(t, slices.Contains(TraceSubjects, r.Subject), "%s: unknown subject %q", r.ID, r.Subject)
	}
}

func TestTraceObligationsShort(t *testing.T) {
	for _, r := range mustTrace(t) {
		assert.Check(t, len([]rune(r.Obligation)) <= 120, "%s: obligation longer than 120 characters", r.ID)
	}
}

// A row is justified by the checks covering it, or by why there are none —
// never by both, and never by neither.
func TestTraceRowsJustified(t *testing.T) {
	for _, r := range mustTrace(t) {
		switch {
		case len(r.Checks) == 0 && r.Reason == "":
			t.Errorf("%s: neither checks nor a reason", r.ID)
		case len(r.Checks) > 0 && r.Reason != "":
			t.Errorf("%s: has checks %v and a reason %q; a checked row carries no reason", r.ID, r.Checks, r.Reason)
		case len(r.Checks) == 0:
			assert.Check(t, slices.Contains(TraceReasons, r.ReasonWord()),
				"%s: reason word %q is not one of %v", r.ID, r.ReasonWord(), TraceReasons)
		}
	}
}

// Every check a row cites exists in the registry.
func TestTraceCitesRegisteredChecks(t *testing.T) {
	for _, r := range mustTrace(t) {
		for _, id := range r.Checks {
			_, ok := TracedRule(id)
			assert.Check(t, ok, "%s cites %s, which is in no mode's registry", r.ID, id)
		}
	}
}

// Every rule in the registry is cited by some row: a rule that traces to no
// obligation is checking something the specification does not say.
func TestTraceCoversRegistry(t *testing.T) {
	cited := map[string]bool{}
	for _, r := range mustTrace(t) {
		for _, id := range r.Checks {
			cited[id] = true
		}
	}
	for _, rule := range TracedRules() {
		assert.Check(t, cited[rule.ID], "rule %s (%s) is cited by no row of traceability.tsv", rule.ID, rule.Mode)
	}
}

func TestTraceCoverageCounts(t *testing.T) {
	rows := mustTrace(t)
	c := TraceCoverage(rows)
	assert.Equal(t, c.Rows, len(rows))
	unchecked := 0
	for _, n := range c.ByReason {
		unchecked += n
	}
	assert.Equal(t, c.Checked+unchecked, c.Rows)
	var kw, subj [2]int
	for _, v := range c.ByKeyword {
		kw[0], kw[1] = kw[0]+v[0], kw[1]+v[1]
	}
	for _, v := range c.BySubject {
		subj[0], subj[1] = subj[0]+v[0], subj[1]+v[1]
	}
	assert.Equal(t, kw, [2]int{c.Rows, c.Checked})
	assert.Equal(t, subj, [2]int{c.Rows, c.Checked})
}

func TestTraceCoverageSmall(t *testing.T) {
	c := TraceCoverage([]TraceRow{
		{ID: "T2-01", Keyword: "MUST", Subject: "runner", Checks: []string{"2/http-1.1"}, Binding: engine.Direct},
		{ID: "T2-02", Keyword: "SHOULD", Subject: "runner", Reason: "harness: needs a launch"},
		{ID: "T2-03", Keyword: "MUST", Subject: "client", Reason: "client"},
		{ID: "T4.2-01", Keyword: "MUST", Subject: "runner", Checks: []string{"4.2/run-id-unique"}, Binding: engine.Chain, Chain: "x"},
		{ID: "T4.3-01", Keyword: "MUST", Subject: "runner", Checks: []string{"4.3/media-type"}, Binding: engine.Inferred},
		{ID: "T4.3-02", Keyword: "MUST", Subject: "runner", Checks: []string{"4.3/media-type"}, Binding: engine.Contract, Chain: "§4.3"},
	})
	assert.Equal(t, c.Rows, 6)
	assert.Equal(t, c.Checked, 4)
	assert.DeepEqual(t, c.ByReason, map[string]int{"harness": 1, "client": 1})
	assert.Equal(t, c.ByKeyword["MUST"], [2]int{5, 4})
	assert.Equal(t, c.BySubject["runner"], [2]int{5, 4})
	assert.DeepEqual(t, c.ByBinding, map[engine.Binding]int{engine.Direct: 1, engine.Chain: 1, engine.Contract: 1, engine.Inferred: 1})
	assert.Equal(t, c.RunnerRows, 5)
	assert.Equal(t, c.RunnerChecked, 4)
	assert.Equal(t, c.Default, 1)
	assert.Equal(t, c.RunnerDefault, 1)
	assert.Equal(t, c.ExecuteOnly, 3)
}

// Every row a rule checks says how a keyword binds it, and no other row
// does.
func TestTraceRowsBound(t *testing.T) {
	for _, r := range mustTrace(t) {
		switch {
		case len(r.Checks) > 0 && r.Binding == "":
			t.Errorf("%s is checked by %v but records no binding", r.ID, r.Checks)
		case len(r.Checks) == 0 && r.Binding != "":
			t.Errorf("%s is checked by no rule yet records the binding %s", r.ID, r.Binding)
		case r.Binding == engine.Chain && r.Chain == "":
			t.Errorf("%s is bound by a chain it does not name", r.ID)
		case r.Binding == engine.Contract && !strings.HasPrefix(r.Chain, "§"):
			t.Errorf("%s is bound by the contract of a section it does not name", r.ID)
		case r.Binding == engine.Inferred && r.Why == "":
			t.Errorf("%s is inferred and names no sentence supporting the other reading", r.ID)
		}
	}
}

// A rule's Binding agrees with the rows it checks: an inferred rule checks
// inferred rows only (it must never fail a runner), a direct rule checks at
// least one row a keyword binds directly, and a chain rule at least one row
// bound by a chain. A rule may check inferred rows beside its binding ones:
// it reports those findings with T.Warn (or through an inferred schema
// violation).
func TestRuleBindingAgreesWithRows(t *testing.T) {
	rows := map[string][]TraceRow{}
	for _, r := range mustTrace(t) {
		for _, id := range r.Checks {
			rows[id] = append(rows[id], r)
		}
	}
	for _, rule := range TracedRules() {
		got := map[engine.Binding][]string{}
		for _, r := range rows[rule.ID] {
			got[r.Binding] = append(got[r.Binding], r.ID)
		}
		switch b := rule.Binding; b {
		case engine.Inferred:
			assert.Check(t, len(got[engine.Direct])+len(got[engine.Chain])+len(got[engine.Contract]) == 0,
				"%s is inferred, yet checks rows a keyword or the wire contract binds: %v %v %v", rule.ID, got[engine.Direct], got[engine.Chain], got[engine.Contract])
		case engine.Contract:
			// The section the rule names is one its contract rows name.
			named := false
			for _, r := range rows[rule.ID] {
				named = named || r.Binding == engine.Contract && r.Chain == rule.Chain
			}
			assert.Check(t, named, "%s is bound by the contract of %s, yet none of its contract rows %v names it", rule.ID, rule.Chain, got[engine.Contract])
		default:
			assert.Check(t, len(got[b]) > 0, "%s is %s, yet checks no %s row (it checks %v)", rule.ID, b, b, got)
		}
	}
}

// A contract rule under a MUST-class keyword fails a runner like a chain
// rule, and its title does not call it inferred.
func TestContractRulesFail(t *testing.T) {
	n := 0
	for _, rule := range TracedRules() {
		if rule.Binding != engine.Contract {
			continue
		}
		n++
		assert.Check(t, rule.Keyword.Binds(), "%s: the wire contract binds only under a MUST-class keyword", rule.ID)
		assert.Check(t, is.Equal(rule.Strength, engine.Fail), rule.ID)
		assert.Check(t, !strings.Contains(rule.Title, "inferred"), "%s: a contract rule's title calls it inferred", rule.ID)
	}
	assert.Check(t, n > 0, "no rule is bound by the wire contract")
}

// An inferred rule never fails a runner, whatever its keyword; its title
// says it is inferred.
func TestInferredRulesWarn(t *testing.T) {
	for _, rule := range TracedRules() {
		if rule.Binding != engine.Inferred {
			continue
		}
		assert.Check(t, is.Equal(rule.Strength, engine.Warn), rule.ID)
		if rule.Keyword.Binds() {
			assert.Check(t, strings.Contains(rule.Title, "inferred"), "%s: a MUST-class rule that only warns says why in its title", rule.ID)
		}
	}
}

func TestParseTraceRejectsMalformed(t *testing.T) {
	const row = "T2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tdirect"
	for name, body := range map[string]string{
		"header":     "id\tsection\n" + row,
		"columns":    traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t",
		"keyword":    traceHeader + "\nT2-01\t2\tMAY\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tdirect",
		"duplicate":  traceHeader + "\n" + row + "\n" + row,
		"id":         traceHeader + "\nT2-1\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tdirect",
		"id-section": traceHeader + "\nT2.1-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tdirect",
		"empty-duty": traceHeader + "\nT2-01\t2\tMUST\trunner\t\t2/http-1.1\t\tdirect",
		"binding":    traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tstrong",
		"chain":      traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tchain: ",
		"contract":   traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tcontract: 4.3",
		"no-section": traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tcontract:",
		"no-why":     traceHeader + "\nT2-01\t2\tMUST\trunner\tspeaks HTTP/1.1\t2/http-1.1\t\tinferred",
	} {
		_, err := parseTrace([]byte(body))
		assert.Check(t, err != nil, "%s: malformed TSV parsed without error", name)
	}
	rows, err := parseTrace([]byte(traceHeader + "\n" + row + "\n"))
	assert.NilError(t, err)
	assert.Check(t, is.Len(rows, 1))
	assert.Check(t, is.DeepEqual(rows[0].Checks, []string{"2/http-1.1"}))
	assert.Check(t, is.Equal(rows[0].Reason, ""))
	assert.Check(t, is.Equal(rows[0].Binding, engine.Direct))

	rows, err = parseTrace([]byte(traceHeader + "\nT4.2-03\t4.2\tMUST\trunner\tnull is refused\t4.2/null-required\t\tchain: null is no value\n"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(rows[0].Binding, engine.Chain))
	assert.Check(t, is.Equal(rows[0].Chain, "null is no value"))

	rows, err = parseTrace([]byte(traceHeader + "\nT4.3-01\t4.3\tMUST\trunner\tstream is text/event-stream\t4.3/media-type\t\tcontract: §4.3\n" +
		"T4.3-02\t4.3\tMUST\trunner\tsomething contestable\t4.3/media-type\t\tinferred: a sentence reads otherwise\n"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(rows[0].Binding, engine.Contract))
	assert.Check(t, is.Equal(rows[0].Chain, "§4.3"))
	assert.Check(t, is.Equal(rows[1].Binding, engine.Inferred))
	assert.Check(t, is.Equal(rows[1].Why, "a sentence reads otherwise"))
	assert.Check(t, is.Equal(rows[1].Chain, ""))
}
