package distributor_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestTimeline: the timed rules draw the hooks' returns, the window and
// the bound after each, and every check asked after them; a revocation
// never seen is judged past the bound after --revoke, and its polls say
// no curl line can replay them.
func TestTimeline(t *testing.T) {
	srv, err := refdist.Start(refdist.Config{Faults: []string{"revocation-ignored"}, Stale: time.Second}, 0)
	assert.NilError(t, err)
	defer srv.Close()
	o := srv.Options(true)
	o.Timeout, o.Rules = 5*time.Second, []string{"5.4/revocation-observed"}
	env, results, err := distributor.Check(context.Background(), o)
	assert.NilError(t, err)
	assert.Assert(t, len(results) == 1 && results[0].Outcome == engine.Fail, "%d results", len(results))
	res, tl := results[0], env.Timelines()["5.4/revocation-observed"]
	assert.Assert(t, tl != nil, describe(res))
	assert.Assert(t, is.Len(tl.Calls, 2), "--revoke and --restore returned")
	assert.Check(t, is.Equal(tl.Calls[0].Label, "--revoke returned"))
	assert.Check(t, is.Equal(tl.Bands[0].State, timeline.Refused))
	assert.Check(t, is.Equal(tl.Bands[1].State, timeline.InForce))
	assert.Assert(t, is.Len(res.Findings, 1))
	f := res.Findings[0]
	p, edges, ok := tl.Judged(f.Ex)
	assert.Assert(t, ok)
	assert.Assert(t, is.Len(edges, 2), "the window and the bound after --revoke")
	assert.Check(t, is.Equal(edges[1].Kind, timeline.Bound))
	assert.Check(t, p.Answered().After(edges[1].At), "judged at %s, past the bound at %s", p.Answered(), edges[1].At)
	assert.Check(t, is.Equal(f.Ex.Reproduce(o.Timeout).Curl, ""))
	assert.Check(t, is.Contains(f.Ex.Reproduce(o.Timeout).Note, "timed against the --revoke"))
}
