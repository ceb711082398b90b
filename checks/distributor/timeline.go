package distributor

import (
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// unreplayable is why curl cannot send a poll of the timed rules as the
// check did: Exchange.Reproduce says so rather than give a line that
// would mislead.
const unreplayable = "this check was asked at a moment timed against the --revoke or --restore hook, and judged against the time since the hook returned; sent again now, it meets whatever the buyer's purchase is now"

// timedRules are the rules that read the reversal the hooks made.
var timedRules = []string{"5.4/revocation-observed", "5.4/restore-observed", "5.3/checked-at-read-time"}

// Timelines are the timed rules' timeline (checks/timeline), by rule ID,
// once the check is over: the hooks' returns, the bound each was given,
// and every check of --agent asked after them, with what it answered.
// None where the hooks did not run.
func (e *Env) Timelines() map[string]*timeline.Timeline {
	if e == nil || e.rev.revoked.IsZero() {
		return nil
	}
	r := e.rev
	t := &timeline.Timeline{Start: r.revoked, End: r.revoked, Upper: "the buyer's purchase, as the hooks set it", Lower: "the distributor's check of --agent"}
	hook := func(name, group, became string, at time.Time, polls []*wire.Exchange) {
		if at.IsZero() {
			return
		}
		t.Bands = append(t.Bands, timeline.Band{From: at, Label: became, State: bandState(group)})
		t.Calls = append(t.Calls, timeline.Event{At: at, Label: name + " returned", Saw: became, State: bandState(group), Group: group})
		t.Edges = append(t.Edges,
			timeline.Edge{At: at.Add(e.Stale), Kind: timeline.Window, Group: group, Label: "window after " + name + " (stale_after_seconds after it returned)"},
			timeline.Edge{At: at.Add(r.bound), Kind: timeline.Bound, Group: group, Label: "bound after " + name + " (stale_after_seconds and the earned slack)"})
		for _, ex := range polls {
			saw, st := checkWords(ex)
			t.Probes = append(t.Probes, timeline.Event{At: ex.Sent, Took: ex.Elapsed, Label: "GET check", Saw: saw, State: st, Ex: ex})
			if end := ex.Sent.Add(ex.Elapsed); end.After(t.End) {
				t.End = end
			}
		}
		if end := at.Add(r.bound); end.After(t.End) {
			t.End = end
		}
	}
	hook("--revoke", "revoke", "reversed", r.revoked, r.afterRevoke)
	hook("--restore", "restore", "restored", r.restored, r.afterRestore)
	out := map[string]*timeline.Timeline{}
	for _, id := range timedRules {
		out[id] = t
	}
	return out
}

// bandState is the colour of the purchase after a hook.
func bandState(group string) timeline.State {
	if group == "revoke" {
		return timeline.Refused
	}
	return timeline.InForce
}

// checkWords is what a check answered, in a few words, and what it
// amounts to.
func checkWords(ex *wire.Exchange) (string, timeline.State) {
	if !ex.Answered() {
		return ex.StatusLine(), timeline.Nothing
	}
	obj, _ := answerOf(ex)
	switch {
	case obj != nil && obj["state"] == protocol.StateActive:
		return protocol.StateActive, timeline.InForce
	case obj != nil && obj["state"] == protocol.StateRevoked:
		return protocol.StateRevoked, timeline.Refused
	case ex.Is(http.StatusNotFound, "not_found"):
		return ex.Brief(), timeline.Refused
	}
	return ex.Brief(), timeline.Unsure
}
