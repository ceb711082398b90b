package timeline_test

import (
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/wire"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestJudgedAgainstTheWindowThatEndsLast: a judgement is made against the
// edges of the answer given by then whose window ends last, the later of
// two that end together; a call that set none (a 404, an outage) moves
// nothing; before any answer there is none.
func TestJudgedAgainstTheWindowThatEndsLast(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	edges := func(group string, window, grace float64) []timeline.Edge {
		return []timeline.Edge{{At: at(window), Kind: timeline.Window, Group: group}, {At: at(grace), Kind: timeline.Grace, Group: group}}
	}
	early, late := &wire.Exchange{}, &wire.Exchange{}
	tl := &timeline.Timeline{Start: t0, End: at(10),
		Calls:  []timeline.Event{{At: at(1), Group: "one"}, {At: at(2), Group: "two"}, {At: at(2.5), Group: "outage"}, {At: at(6), Group: "three"}},
		Probes: []timeline.Event{{At: at(0.5), Ex: early}, {At: at(5), Took: 500 * time.Millisecond, Ex: late}},
	}
	tl.Edges = append(append(edges("one", 5, 7), edges("two", 4, 6)...), edges("three", 8, 9)...)

	_, got, ok := tl.Judged(early)
	assert.Check(t, ok)
	assert.Check(t, is.Len(got, 0), "nothing given yet")
	p, got, ok := tl.Judged(late)
	assert.Check(t, ok)
	assert.Check(t, p.Answered().Equal(at(5.5)))
	assert.Check(t, is.DeepEqual(got, edges("one", 5, 7)), "one's window ends after two's, and three came after the answer")
	assert.Check(t, is.DeepEqual(tl.EdgesBefore(at(6)), edges("three", 8, 9)))
	_, _, ok = tl.Judged(&wire.Exchange{})
	assert.Check(t, !ok, "an exchange not on the timeline")
}
