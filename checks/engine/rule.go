package engine

import (
	"fmt"
	"regexp"
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
// recorded per row in checks/traceability.tsv. A Direct, Chain or Contract
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
	// Contract: §3 makes a conforming runner implement its level's verbs,
	// and the section Rule.Chain names ("§4.3") states in plain sentences
	// what the verb answers: the status and code of a named condition, a
	// media type, the event grammar, a member's type, range or meaning, or
	// what a state value it reports means. A runner that deviates does not
	// speak the protocol its level claims, so a breach fails like a Chain's.
	Contract Binding = "contract"
	// Inferred: neither a keyword nor the wire contract binds it: only a
	// schema or an example states it, SPEC frames it as latitude or
	// rationale, or a careful implementer could read its sentence the other
	// way (checks/traceability.tsv names that sentence).
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
	// behaviour where Binding is Chain ("null is no value"); where Binding
	// is Contract, it names the section defining the verb's contract
	// ("§4.3"), and ChainText states the whole chain.
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
	// Agent marks a rule that starts the agent: such rules run after the
	// probing rules, at most Suite.AgentSlots at once, so that the runs in
	// flight stay within what the target declares it takes.
	Agent bool
	// Alone marks an Agent rule that measures capacity or timing: such
	// rules run one at a time, before the other Agent rules, so that no
	// run but their own is in flight.
	Alone bool
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

// ChainText is the chain as stated: Chain's words for a Chain binding, "§3:
// implements the verb as §N defines it" for a Contract one, "" otherwise.
func (r *Rule[E]) ChainText() string { return ChainText(r.BindingOf(), r.Chain) }

// ChainText states the chain of binding b named by chain (see Rule.Chain).
func ChainText(b Binding, chain string) string {
	switch b {
	case Chain:
		return chain
	case Contract:
		return "§3: implements the verb as " + chain + " defines it"
	}
	return ""
}

// ContractSection reports whether s names a section as a Contract binding
// does: "§" and a section number ("§4.1.4").
func ContractSection(s string) bool { return contractSection.MatchString(s) }

var contractSection = regexp.MustCompile(`^§[1-8](\.[0-9]+)*$`)

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
	case Contract:
		if !ContractSection(r.Chain) {
			probs = append(probs, `a Contract binding names, as its Chain, the section defining the verb ("§4.3")`)
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
	if r.Alone && !r.Agent {
		probs = append(probs, "only a rule that starts the agent runs alone")
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s: %s", r.ID, strings.Join(probs, "; "))
	}
	return nil
}
