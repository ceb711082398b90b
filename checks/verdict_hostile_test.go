package checks_test

// No hostile runner is ever called conformant: whatever shape it takes
// (checkShape runs each), the exit status a CI gate reads is 1 (a breach)
// or 2 (not determined, or not a runner at all), never 0.

import (
	"net/http"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/report"
)

// dripsForever is the runner of issue 13: describe and status answered as
// the reference runner answers them, every other request a 200 head and a
// body that drips a byte every half second and never ends.
var dripsForever = shape{name: "drips-forever-after-200", handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
	return except(ref, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		trickle(w, r, quit, []byte(" "), 500*time.Millisecond)
	})
}}

// notConformant fails t where the command would exit 0 on the check of a
// hostile runner.
func notConformant(t *testing.T, env *checks.Env, results []checks.Result, o checks.Options) {
	t.Helper()
	rep := report.Assemble(env, results, o, nil, report.Run{})
	code, _ := rep.Exit(report.Strictness{})
	t.Logf("verdict: %s (exit %d)", rep.Verdict.Text, code)
	if code == report.ExitOK {
		t.Errorf("a hostile runner exits 0: %s", rep.Verdict.Text)
	}
}
