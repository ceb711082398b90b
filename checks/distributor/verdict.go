package distributor

import (
	"fmt"

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
	v, decided, undecided := engine.Judge(records, excused)
	v.Scope = Scope
	switch {
	case v.Broken > 0:
		v.Text = fmt.Sprintf("Distributor nonconformant: %s broken.", engine.Count(v.Broken, "MUST rule", "MUST rules"))
	case decided == 0:
		v.Text = "No rule of the distributor check could be decided (see each SKIP's reason)."
	case v.Undecided > 0:
		v.Text = fmt.Sprintf("Not determined: %s of the distributor check undecided (%s).",
			engine.Count(v.Undecided, "rule", "rules"), engine.Cause(undecided, "the distributor"))
	default:
		v.Text = "Distributor conformant: every MUST of §5 it was checked on held."
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", engine.Count(v.Baselined, "known failure", "known failures"))
	}
	return v
}
