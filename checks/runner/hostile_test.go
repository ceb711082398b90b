package runner_test

// A hostile or broken runner cannot hang or crash the checker: every
// answer, however wrong, becomes a FAIL or a SKIP with evidence, never a
// panic (an ERROR outcome) and never an unbounded wait.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"gotest.tools/v3/assert"
)

// weird documents: every member of the wrong type, or absent, or huge.
var weirdDocs = []string{
	`{"postern":1,"level":{},"state":[],"agent":"x","entitlement":"active","credentials":7,"limits":"none","update":[1],"idempotent_retry":"yes",
	  "inputs":{"a":1},"output":[],"capabilities":"all","examples":{}}`,
	`{"postern":"0.1","level":3,"state":"ready","agent":{"id":null},"entitlement":{"state":7,"checked_at":[]},
	  "inputs":[null,1,"x",{"key":5,"type":{},"validation":"v","default":true}],"output":{"type":null},
	  "capabilities":{"tools":"t","write_tools":[1,{}]},"credentials":[null,"x",{"env":[]}],
	  "limits":{"max_concurrent_runs":"many"},"update":{"state":[],"current":1,"latest":{}}}`,
	`{"level":2.5,"agent":{"id":"` + strings.Repeat("a", 5000) + `"},"entitlement":{"state":"unknown","checked_at":"x"}}`,
	`[]`,
	`"just a string"`,
	`{"level":3,"entitlement":{"state":"revoked"},"credentials":{"missing":["A",1,null],"satisfied":"no"},"state":"degraded",
	  "inputs":[{"key":"k","label":"K","type":"select","required":true,"validation":{"options":"abc","pattern":"(","max_length":-1,"min":"a"}}],
	  "credentials_x":1}`,
}

func weirdRunner(doc string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/status") || strings.HasSuffix(r.URL.Path, "/describe")):
			_, _ = w.Write([]byte(doc))
		case r.Method == http.MethodOptions:
			w.Header().Set("Access-Control-Allow-Origin", "\x00\xff")
			w.Header().Set("Access-Control-Allow-Headers", strings.Repeat(",", 1000))
			w.WriteHeader(204)
		default:
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":` + doc + `}`))
		}
	})
}

func TestWeirdDocumentsNeverCrashARule(t *testing.T) {
	for i, doc := range weirdDocs {
		srv := httptest.NewServer(weirdRunner(doc))
		for _, execute := range []bool{false, true} {
			_, results, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Origin: "https://app.example.test",
				Timeout: 2 * time.Second, Patience: 200 * time.Millisecond, Execute: execute,
				Headers: http.Header{"Authorization": {"Bearer x"}}})
			if err != nil {
				continue // "not a Postern runner" is a fine answer to some of these
			}
			for _, r := range results {
				if r.Outcome == runner.Error {
					t.Errorf("doc %d: %s crashed: %s", i, r.Rule.ID, firstLine(r.Reason))
				}
			}
		}
		srv.Close()
	}
}

func TestGarbageAndSilenceAreBounded(t *testing.T) {
	// status answers; every other request hangs until the client gives up.
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/status") && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"postern":"0.1","level":3,"state":"ready","agent":{"id":"a/b"},"entitlement":{"state":"not_required"}}`))
			return
		}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang) // runs first: release the handlers, then close
	start := time.Now()
	_, results, err := runner.Check(context.Background(), runner.Options{Target: srv.URL, Timeout: 300 * time.Millisecond, Patience: 100 * time.Millisecond})
	assert.NilError(t, err)
	assert.Check(t, time.Since(start) < 20*time.Second, "took %s", time.Since(start))
	fails := 0
	for _, r := range results {
		assert.Check(t, r.Outcome != runner.Error, "%s: %s", r.Rule.ID, r.Reason)
		if r.Outcome == runner.Fail {
			fails++
		}
	}
	assert.Check(t, fails > 0, "a runner that never answers is not conformant")
}
