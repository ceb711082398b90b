package checks_test

// No hostile runner is ever called conformant: whatever shape it takes
// (checkShape runs each), the exit status a CI gate reads is 1 (a breach)
// or 2 (not determined, or not a runner at all), never 0.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
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

// TestNotDetermined: the reference runner, conformant, behind a front that
// holds every POST longer than the --deadline the user chose. The rules
// that needed those answers are undecided and say the deadline was the
// user's; the verdict claims no conformance, names the cause, and exits 2.
// The rules that only need --execute are "needs an option", never
// undecided, and the level gate's are "not applicable".
func TestNotDetermined(t *testing.T) {
	ref, err := fixtures.New(fixtures.Config{Level: 2})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-r.Context().Done():
				return
			case <-release:
			}
		}
		ref.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	// A patience past the deadline: no wait for a head ends before the run does.
	o := checks.Options{Target: srv.URL, Timeout: 5 * time.Second, Patience: 3 * time.Second, Deadline: 500 * time.Millisecond}
	env, results, err := checks.Check(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	rep := report.Assemble(env, results, o, nil, report.Run{})
	code, msg := rep.Exit(report.Strictness{})
	c := rep.Counts()
	t.Logf("%s  %s", rep.Verdict.Text, c)
	if code != report.ExitCannotCheck || rep.Verdict.Conformant || rep.Verdict.Determined() {
		t.Errorf("exit %d (%s), verdict %+v: want 2, not determined", code, msg, rep.Verdict)
	}
	want := "Not determined at Level 2: "
	if !strings.Contains(rep.Verdict.Text, "the --deadline given passed first") {
		t.Errorf("the verdict does not name the user's own --deadline: %s", rep.Verdict.Text)
	}
	if len(rep.Verdict.Text) < len(want) || rep.Verdict.Text[:len(want)] != want {
		t.Errorf("verdict %q, want it to begin %q", rep.Verdict.Text, want)
	}
	if c.Undecided == 0 || c.NeedsOption == 0 || c.NotApplicable == 0 {
		t.Errorf("want SKIPs of every kind: %s", c)
	}
	for _, r := range rep.Results {
		switch {
		case r.Undecided() && !strings.Contains(r.Reason, "deadline") && !strings.Contains(r.Reason, "not decided"):
			t.Errorf("%s is undecided without saying why: %s", r.Rule.ID, r.Reason)
		case r.Outcome == checks.Skip && r.Kind == checks.NeedsOption && !strings.Contains(r.Reason, "--"):
			t.Errorf("%s needs an option without naming it: %s", r.Rule.ID, r.Reason)
		}
	}
}
