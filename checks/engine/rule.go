package engine

import (
	"fmt"
	"strings"
)

// Keyword is the RFC 2119 strength of a rule. MUST-class keywords FAIL when
// broken (where the binding is not inferred); SHOULD-class keywords WARN.
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

// SkipKind says why a rule SKIPped: it does not apply to this target, it
// needs an option the user did not give, or the checker could not decide
// it (no answer in time, the run's deadline, a probe that could not
// finish). Only the last keeps a verdict from being reached.
type SkipKind string

// The kinds of SKIP.
const (
	// NotApplicable: the target's level or posture makes the rule
	// unobservable, or another rule judges what was seen instead.
	NotApplicable SkipKind = "not-applicable"
	// NeedsOption: the rule needs an option the user did not give
	// (--origin, --execute, --header).
	NeedsOption SkipKind = "needs-option"
	// Undecided: the rule applies and could have been decided, but the
	// target did not give the answers it needed in time.
	Undecided SkipKind = "undecided"
)

// Need is something a rule requires before its probe can decide anything:
// an option the user gave, or a posture the target declares. Check returns
// "" when the need is met and the reason to skip otherwise; Kind is the
// kind of that SKIP ("" means NotApplicable).
type Need[E any] struct {
	Name  string
	Check func(e E) string
	Kind  SkipKind
}

// kind is n.Kind, NotApplicable where unset.
func (n Need[E]) kind() SkipKind {
	if n.Kind == "" {
		return NotApplicable
	}
	return n.Kind
}

// Claim is a part of a document a rule judges more precisely than the
// document's schema rule: that rule reports the schema's violations there,
// and the schema rule leaves them alone. Doc names the schema; Path is a
// JSON pointer pattern ("*" matches one segment, and a pattern claims what
// lies below it); Keyword, where set, narrows the claim to one schema
// keyword ("enum", "additionalProperties").
type Claim struct {
	Doc, Path, Keyword string
}

// Rule is one registry entry: one checkable obligation.
type Rule[E any] struct {
	// ID is stable and reads as a place in the spec: "4.4/content-type".
	ID string
	// Section is the spec section that states the rule, without "§".
	Section string
	// Level is the lowest conformance level the rule applies at (1–3).
	Level int
	// Keyword is the rule's strength.
	Keyword Keyword
	// Binding is how the keyword reaches the behaviour; "" means Direct.
	Binding Binding
	// Chain names, in a word or a few, the step from the keyword to the
	// behaviour where Binding is Chain ("null is no value").
	Chain string
	// Title says in a line what a conforming target does.
	Title string
	// Needs gate the rule: an unmet need skips it with the need's reason.
	Needs []Need[E]
	// Requires are the shared values the probe reads (Fact.Of); the driver
	// computes each once per run before the rule starts, and an unavailable
	// one skips the rule with its reason.
	Requires []Dep[E]
	// Evidence marks a rule judged over the exchanges of every probing rule
	// of the registry (T.Evidence): the driver runs all of them first,
	// selected or not, so its input is the same whatever --rule selects.
	Evidence bool
	// Agent marks a rule that starts the agent: such rules run one at a
	// time, after the probing rules, so no run of theirs competes for the
	// target's capacity with another.
	Agent bool
	// Claims are the schema violations this rule judges (see Claim).
	Claims []Claim
	// Advisory marks a MUST that can only be evidenced, never proven, from
	// outside (side-effect freedom): breaking it WARNs.
	Advisory bool
	// Probe decides the rule.
	Probe func(t *T[E])
}

// Strength is how a broken rule is reported: FAIL or WARN.
func (r *Rule[E]) Strength() Outcome {
	if r.Keyword.Binds() && !r.Advisory && r.Binding != Inferred {
		return Fail
	}
	return Warn
}

// BindingOf is r.Binding, Direct where unset.
func (r *Rule[E]) BindingOf() Binding {
	if r.Binding == "" {
		return Direct
	}
	return r.Binding
}

// NeedNames lists the rule's needs and requirements by name.
func (r *Rule[E]) NeedNames() []string {
	out := []string{}
	for _, n := range r.Needs {
		out = append(out, n.Name)
	}
	for _, d := range r.Requires {
		out = append(out, d.name())
	}
	if r.Evidence {
		out = append(out, "evidence")
	}
	return out
}

func (r *Rule[E]) String() string { return fmt.Sprintf("§%s %s", r.Section, r.ID) }

// Validate reports a malformed registry entry.
func (r *Rule[E]) Validate() error {
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
	if r.Evidence && r.Agent {
		probs = append(probs, "an evidence rule sends nothing, so it starts no agent")
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s: %s", r.ID, strings.Join(probs, "; "))
	}
	return nil
}
