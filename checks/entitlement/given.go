package entitlement

import (
	"fmt"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
)

// What the distributor gave a step's runner, read from its log: the one
// place the walk's timed judgements anchor.
//
// A runner may ask again before its window ends: §5.4 sets the latest
// moment it must, never the earliest. One that refreshes early, or lost its
// answer (an unwritable cache, a restart, state its processes do not
// share) and asked again, then holds the latest answer it was given, and
// reports that answer's checked_at (§4.4). So every deadline a step waits
// for is the latest answer's window or grace, and a checked_at is judged
// against every answer the distributor gave the token: what §4.4 forbids
// is one it never sent.

// given is the distributor's log of one step's token, oldest first.
type given []scripted.Request

// given is what this step's runner has been given so far.
func (s *step) given() given { return given(s.checks()) }

// last is the answer given whose window ends last (of two, the later
// given), among those that carry one (active or revoked), and whether
// there is one. Past its window, every answer the runner was given has
// expired, whichever it holds.
func (g given) last() (scripted.Request, bool) {
	var out scripted.Request
	ok := false
	for _, r := range g {
		if r.Windowed() && (!ok || !r.WindowEnds().Before(out.WindowEnds())) {
			out, ok = r, true
		}
	}
	return out, ok
}

// sent reports whether at is, to the second, the checked_at of an answer
// given (the distributor writes whole seconds; a runner carrying its text
// unchanged reports the same instant).
func (g given) sent(at time.Time) bool {
	at = at.Truncate(time.Second)
	for _, r := range g {
		if r.Windowed() && r.Sent.CheckedAt.Equal(at) {
			return true
		}
	}
	return false
}

// stamps lists the checked_at of every answer given, once each, for a
// finding.
func (g given) stamps() string {
	var out string
	seen := map[time.Time]bool{}
	for _, r := range g {
		if !r.Windowed() || seen[r.Sent.CheckedAt] {
			continue
		}
		seen[r.Sent.CheckedAt] = true
		if out != "" {
			out += ", "
		}
		out += scripted.Stamp(r.Sent.CheckedAt)
	}
	return out
}

// early are the checks the runner made while the latest answer given
// before them was still within its window, each with that answer. A 404
// ends the answer it replaced: the window after it is the runner's own
// (§5.7.4).
func (g given) early() (checks, within []scripted.Request) {
	var held *scripted.Request
	for i, r := range g {
		if held != nil && r.At.Before(held.WindowEnds()) {
			checks, within = append(checks, r), append(within, *held)
		}
		switch {
		case r.Windowed():
			held = &g[i]
		case r.Kind == scripted.NotFound:
			held = nil
		}
	}
	return checks, within
}

// anchor is the answer a step's deadlines run from: of the answers with a
// window the runner was given, the one whose window ends last, read once
// the step has changed the script, so that no later one can come. c, the
// step's first check, stands where there is none.
func (s *step) anchor(c scripted.Request) scripted.Request {
	if a, ok := s.given().last(); ok {
		return a
	}
	return c
}

// noteEarly says, in the step's notes, where the runner asked the
// distributor again within a window it had been given: allowed, and the
// step judged the latest answer, but often the sign of a runner that lost
// what it was told, which a FAIL elsewhere in the walk may come from.
func (s *step) noteEarly() {
	checks, within := s.given().early()
	if len(checks) == 0 {
		return
	}
	times := "once"
	if n := len(checks); n > 1 {
		times = fmt.Sprintf("%d times", n)
	}
	s.t.Note("the runner asked the distributor again within a window it had been given, %s, first at %s (the answer given at %s, checked_at %s, held to %s): "+
		"§5.4 allows asking early, and this step judged the latest answer given; but a runner asking within its window has often lost its answer "+
		"(a cache it cannot write, state its processes do not share), which a FAIL elsewhere in the walk may come from",
		times, clockTime(checks[0].At), clockTime(within[0].At), scripted.Stamp(within[0].Sent.CheckedAt), scripted.Stamp(within[0].WindowEnds()))
}

// clockTime is an instant of the walk to the millisecond, for a note.
func clockTime(t time.Time) string { return t.UTC().Format("15:04:05.000") }
