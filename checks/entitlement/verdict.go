package entitlement

import (
	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// Scope is the line a report of the walk writes above its tally.
const Scope = "An entitlement walk: each step launched the runner with a token of its own"

// Mode names the walk in a report's titles.
const Mode = "entitlement walk"

// Decide is the walk's verdict on its records: every binding rule of §5
// held, or how many did not. excused names rule IDs whose failure a
// baseline accepts. A walk with nothing broken and a step the checker could
// not decide is not determined, and says what kept it so.
func Decide(records []engine.Record, excused map[string]bool) engine.Verdict {
	return engine.Decide(records, excused, engine.Words{
		Scope:  Scope,
		Broken: "Entitlement mishandled: %s of §5 broken.",
		Nothing: "No step of the walk could be decided (see each SKIP's reason): does the launch command map " +
			VarDistributor + " and " + VarToken + " onto the runner's own settings?",
		Undecided: "Not determined: %s of the walk undecided (%s).", Unit: "step", Units: "steps", Who: "the runner",
		Held: "Entitlement handled as §5 requires.",
	})
}

// Target is what a report of the walk names as its target.
func Target(o Options) string {
	if o.Launch == "" {
		return "the bundled reference runner, in process"
	}
	return "launched: " + o.Launch
}
