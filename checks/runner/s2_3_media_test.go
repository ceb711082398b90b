package runner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
)

// A runner that caps the body's size from the head, whatever its label,
// answers every withheld probe 400 at once: its media-type check (or the
// lack of one) cannot be seen, so the §2.3 media-type rules neither pass
// nor fail it (the control shows why).
func TestMediaTypeUndecidableBehindASizeCap(t *testing.T) {
	testSizeCap(t, 8<<10, runner.Skip, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable)
}

// A cap as frameworks ship it (Express's JSON parser: 100 kB) lies above
// the size of the second look, so the media type is decided there.
func TestMediaTypeDecidedUnderAFrameworkCap(t *testing.T) {
	testSizeCap(t, 100000, runner.Pass, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
}

func testSizeCap(t *testing.T, limit int64, want runner.Outcome, codes ...int) {
	for _, code := range codes {
		rn, err := fixtures.New(fixtures.Config{})
		assert.NilError(t, err)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.ContentLength > limit {
				// Refused from the head, the body unread, as Express does:
				// nor is it drained (Go's server would drain one this small).
				w.Header().Set("Connection", "close")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				errCode := map[int]string{400: "bad_request", 413: "bad_request", 503: "unavailable"}[code]
				_, _ = w.Write([]byte(`{"error":{"code":"` + errCode + `","message":"Too large."}}`))
				return
			}
			rn.ServeHTTP(w, r)
		}))
		// The default patience, as the proof's: a refusal from the head that
		// a loaded machine delayed past a shorter one would read as the
		// silence of a runner waiting for the body, and pass the rule.
		_, results, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin,
			Timeout: 5 * time.Second * pace.Slowdown(), Patience: runner.DefaultPatience})
		srv.Close()
		assert.NilError(t, err)
		for _, r := range results {
			switch r.Rule.ID {
			case "2.3/media-type-run", "2.3/media-type-stream", "2.3/media-type-params":
				assert.Equal(t, r.Outcome, want, "%d: %s: %s %v %v", code, r.Rule.ID, r.Reason, r.Findings, r.Notes)
			}
		}
	}
}
