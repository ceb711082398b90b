// Package timeline holds what a timed rule saw over time, as its mode
// recorded it, for a report to draw: what the other side said over time
// (the walk's scripted distributor, or the authority the distributor
// check's hooks change), the instants it was asked, the edges a timed
// judgement is made against (a window, a grace period, a bound after a
// hook), and each probe with what came back. The entitlement walk fills
// one per step, the distributor check one for its reversal hooks; the
// HTML report (report/html) draws them. Nothing here judges anything.
package timeline

import (
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Timeline is one rule's span of time, on its mode's clock.
type Timeline struct {
	// Start and End bound what is drawn: the step's start and its last
	// recorded moment.
	Start, End time.Time
	// Upper and Lower name the two lanes: what the party playing the
	// other side answered (Bands, Calls), and the party under test, asked
	// by the checker (Probes).
	Upper, Lower string
	// Bands are what the other side answers from From until the next
	// band's From (or End), in order.
	Bands []Band
	// Calls are the instants the other side was asked (the runner's
	// checks to the walk's distributor; a hook's return), each with what
	// it gave, in order of time.
	Calls []Event
	// Probes are the checker's requests to the party under test, each
	// with what came back.
	Probes []Event
	// Edges are the moments timed judgements are made against.
	Edges []Edge
}

// State is what an answer or a report amounts to, for its colour.
type State string

// The states.
const (
	InForce State = "in-force" // active; a refusal only an entitled runner gives
	Refused State = "refused"  // revoked, 403, 404 from the distributor
	Unsure  State = "unsure"   // unknown, unreachable, 503, a failing distributor
	Neutral State = "neutral"  // not_required, none configured, anything else
	Nothing State = "nothing"  // no answer at all
)

// Band is what the other side answers for a while.
type Band struct {
	From  time.Time
	Label string
	State State
}

// Event is one instant: a call or a probe.
type Event struct {
	At    time.Time
	Took  time.Duration
	Label string // what was asked ("GET status")
	Saw   string // what came back ("active", "403 not_entitled")
	State State
	// Group ties a call to the edges it set (see Edge.Group); "" for none.
	Group string
	// Ex is the probe's exchange, which a finding may cite; nil for a
	// call.
	Ex *wire.Exchange
}

// Answered is when the answer to a probe came (its sending, for a call):
// the moment what came back is judged.
func (e Event) Answered() time.Time { return e.At.Add(e.Took) }

// Edge is a moment a judgement is made against: the end of an answer's
// window or grace, a bound after a hook, a restart.
type Edge struct {
	At    time.Time
	Label string
	Kind  EdgeKind
	// Group ties the edge to the call that set it: a judgement at some
	// moment is made against the edges of the latest call before it.
	Group string
}

// EdgeKind is what an edge is.
type EdgeKind string

// The kinds of edge.
const (
	Window EdgeKind = "window" // an answer's checked_at + stale_after_seconds
	Grace  EdgeKind = "grace"  // … + grace_seconds
	Bound  EdgeKind = "bound"  // the most a judgement waits after a hook
	Marker EdgeKind = "marker" // a restart, a hook returning: no judgement by itself
)

// Judged is the probe of t a finding citing ex was judged on, and the
// edges that judgement was made against (EdgesBefore its answer,
// Event.Answered). ok is false where t has no probe with ex.
func (t *Timeline) Judged(ex *wire.Exchange) (probe Event, edges []Edge, ok bool) {
	if t == nil || ex == nil {
		return Event{}, nil, false
	}
	for _, p := range t.Probes {
		if p.Ex == ex {
			probe, ok = p, true
			break
		}
	}
	if !ok {
		return Event{}, nil, false
	}
	return probe, t.EdgesBefore(probe.Answered()), true
}

// EdgesBefore are the edges a judgement at at is made against: those of
// the call, at or before at, whose window ends last (the later call of
// two): of every answer given by then, the one that expires last, which
// the runner may hold (the walk anchors there, checks/entitlement's
// given.go). A call whose edges hold no window counts by its last edge.
func (t *Timeline) EdgesBefore(at time.Time) []Edge {
	group, ends := "", time.Time{}
	for _, c := range t.Calls {
		if c.At.After(at) || c.Group == "" {
			continue
		}
		if end, ok := t.windowOf(c.Group); ok && !end.Before(ends) {
			group, ends = c.Group, end
		}
	}
	if group == "" {
		return nil
	}
	var out []Edge
	for _, e := range t.Edges {
		if e.Group == group {
			out = append(out, e)
		}
	}
	return out
}

// windowOf is when the window a call's edges set ends (its Window edge,
// else its last edge), and whether it set any.
func (t *Timeline) windowOf(group string) (time.Time, bool) {
	var end time.Time
	found, window := false, false
	for _, e := range t.Edges {
		if e.Group != group {
			continue
		}
		switch {
		case e.Kind == Window:
			end, window = e.At, true
		case !window && e.At.After(end):
			end = e.At
		}
		found = true
	}
	return end, found
}
