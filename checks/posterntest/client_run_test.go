package posterntest

import (
	"context"
	"io"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/client"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// A client's breach fails its rule's subtest, with the finding and the
// exchange; a runner's option is refused.
func TestRunClientFailsTheRuleBroken(t *testing.T) {
	faulty := client.Func(func(ctx context.Context, env map[string]string, out, errs io.Writer) int {
		return refclient.Main(ctx, env, out, errs, "no-lone-cr")
	})
	r := recordRun(t, top, nil, func(rt tester) { runClient(rt, faulty, []Option{Rules("4.3/client-lone-cr", "2.1")}) })
	sub := top + "/4.3/client-lone-cr"
	assert.Check(t, is.DeepEqual(r.failed(), []string{sub, top}), r.String())
	errs := texts(r.of(sub, "error"))
	assert.Check(t, is.Contains(errs, "FAIL  a client reads lone CR line ends"))
	assert.Check(t, is.Contains(errs, "scenario lone-cr (POSTERN_VERB=stream)"))
	assert.Check(t, is.Contains(errs, "> POST http://127.0.0.1:"))

	r = recordRun(t, top, nil, func(rt tester) { runClient(rt, faulty, []Option{Origin("https://a.example")}) })
	assert.Check(t, is.Contains(texts(r.of(top, "fatal")), "posterntest.Origin does not apply to RunClient"))
}
