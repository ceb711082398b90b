package engine

import (
	"fmt"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Dep is something a rule or a fact requires: a Fact of any value type.
type Dep[E any] interface {
	name() string
	deps() []Dep[E]
	compute(t *T[E]) (any, string)
}

// Fact is a value computed once per run and shared by every rule (or fact)
// that requires it: a shared probe's answer, say, whose wait should overlap
// everything else. The driver starts every fact a run needs as soon as its
// own requirements are in, before and beside the rules, so a slow fact
// costs its wait once, side by side with the rest of the run.
//
// Compute sends through t like a probe; what it sends is recorded once in
// the run's log and cited by every rule that reads the fact. It returns
// the value, or the reason it cannot be had here ("" when it can): a rule
// requiring an unavailable fact skips with that reason.
type Fact[E, V any] struct {
	Name     string
	Requires []Dep[E]
	Compute  func(t *T[E]) (V, string)
}

func (f *Fact[E, V]) name() string   { return f.Name }
func (f *Fact[E, V]) deps() []Dep[E] { return f.Requires }
func (f *Fact[E, V]) compute(t *T[E]) (any, string) {
	v, why := f.Compute(t)
	return v, why
}

// Of is the fact's value, for a rule or fact that lists it in Requires. The
// fact's exchanges become part of the caller's evidence.
func (f *Fact[E, V]) Of(t *T[E]) V {
	st := t.run.factState(f)
	if st == nil || !requires(t.Rule.Requires, f) {
		panic(fmt.Sprintf("engine: %s reads fact %q without requiring it", t.Rule.ID, f.Name))
	}
	<-st.done
	for _, ex := range st.sent {
		t.Cite(ex)
	}
	v, _ := st.val.(V)
	return v
}

// Peek is the fact's value where the run has computed it or is computing
// it, for a rule that reads it only where some other rule made it (the
// rule does not require it, so it never starts it): ok is false where the
// fact was never started or is unavailable. The fact's exchanges become
// part of the caller's evidence.
func (f *Fact[E, V]) Peek(t *T[E]) (v V, ok bool) {
	st := t.run.factState(f)
	if st == nil {
		return v, false
	}
	if why, _ := t.run.await(st); why != "" {
		return v, false
	}
	for _, ex := range st.sent {
		t.Cite(ex)
	}
	v, ok = st.val.(V)
	return v, ok
}

// Want is the fact's value for a rule that reads it where it can be had
// and judges other things where it cannot: the fact starts if no rule has
// started it (as a fact this rule required would, so a fact that starts the
// agent is wanted only by an Agent rule), and why says what kept it, where
// it is unavailable. Unlike a required fact's, that does not skip the rule.
// The fact's exchanges become part of the caller's evidence.
func (f *Fact[E, V]) Want(t *T[E]) (v V, why string) {
	st := t.run.startFact(f, t.Rule.Agent)
	if why, _ := t.run.await(st); why != "" {
		return v, why
	}
	for _, ex := range st.sent {
		t.Cite(ex)
	}
	v, _ = st.val.(V)
	return v, ""
}

// factState is one fact's computation in one run.
type factState struct {
	done chan struct{}
	val  any
	why  string
	kind SkipKind
	sent []*wire.Exchange
}

// requires reports whether d is among deps or what they require.
func requires[E any](deps []Dep[E], d Dep[E]) bool {
	for _, x := range deps {
		if x == d || requires(x.deps(), d) {
			return true
		}
	}
	return false
}
