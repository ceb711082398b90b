package entitlement

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/wire"
)

// What each step drew, for a report to show (checks/timeline): the
// distributor's script over time, every request the runner made of it
// with what it got and the window and grace each answer set, and every
// probe of the runner with what it reported. A step fills its line as it
// goes (begin, script, restart and do, in walk.go); Timelines assembles
// them once the walk is over, with the distributor's log.

// unreplayable is why no request of the walk can be replayed by curl:
// Exchange.Reproduce says so rather than give a line that would mislead.
const unreplayable = "the walk launched this runner for the step, against the checker's scripted distributor (or none), stopped it when the step ended, and judged its answer against when that distributor last answered; there is nothing left for curl to send it to"

// lines are the steps' lines, by rule ID.
type lines struct {
	mu sync.Mutex
	by map[string]*line
}

// line is one step's record as it goes.
type line struct {
	mu     sync.Mutex
	token  string
	start  time.Time
	bands  []timeline.Band
	probes []timeline.Event
	marks  []timeline.Edge
}

// begin starts the line of the step of rule id, with token (or "" where
// the runner has no distributor).
func (l *lines) begin(id, token string, start time.Time) *line {
	ln := &line{token: token, start: start}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]*line{}
	}
	l.by[id] = ln
	return ln
}

// band records that from at on the distributor answers what.
func (ln *line) band(at time.Time, what string, st timeline.State) {
	if ln == nil {
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.bands = append(ln.bands, timeline.Band{From: at, Label: what, State: st})
}

// script records a script set at at.
func (ln *line) script(at time.Time, a scripted.Answer) {
	what, st := answerWords(a.Kind, a.Status)
	if a.Kind == scripted.Active || a.Kind == scripted.Revoked {
		what += fmt.Sprintf(" (window %d s, grace %d s)", a.StaleAfterSeconds, a.GraceSeconds)
	}
	ln.band(at, what, st)
}

// mark records a moment of the step's own (a restart).
func (ln *line) mark(at time.Time, what string) {
	if ln == nil {
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.marks = append(ln.marks, timeline.Edge{At: at, Label: what, Kind: timeline.Marker})
}

// probe records a request to the runner sent at at.
func (ln *line) probe(at time.Time, ex *wire.Exchange) {
	if ln == nil {
		return
	}
	saw, st := reported(ex)
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.probes = append(ln.probes, timeline.Event{At: at, Took: ex.Elapsed, Label: ex.Method + " " + verbOf(ex), Saw: saw, State: st, Ex: ex})
}

// reported is what an answer of the runner says of its entitlement, in a
// few words, and what that amounts to.
func reported(ex *wire.Exchange) (string, timeline.State) {
	if !ex.Answered() {
		return ex.StatusLine(), timeline.Nothing
	}
	switch {
	case ex.Method == http.MethodGet:
		block, _ := ex.Object()["entitlement"].(map[string]any)
		state, _ := block["state"].(string)
		if ex.Status != http.StatusOK || state == "" {
			return ex.Brief(), timeline.Neutral
		}
		return state, stateOf(state)
	case ex.Method == http.MethodPost:
		switch {
		case inForce(ex):
			return ex.Brief() + ": in force", timeline.InForce
		case ex.Status == http.StatusForbidden:
			return ex.Brief(), timeline.Refused
		case ex.Status == http.StatusServiceUnavailable:
			return ex.Brief(), timeline.Unsure
		}
	}
	return ex.Brief(), timeline.Neutral
}

// stateOf is the colour of an entitlement state.
func stateOf(state string) timeline.State {
	switch state {
	case "active":
		return timeline.InForce
	case "revoked":
		return timeline.Refused
	case "unknown":
		return timeline.Unsure
	}
	return timeline.Neutral
}

// answerWords is what the distributor answers under a kind, in a few
// words, and what it amounts to.
func answerWords(k scripted.Kind, status int) (string, timeline.State) {
	switch k {
	case scripted.Active:
		return "active", timeline.InForce
	case scripted.Revoked:
		return "revoked", timeline.Refused
	case scripted.NotFound, scripted.Unscripted:
		return "404 not_found", timeline.Refused
	case scripted.ServerError:
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		return fmt.Sprintf("%d: failing", status), timeline.Unsure
	case scripted.Invalid:
		return "200 that is no check answer", timeline.Unsure
	case scripted.OtherAgent:
		return "active, for another agent", timeline.Unsure
	case scripted.Hang:
		return "no answer (hangs)", timeline.Unsure
	case scripted.Refuse:
		return "connection reset", timeline.Unsure
	case scripted.NoRoute:
		return "404: no route", timeline.Neutral
	case scripted.BadID:
		return "400 bad_request", timeline.Neutral
	}
	return k.String(), timeline.Neutral
}

// Timelines are the steps' timelines, by rule ID, once the walk is over.
func (e *Env) Timelines() map[string]*timeline.Timeline {
	if e == nil {
		return nil
	}
	e.lines.mu.Lock()
	defer e.lines.mu.Unlock()
	out := make(map[string]*timeline.Timeline, len(e.lines.by))
	for id, ln := range e.lines.by {
		out[id] = e.timelineOf(ln)
	}
	return out
}

func (e *Env) timelineOf(ln *line) *timeline.Timeline {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	t := &timeline.Timeline{Start: ln.start, End: ln.start, Upper: "the checker's distributor", Lower: "the runner",
		Bands: append([]timeline.Band(nil), ln.bands...), Probes: append([]timeline.Event(nil), ln.probes...),
		Edges: append([]timeline.Edge(nil), ln.marks...)}
	if ln.token != "" {
		for i, c := range e.Dist.Log(ln.token) {
			saw, st := answerWords(c.Kind, c.Status)
			group := fmt.Sprintf("check %d", i+1)
			t.Calls = append(t.Calls, timeline.Event{At: c.At, Label: "check " + fmt.Sprint(i+1), Saw: saw, State: st, Group: group})
			if !c.Windowed() { // an answer that sets no window (given.go)
				continue
			}
			checked := "checked_at " + scripted.Stamp(c.Sent.CheckedAt)
			t.Edges = append(t.Edges,
				timeline.Edge{At: c.WindowEnds(), Kind: timeline.Window, Group: group,
					Label: fmt.Sprintf("window of check %d ends (%s + %d s)", i+1, checked, c.Sent.StaleAfterSeconds)},
				timeline.Edge{At: c.GraceEnds(), Kind: timeline.Grace, Group: group,
					Label: fmt.Sprintf("grace of check %d ends (+ %d s more)", i+1, c.Sent.GraceSeconds)})
		}
	}
	sort.SliceStable(t.Calls, func(i, j int) bool { return t.Calls[i].At.Before(t.Calls[j].At) })
	later := func(at time.Time) {
		if at.After(t.End) {
			t.End = at
		}
	}
	for _, b := range t.Bands {
		later(b.From)
	}
	for _, c := range t.Calls {
		later(c.At)
	}
	for _, p := range t.Probes {
		later(p.At.Add(p.Took))
	}
	for _, ed := range t.Edges {
		later(ed.At)
	}
	return t
}
