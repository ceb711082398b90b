// Package checks is the rule registry: one Rule per checkable obligation of
// the Postern specification, each carrying its section, level, keyword, what
// it needs, and the probe that decides it over the wire.
//
// Where things go:
//   - a new rule: the file for its section (s2_3_cors.go, s4_4_status.go, …),
//     appended to that file's slice; registry.go lists the slices in order.
//   - a new need (a posture a rule only applies to): needs.go.
//   - the fault that proves the rule can fail: fixtures/faults_*.go.
package checks

import (
	"fmt"
	"strings"
)

// Keyword is the RFC 2119 strength of a rule. MUST-class keywords FAIL when
// broken; SHOULD-class keywords WARN.
type Keyword string

// The keywords rules carry.
const (
	Must      Keyword = "MUST"
	MustNot   Keyword = "MUST NOT"
	Required  Keyword = "REQUIRED"
	Should    Keyword = "SHOULD"
	ShouldNot Keyword = "SHOULD NOT"
)

// Binds reports whether the keyword is of the MUST class.
func (k Keyword) Binds() bool { return k == Must || k == MustNot || k == Required }

// Binding is how a rule's keyword reaches the behaviour it checks, as
// recorded per row in checks/traceability.tsv. Only a Direct or a Chain
// binding under a MUST-class keyword can fail a runner; an Inferred one
// warns and says so.
type Binding string

// The bindings.
const (
	// Direct: a bold MUST / MUST NOT / REQUIRED states the behaviour.
	Direct Binding = "direct"
	// Chain: a bold keyword reaches the behaviour through a short chain a
	// skeptical implementer must accept (Rule.Chain names it in a word).
	Chain Binding = "chain"
	// Inferred: only descriptive prose, a table without a keyword, or the
	// specification's schema states it.
	Inferred Binding = "inferred"
)

// Rule is one registry entry.
type Rule struct {
	// ID is stable and reads as a place in the spec: "4.4/content-type".
	ID string
	// Section is the spec section that states the rule, without "§".
	Section string
	// Level is the lowest conformance level the rule applies at (1–3). A rule
	// above the runner's declared level is skipped.
	Level int
	// Keyword is the rule's strength.
	Keyword Keyword
	// Binding is how the keyword reaches the behaviour; "" means Direct.
	Binding Binding
	// Chain names, in a word or a few, the step from the keyword to the
	// behaviour where Binding is Chain ("null is no value").
	Chain string
	// Title says in a line what a conforming runner does.
	Title string
	// Needs are what the probe requires; an unmet need skips the rule with
	// the need's reason.
	Needs []Need
	// Advisory marks a MUST that can only be evidenced, never proven, from
	// outside (side-effect freedom): breaking it WARNs.
	Advisory bool
	// Owns claims the schema violations this rule judges (see schema.go).
	Owns []string
	// Warm, where set, is called before any probe runs, for every selected
	// rule whose needs are met; it may start slow, shared requests early
	// with Env.Prefetch so that their waiting overlaps the other probes.
	Warm func(e *Env)
	// Sweep marks a rule judged over the evidence the other rules gathered;
	// sweep rules run after every other rule.
	Sweep bool
	// Probe decides the rule.
	Probe func(t *T)
}

// Strength is how a broken rule is reported: FAIL or WARN.
func (r *Rule) Strength() Outcome {
	if r.Keyword.Binds() && !r.Advisory && r.Binding != Inferred {
		return Fail
	}
	return Warn
}

// BindingOf is r.Binding, Direct where unset.
func (r *Rule) BindingOf() Binding {
	if r.Binding == "" {
		return Direct
	}
	return r.Binding
}

// NeedNames lists the rule's needs by name.
func (r *Rule) NeedNames() []string {
	out := make([]string, len(r.Needs))
	for i, n := range r.Needs {
		out[i] = n.Name
	}
	return out
}

// Outcome is a rule's result.
type Outcome string

// The outcomes. Error means the checker itself could not evaluate the rule.
const (
	Pass  Outcome = "PASS"
	Fail  Outcome = "FAIL"
	Warn  Outcome = "WARN"
	Skip  Outcome = "SKIP"
	Error Outcome = "ERROR"
)

func (r *Rule) String() string { return fmt.Sprintf("§%s %s", r.Section, r.ID) }

// validate is used by the registry test.
func (r *Rule) validate() error {
	var probs []string
	if r.ID == "" || !strings.HasPrefix(r.ID, r.Section+"/") {
		probs = append(probs, "ID must begin with its section and a slash")
	}
	if r.Level < 1 || r.Level > 3 {
		probs = append(probs, "level must be 1–3")
	}
	switch r.Keyword {
	case Must, MustNot, Required, Should, ShouldNot:
	default:
		probs = append(probs, "unknown keyword")
	}
	switch r.Binding {
	case "", Direct, Inferred:
		if r.Chain != "" {
			probs = append(probs, "a chain is named only for a Chain binding")
		}
	case Chain:
		if r.Chain == "" {
			probs = append(probs, "a Chain binding names its chain")
		}
	default:
		probs = append(probs, "unknown binding")
	}
	if r.Title == "" || r.Probe == nil {
		probs = append(probs, "title and probe are required")
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s: %s", r.ID, strings.Join(probs, "; "))
	}
	return nil
}

// Validate reports a malformed registry entry.
func Validate(r *Rule) error { return r.validate() }
