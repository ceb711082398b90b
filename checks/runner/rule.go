// Package runner is the runner check: the rule registry (one Rule per
// checkable obligation of the Postern specification a runner bears, each
// with its section, level, keyword, binding, what it needs and requires,
// and the probe that decides it over the wire), the facts its rules share,
// and Check, which runs the selected rules against a runner through the
// engine (checks/engine).
//
// Where things go:
//   - a new rule: the file for its section (s2_3_cors.go, s4_4_status.go, …),
//     appended to that file's slice; registry.go lists the slices in order.
//   - a shared probe several rules read: a Fact; what the rules that run
//     the agent send and read, whatever their section: runs.go; the runs
//     they share, each started once per check, and the budget: runfacts.go.
//   - a verifier several rules share: verify.go.
//   - a new need (a posture a rule only applies to): needs.go, or posture.go
//     where several files use it.
//   - the fault that proves the rule can fail: fixtures/faults_*.go.
//   - how the registry maps onto the spec: checks/traceability.tsv, the
//     catalogue above every mode.
package runner

import "github.com/sigrix-io/postern-conformance/checks/engine"

// The engine's types, as the runner check instantiates them.
type (
	Rule    = engine.Rule[*Env]
	T       = engine.T[*Env]
	Need    = engine.Need[*Env]
	Dep     = engine.Dep[*Env]
	Result  = engine.Result[*Env]
	Finding = engine.Finding
	Claim   = engine.Claim
	Keyword = engine.Keyword
	Binding = engine.Binding
	Outcome = engine.Outcome
	// SkipKind is the kind of a SKIP.
	SkipKind = engine.SkipKind
)

// The keywords, bindings and outcomes.
const (
	Must      = engine.Must
	MustNot   = engine.MustNot
	Required  = engine.Required
	Should    = engine.Should
	ShouldNot = engine.ShouldNot

	Direct   = engine.Direct
	Chain    = engine.Chain
	Contract = engine.Contract
	Inferred = engine.Inferred

	Pass  = engine.Pass
	Fail  = engine.Fail
	Warn  = engine.Warn
	Skip  = engine.Skip
	Error = engine.Error

	NotApplicable = engine.NotApplicable
	NeedsOption   = engine.NeedsOption
	Undecided     = engine.Undecided
)

// Validate reports a malformed registry entry.
func Validate(r *Rule) error { return r.Validate() }
