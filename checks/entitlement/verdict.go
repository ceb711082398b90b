package entitlement

import (
	"fmt"

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
	v, decided, undecided := engine.Judge(records, excused)
	v.Scope = Scope
	switch {
	case v.Broken > 0:
		v.Text = fmt.Sprintf("Entitlement mishandled: %s of §5 broken.", engine.Count(v.Broken, "MUST rule", "MUST rules"))
	case decided == 0:
		v.Text = "No step of the walk could be decided (see each SKIP's reason): does the launch command map " +
			VarDistributor + " and " + VarToken + " onto the runner's own settings?"
	case v.Undecided > 0:
		v.Text = fmt.Sprintf("Not determined: %s of the walk undecided (%s).", engine.Count(v.Undecided, "step", "steps"), engine.Cause(undecided, "the runner"))
	default:
		v.Text = "Entitlement handled as §5 requires."
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", engine.Count(v.Baselined, "known failure", "known failures"))
	}
	return v
}

// Target is what a report of the walk names as its target.
func Target(o Options) string {
	if o.Launch == "" {
		return "the bundled reference runner, in process"
	}
	return "launched: " + o.Launch
}
