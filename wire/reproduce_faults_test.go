package wire_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/wire"
)

// TestCurlReproducesTheFailure runs, with curl, the line each FAIL's
// finding gives against the reference runner served with the fault that
// FAIL caught, and reads in curl's output the answer the evidence shows:
// the same status and the same body. A fault whose evidence curl cannot
// send as the checker did (a body withheld) gives no line, and says why.
func TestCurlReproducesTheFailure(t *testing.T) {
	wire.NeedCurl(t)
	for _, c := range []struct {
		fault      string
		replayable bool
	}{
		{"bare-405", true},             // DELETE, PUT and GET on the wrong verbs
		{"describe-other-agent", true}, // GET describe
		{"stranger-wildcard", true},    // a preflight with an Origin and its request headers
		{"array-body-500", true},       // a POST with a JSON body
		{"envelope-sibling", true},
		{"unknown-path-400", true},
		{"run-415-wrong-label", false}, // the body withheld: no line
	} {
		t.Run(c.fault, func(t *testing.T) {
			f, err := fixtures.LookupFault(c.fault)
			assert.NilError(t, err)
			srv, err := fixtures.Start(fixtures.Config{Faults: []string{c.fault}}, 0)
			assert.NilError(t, err)
			defer srv.Close()
			o := runner.Options{Target: srv.URL, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second, Rules: []string{f.Rule}}
			_, results, err := runner.Check(context.Background(), o)
			assert.NilError(t, err)
			lines, notes := 0, 0
			for _, res := range results {
				if res.Outcome != engine.Fail {
					continue
				}
				for _, fd := range res.Findings {
					if fd.Ex == nil {
						continue
					}
					rep := fd.Ex.Reproduce(o.Timeout)
					if rep.Curl == "" {
						assert.Check(t, rep.Note != "", "no line, and no reason: %s", fd.Message)
						notes++
						continue
					}
					lines++
					out, err := exec.Command("sh", "-c", rep.Curl).Output()
					assert.NilError(t, err, rep.Curl)
					resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
					assert.NilError(t, err, "curl -i printed no answer: %s\n%s", rep.Curl, out)
					body, _ := io.ReadAll(resp.Body)
					assert.Check(t, is.Equal(resp.StatusCode, fd.Ex.Status), "%s\n%s", fd.Message, rep.Curl)
					if !fd.Ex.Truncated && !fd.Ex.BodyUnread {
						assert.Check(t, is.Equal(string(body), string(fd.Ex.Body)), "%s\n%s", fd.Message, rep.Curl)
					}
					for _, k := range []string{"Access-Control-Allow-Origin", "Content-Type", "Allow"} {
						assert.Check(t, is.Equal(resp.Header.Get(k), fd.Ex.Header.Get(k)), "%s: %s", k, rep.Curl)
					}
					t.Logf("%s\n  %s\n  → %s", fd.Message, rep.Curl, strings.SplitN(string(out), "\r\n", 2)[0])
				}
			}
			if c.replayable {
				assert.Check(t, lines > 0, "no FAIL of %s gave a curl line", f.Rule)
			} else {
				assert.Check(t, lines == 0 && notes > 0, "%d lines, %d reasons for none", lines, notes)
			}
		})
	}
}
