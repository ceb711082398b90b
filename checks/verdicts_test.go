package checks_test

// Verdicts a skeptical implementer has to accept: answers a real runner
// gives that break no bold keyword, checked against the rules that used to
// fail them.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

// wrapped checks the reference runner behind a handler that may answer in
// its place.
func wrapped(t *testing.T, cfg fixtures.Config, front func(w http.ResponseWriter, r *http.Request) bool, rules ...string) map[string]checks.Result {
	t.Helper()
	rn, err := fixtures.New(cfg)
	assert.NilError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !front(w, r) {
			rn.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	_, results, err := checks.Check(context.Background(), checks.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin,
		Timeout: 5 * time.Second, Rules: rules})
	assert.NilError(t, err)
	out := map[string]checks.Result{}
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
		assert.Equal(t, got[id].Outcome, checks.Pass, "%s: %s", id, describe(got[id]))
	}
	assert.Equal(t, got["2.3/refused-preflight-204"].Outcome, checks.Warn, describe(got["2.3/refused-preflight-204"]))
}

func TestFrameworkPreflightAnswersAreUnhandled(t *testing.T) {
	for _, status := range []int{http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		got := wrapped(t, fixtures.Config{}, refusePreflights(status), "2.3/preflight-run")
		assert.Equal(t, got["2.3/preflight-run"].Outcome, checks.Fail, "%d: %s", status, describe(got["2.3/preflight-run"]))
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
		_, alone, err := checks.Check(context.Background(), checks.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin,
			Timeout: 5 * time.Second, Rules: []string{c.rule}})
		srv.Close()
		assert.NilError(t, err)
		assert.Equal(t, len(alone), 1)
		assert.Equal(t, alone[0].Outcome, checks.Lookup(c.rule).Strength(), "%s selected alone: %s", c.rule, describe(alone[0]))
	}
}
