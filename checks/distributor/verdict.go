package distributor

import (
	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// Scope is the line a report of a distributor check writes above its tally.
const Scope = "A distributor check: the check, bundles and refusals, as the test buyer's client sees them"

// Mode names the distributor check in a report's titles.
const Mode = "distributor check"

// Decide is the distributor check's verdict on its records: every binding
// rule it was checked on held, or how many did not. excused names rule IDs
// whose failure a baseline accepts. Nothing broken with a rule the checker
// could not decide is not determined, and says what kept it so.
func Decide(records []engine.Record, excused map[string]bool) engine.Verdict {
	return engine.Decide(records, excused, engine.Words{
		Scope:     Scope,
		Broken:    "Distributor nonconformant: %s broken.",
		Nothing:   "No rule of the distributor check could be decided (see each SKIP's reason).",
		Undecided: "Not determined: %s of the distributor check undecided (%s).", Unit: "rule", Units: "rules", Who: "the distributor",
		Held: "Distributor conformant: every MUST of §5 it was checked on held.",
	})
}
