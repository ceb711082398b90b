package runner

import (
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// skipRefused skips a rule whose request was refused for a reason that
// says nothing of the rule: undecided where the runner was at capacity
// (503 unavailable, which may pass) or gave no whole answer; not applicable
// otherwise, since an agent that fails or overruns its limit every time is
// the runner's posture, and other rules judge that answer.
func skipRefused(t *T, ex *wire.Exchange, format string, args ...any) {
	if unavailable(ex) || !engine.Whole(ex) {
		t.Undecided(format, args...)
	}
	t.NotApplicable(format, args...)
}
