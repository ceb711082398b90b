package client

import (
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// Scope is the line a report of a client check writes above its tally.
const Scope = "A client check: the client run once per scenario, each against a scripted runner of the checker's own"

// Mode names the client check in a report's titles.
const Mode = "client check"

// Decide is the client check's verdict on its records: every binding rule
// it was checked on held, or how many did not. excused names rule IDs
// whose failure a baseline accepts. Nothing broken with a rule the checker
// could not decide is not determined, and says what kept it so.
func Decide(records []engine.Record, excused map[string]bool) engine.Verdict {
	return engine.Decide(records, excused, engine.Words{
		Scope:     Scope,
		Broken:    "Client nonconformant: %s broken.",
		Nothing:   "No rule of the client check could be decided (see each SKIP's reason).",
		Undecided: "Not determined: %s of the client check undecided (%s).", Unit: "rule", Units: "rules", Who: "the client",
		Held: "Client conformant: every MUST it was checked on held.",
	})
}

// Target is what a report of the check names as its target.
func Target(o Options) string {
	if o.Command == "" {
		return "a client run in process"
	}
	return "client: " + strings.TrimSpace(o.Command)
}
