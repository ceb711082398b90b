package runner_test

// Verdicts a skeptical implementer has to accept: answers a real runner
// gives that break no bold keyword, checked against the rules that used to
// fail them.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"gotest.tools/v3/assert"
)

// wrapped checks the reference runner behind a handler that may answer in
// its place.
func wrapped(t *testing.T, cfg fixtures.Config, front func(w http.ResponseWriter, r *http.Request) bool, rules ...string) map[string]runner.Result {
	t.Helper()
	rn, err := fixtures.New(cfg)
	assert.NilError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !front(w, r) {
			rn.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	_, results, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin,
		Timeout: 5 * time.Second, Rules: rules})
	assert.NilError(t, err)
	out := map[string]runner.Result{}
	for _, r := range results {
		out[r.Rule.ID] = r
	}
	return out
}

// refusePreflights answers a preflight from an origin other than the
// allowed one with status and an empty body.
func refusePreflights(status int) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodOptions || r.Header.Get("Origin") == fixtures.AllowedOrigin {
			return false
		}
		w.WriteHeader(status)
		return true
	}
}

func TestRefusedPreflightAnswered403IsAnAnswer(t *testing.T) {
	got := wrapped(t, fixtures.Config{}, refusePreflights(http.StatusForbidden), "2.3")
	for _, id := range []string{"2.3/preflight-run", "2.3/preflight-stream", "2.3/preflight-reads"} {
		assert.Equal(t, got[id].Outcome, runner.Pass, "%s: %s", id, describe(got[id]))
	}
	assert.Equal(t, got["2.3/refused-preflight-204"].Outcome, runner.Warn, describe(got["2.3/refused-preflight-204"]))
}

func TestFrameworkPreflightAnswersAreUnhandled(t *testing.T) {
	for _, status := range []int{http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		got := wrapped(t, fixtures.Config{}, refusePreflights(status), "2.3/preflight-run")
		assert.Equal(t, got["2.3/preflight-run"].Outcome, runner.Fail, "%d: %s", status, describe(got["2.3/preflight-run"]))
	}
}

// An Evidence rule judges what every probing rule of the registry sent,
// selected or not: --rule does not change its input, so it does not change
// its verdict.
func TestEvidenceRulesJudgeTheSameWhateverIsSelected(t *testing.T) {
	for _, c := range []struct{ fault, rule string }{
		{"envelope-no-message", "2.1/envelope"},
		{"stream-422", "2.1/code-status"},
		{"stranger-wildcard", "2.3/no-wildcard"},
	} {
		srv, err := fixtures.Start(fixtures.Config{Faults: []string{c.fault}}, 0)
		assert.NilError(t, err)
		_, alone, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin,
			Timeout: 5 * time.Second, Rules: []string{c.rule}})
		srv.Close()
		assert.NilError(t, err)
		assert.Equal(t, len(alone), 1)
		assert.Equal(t, alone[0].Outcome, runner.Lookup(c.rule).Strength(), "%s selected alone: %s", c.rule, describe(alone[0]))
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
	// A deadline long enough for the answers that come to be judged on a
	// loaded machine (-race too), and a patience and timeout past it: no
	// wait for a head ends before the run does.
	deadline := pace.Budget{Work: 500 * time.Millisecond}.Deadline()
	o := runner.Options{Target: srv.URL, Timeout: 2 * deadline, Patience: 2 * deadline, Deadline: deadline}
	env, results, err := runner.Check(context.Background(), o)
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
		case r.Outcome == runner.Skip && r.Kind == runner.NeedsOption && !strings.Contains(r.Reason, "--"):
			t.Errorf("%s needs an option without naming it: %s", r.Rule.ID, r.Reason)
		}
	}
}

// guardPosts is a front requiring "Authorization: Bearer token" on run
// and stream only, as a runner reading §7 as guarding the verbs that run
// the agent does; describe and status answer anyone.
func guardPosts(token string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") == "Bearer "+token {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"This runner requires its own Authorization.","detail":null}}`))
		return true
	}
}

// TestAuthOnRunAndStreamIsNotConformantWithoutHeader: a runner guarding
// only run and stream, checked without --header, answers every run and
// stream probe 401. The rules those probes decide by default are
// undecided, not "needs an option": the verdict is not determined, exit
// 2, and says to pass --header, as for a runner guarding every verb; and
// 7/stray-authorization does not pass on the premise that it requires
// nothing. Checked with the right --header it is conformant, and the
// reference runner, which requires nothing, is judged as ever (the proof).
func TestAuthOnRunAndStreamIsNotConformantWithoutHeader(t *testing.T) {
	const token = "posts-only-token-7d2e"
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	front := guardPosts(token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !front(w, r) {
			rn.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name    string
		headers http.Header
	}{{"without --header", nil}, {"with the right --header", http.Header{"Authorization": {"Bearer " + token}}}} {
		o := runner.Options{Target: srv.URL, Timeout: 5 * time.Second, Headers: c.headers}
		env, results, err := runner.Check(context.Background(), o)
		assert.NilError(t, err)
		rep := report.Assemble(env, results, o, nil, report.Run{})
		code, msg := rep.Exit(report.Strictness{})
		t.Logf("%s: %s  %s", c.name, rep.Verdict.Text, rep.Counts())
		byID := map[string]runner.Result{}
		for _, r := range results {
			byID[r.Rule.ID] = r
			assert.Check(t, r.Outcome != runner.Fail && r.Outcome != runner.Error, "%s: %s", c.name, describe(r))
		}
		if c.headers != nil {
			assert.Check(t, code == report.ExitOK && rep.Verdict.Conformant, "%s: exit %d (%s)", c.name, code, msg)
			assert.Check(t, byID["7/unauthorized"].Outcome == runner.Pass, describe(byID["7/unauthorized"]))
			continue
		}
		assert.Check(t, code == report.ExitCannotCheck && !rep.Verdict.Conformant, "exit %d (%s), want 2", code, msg)
		assert.Check(t, strings.Contains(rep.Verdict.Text, "401 unauthorized") && strings.Contains(rep.Verdict.Text, "pass --header"), rep.Verdict.Text)
		for _, id := range []string{"4.2/missing-required", "4.2/malformed-body", "2.3/media-type-run", "2.3/media-type-stream"} {
			r := byID[id]
			assert.Check(t, r.Outcome == runner.Skip && r.Kind == runner.Undecided && strings.Contains(r.Reason, "--header"), "%s: want undecided, naming --header: %s", id, describe(r))
		}
		stray := byID["7/stray-authorization"]
		assert.Check(t, stray.Outcome == runner.Skip && stray.Kind == runner.NotApplicable && strings.Contains(stray.Reason, "401 unauthorized"),
			"7/stray-authorization on a runner requiring authentication: %s", describe(stray))
	}
}
