// Package engine is the checking engine every mode shares: the types a rule
// is made of (Rule, Keyword, Binding, Outcome), the handle a probe works
// through (T), the values rules share (Fact), and the driver that resolves
// what each selected rule requires and runs the rules concurrently, within
// a bounded number of requests in flight and a whole-run deadline.
//
// It knows nothing about any particular rule: a mode (the runner check,
// checks/runner; the entitlement walk; the distributor check)
// hands it a Suite — its whole registry, its environment type E, and the
// few hooks that are the mode's own — and gets back one Result per selected
// rule. The model is golang.org/x/tools/go/analysis: a rule declares what
// it requires, the driver computes each requirement once and schedules.
//
// A SKIP is of one of three kinds (SkipKind): not applicable to the
// target, needing an option the user did not give, or undecided (the
// target did not answer in time, the run's deadline passed). Results
// become Records, the one shape every report reads whatever the mode, and
// each mode decides its Verdict on them; an undecided rule in its scope
// keeps a verdict from being reached.
//
// Where things go: a rule goes in its mode's registry (checks/runner/s*.go for
// the runner check), never here; a verifier several rules share goes beside
// the rules (checks/runner/verify.go); what every mode needs of a request goes in
// wire/.
package engine
