package entitlement_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestTimeline: a step draws what the distributor was scripted to answer
// and when, each check the runner made with the window and grace its
// answer set, and every request to the runner with what it reported; the
// FAIL of a runner that takes revoked as final is judged after the
// window of the one check it made, and its requests are marked as no curl
// line can replay them.
func TestTimeline(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	o := entitlement.Options{Launcher: inProcess(c, variant{}, "ent-revoked-final"), Clock: c, Timeout: 2 * time.Second,
		CheckGrace: 50 * time.Millisecond, Rules: []string{"5.4/revoked-re-checked"}}
	env, results, err := entitlement.Walk(context.Background(), o)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(results, 1))
	res := results[0]
	assert.Equal(t, res.Outcome, engine.Fail, describe(res))
	tl := env.Timelines()[res.Rule.ID]
	assert.Assert(t, tl != nil)

	assert.Assert(t, len(tl.Bands) >= 2, "%+v", tl.Bands)
	assert.Check(t, is.Equal(tl.Bands[0].Label, "revoked (window 2 s, grace 2 s)"))
	assert.Check(t, is.Equal(tl.Bands[0].State, timeline.Refused))
	assert.Check(t, is.Equal(tl.Bands[1].Label, "active (window 2 s, grace 2 s)"))
	assert.Assert(t, is.Len(tl.Calls, 1), "the runner checked once, and never again")
	assert.Check(t, is.Equal(tl.Calls[0].Saw, "revoked"))
	assert.Assert(t, is.Len(tl.Edges, 2))
	window, grace := tl.Edges[0], tl.Edges[1]
	assert.Check(t, is.Equal(window.Kind, timeline.Window))
	assert.Check(t, is.Equal(grace.Kind, timeline.Grace))
	assert.Check(t, is.Equal(grace.At.Sub(window.At), 2*time.Second))
	assert.Check(t, !tl.End.Before(grace.At))

	inTimeline := map[any]bool{}
	for _, p := range tl.Probes {
		inTimeline[p.Ex] = true
	}
	for _, ex := range res.Exchanges {
		assert.Check(t, inTimeline[ex], "%s is not on the timeline", ex.RequestLine())
	}
	for _, f := range res.Findings {
		p, edges, ok := tl.Judged(f.Ex)
		assert.Assert(t, ok, f.Message)
		assert.Check(t, p.Answered().After(window.At), "judged at %s, after the window's end at %s", p.Answered(), window.At)
		assert.Check(t, is.DeepEqual(edges, []timeline.Edge{window, grace}))
		rep := f.Ex.Reproduce(o.Timeout)
		assert.Check(t, is.Equal(rep.Curl, ""), "a request of the walk has no curl line")
		assert.Check(t, is.Contains(rep.Note, "scripted distributor"))
	}
}
