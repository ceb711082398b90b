package runner

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §2.3 Browser clients: the media-type half. A body a browser may post
// cross-origin without asking (text/plain and the two form labels) must be
// refused 400 bad_request, and refused from the head: §4.2 has the check
// come before the body is read at all. Every probe here withholds its body,
// so nothing can execute whatever the runner does, and a runner still
// waiting for the body when patience runs out is one that reads first.
//
// Every withheld head announces a large body, and a runner may refuse that
// from the head for its size alone, whatever the label. So each verb has a
// control: the same head labelled plain application/json. A conforming
// runner waits for the control's body; one that refuses it from the head
// would give the other labels the same answer, and the labels prove
// nothing there. The control and the charset probe each watch a conforming
// runner wait for the body, so both are facts: the driver starts them
// before any rule, their earned waits overlap the rest of the run, and each
// is sent once however many rules read it.
var section2_3Media = []*Rule{
	mediaTypeRule("run", 2),
	mediaTypeRule("stream", 3),
	{
		ID: "2.3/media-type-params", Section: "2.3", Level: 2, Keyword: Must, Binding: Contract, Chain: "§2.3",
		Title:    "application/json; charset=utf-8 is not refused for its parameter",
		Needs:    []Need{NeedStatus},
		Requires: []Dep{withheldControl["run"], withheldParams},
		// Only the parameter is probed. Type and subtype are case-insensitive
		// in HTTP, so Application/JSON is the same media type too, but §2
		// fixes the spelling a client sends and no conforming client sends
		// another: refusing it harms none, and probing it would cost every
		// conforming runner a further full wait for a body that never comes.
		Probe: probeParams,
	},
}

// nonJSONLabels are labels a run or stream must be refused for: the three a
// browser sends cross-origin without a preflight, a near miss, and none.
var nonJSONLabels = []struct{ label, what string }{
	{plainLabel, "text/plain, which a browser posts cross-origin without a preflight"},
	{"application/x-www-form-urlencoded", "a form label a browser posts without a preflight"},
	{"multipart/form-data; boundary=postern-conformance", "a multipart form, posted without a preflight"},
	{"application/json-seq", "a different media type that merely begins like JSON's"},
	{"", "no Content-Type at all"},
}

// announced is the Content-Length every withheld head here announces.
const announced = 300000

// withheldHead is a withheld POST that a conforming runner waits on, read
// by several rules: a fact, sent once, early.
func withheldHead(verb, label, note string) *engine.Fact[*Env, *wire.Exchange] {
	return &engine.Fact[*Env, *wire.Exchange]{
		Name: "withheld " + verb + " labelled " + label,
		Compute: func(t *T) (*wire.Exchange, string) {
			if entitlementFirst(t.Env) {
				return nil, "" // the rules reading it skip first, for the entitlement
			}
			h := http.Header{"Content-Type": {label}}
			return t.Withheld(wire.Prefix+verb, h, announced, engine.ExpectWait, note), ""
		},
	}
}

// withheldControl is each verb's control: plain application/json, body
// withheld; a runner checking only the label waits for the body.
var withheldControl = map[string]*engine.Fact[*Env, *wire.Exchange]{
	"run":    withheldHead("run", protocol.JSON, controlNote),
	"stream": withheldHead("stream", protocol.JSON, controlNote),
}

const controlNote = "the control: labelled application/json, no parameter, body withheld; a runner checking only the label waits for the body"

// withheldParams is the label §2 has clients send, body withheld.
var withheldParams = withheldHead("run", protocol.JSONUTF8, "labelled as §2 has clients label a body, charset parameter included; body withheld")

// controlRefused says why verb's control shows the runner refusing a large
// withheld JSON body from the head, or "" where it waited for the body.
func controlRefused(t *T, verb string) string {
	return controlShows(withheldControl[verb].Of(t), verb, "")
}

// controlRefusedAgain confirms a would-be FAIL that rests on verb's control
// having been waited on. The control was watched for the earned wait only,
// and on a loaded machine a runner's refusal of it (a cap on the body's
// size) may come later than that; so it is sent again and watched for the
// full confirmation, as any would-be FAIL is. It returns "" where the
// runner waits for the body again, or why its answer shows otherwise.
func controlRefusedAgain(t *T, verb string) string {
	ex := t.Withheld(wire.Prefix+verb, labelled(protocol.JSON), announced, engine.ExpectAnswer, controlNote+" (sent again, to confirm a FAIL that rests on it)")
	return controlShows(ex, verb, ", sent again to confirm,")
}

// controlLookedAtAgain is a second look at verb's control before a PASS
// that rests on its wait: it was sent first of all, when the check knew
// least how long the runner's answers take, and a size cap's refusal that
// a loaded machine delayed past that wait would pass the rule for a runner
// whose media-type check cannot be seen. The second look waits as long as
// the answers since have earned, so a conforming runner pays tens of
// milliseconds for it, not the patience.
func controlLookedAtAgain(t *T, verb string) string {
	ex := t.Withheld(wire.Prefix+verb, labelled(protocol.JSON), announced, engine.ExpectWait, controlNote+" (sent again, with the wait the runner's answers have earned since)")
	return controlShows(ex, verb, ", sent again,")
}

// controlShows says why ctrl, verb's control, shows the runner refusing
// from the head, or "" where it waited for the body; again words a control
// sent a second time.
func controlShows(ctrl *wire.Exchange, verb, again string) string {
	sent := fmt.Sprintf("the control (POST %s labelled application/json, %d bytes announced, body withheld)%s", verb, announced, again)
	switch {
	case stillReading(ctrl):
		return ""
	case unavailable(ctrl):
		return sent + " was answered 503 unavailable from the head, as a runner at capacity may answer anything (§4.5)"
	case ctrl.Answered():
		return fmt.Sprintf("%s was refused %s from the head as well, so the runner turns such a head away whatever its label (a cap on the body's size, say)", sent, ctrl.Brief())
	}
	return fmt.Sprintf("%s got %s rather than a wait for its body", sent, ctrl.StatusLine())
}

// skipForControl skips a rule that verb's control left with nothing to
// judge, as undecided, since the media type's check went unseen: where
// the control was refused 401 without a credential (inbound
// authentication, §7, turns every head away first), it says to pass
// --header.
func skipForControl(t *T, verb, format string, args ...any) {
	if ctrl := withheldControl[verb].Of(t); refusedUnauthenticated(ctrl) && !t.Env.Client.HasHeader("Authorization") {
		t.Undecided(format+"; the runner requires inbound authentication there (§7): pass --header 'Authorization: …' to decide it", args...)
	}
	t.Undecided(format, args...)
}

func mediaTypeRule(verb string, level int) *Rule {
	return &Rule{
		ID: "2.3/media-type-" + verb, Section: "2.3", Level: level, Keyword: Must,
		Title:    fmt.Sprintf("%s refuses a body not labelled application/json with 400 bad_request, before reading it", verb),
		Needs:    []Need{NeedStatus},
		Requires: []Dep{withheldControl[verb]},
		Probe:    func(t *T) { probeMediaType(t, verb) },
	}
}

func probeMediaType(t *T, verb string) {
	if skipWhereEntitlementFirst(t) {
		return
	}
	// The labels first: a conforming runner answers each at once, while the
	// control, started before any probe, finishes waiting.
	var judge []*wire.Exchange
	var whats, busy []string
	pastGrace := false
	// Sent side by side: a runner that reads every body first makes each
	// wait out the patience, and the waits then overlap.
	exs := sendLabels(t, verb, announced, "")
	for i, l := range nonJSONLabels {
		ex := exs[i]
		if pastGrace = skipPastGrace(t, ex); pastGrace {
			break
		}
		switch {
		case stillReading(ex):
			// Reading a body so labelled is wrong whatever the control shows.
			t.Fail(ex, "POST %s with %s: still reading the body after %s, so it parses before deciding on the media type (§2.3, §4.2: refuse before reading the body at all)",
				verb, l.what, patience(t))
		case unavailable(ex):
			busy = append(busy, l.what)
		default:
			judge, whats = append(judge, ex), append(whats, l.what)
		}
	}
	why := controlRefused(t, verb) // read even when skipping, to cite it
	if pastGrace {
		return
	}
	switch {
	case why != "":
	case slices.ContainsFunc(judge, func(ex *wire.Exchange) bool { return !ex.Is(http.StatusBadRequest, "bad_request") }):
		why = controlRefusedAgain(t, verb)
	case len(judge) > 0:
		why = controlLookedAtAgain(t, verb)
	}
	if why != "" {
		// A 2xx is no refusal at all, so what the control shows of the
		// runner's refusals does not explain it: the head decides.
		for i, ex := range judge {
			if ex.Status >= 200 && ex.Status < 300 {
				t.Fail(ex, "POST %s with %s was answered %s from the head, its body never sent: §2.3 requires 400 bad_request for a body so labelled, and accepting one is no cap on its size",
					verb, whats[i], ex.Brief())
			}
		}
		if !t.Failed() && !decidedUnderCap(t, verb) {
			skipForControl(t, verb, "%s: the answers to the other labels cannot be told from that refusal, so the media type's check cannot be seen here", why)
		}
		return
	}
	for i, ex := range judge {
		switch {
		case ex.Is(http.StatusBadRequest, "bad_request"):
		case !ex.Answered():
			t.Fail(ex, "POST %s with %s got no answer (%v), while the same head labelled application/json was waited on; §2.3 requires 400 bad_request", verb, whats[i], ex.Err)
		default:
			t.Fail(ex, "POST %s with %s answered %s, while the same head labelled application/json was waited on; §2.3 requires 400 bad_request", verb, whats[i], ex.Brief())
		}
	}
	if len(busy) > 0 && !t.Failed() {
		t.Undecided("POST %s with %s was answered 503 unavailable, which a runner at capacity may answer to anything before its agent starts (§4.5, §4.6): that says nothing about the media type",
			verb, strings.Join(busy, "; with "))
	}
}

// sendLabels sends verb a withheld head of size bytes under each of the
// labels a run must be refused for, side by side: a runner that reads
// every body first makes each wait out its confirmation, and the waits
// then overlap.
func sendLabels(t *T, verb string, size int, note string) []*wire.Exchange {
	return t.SideBySide(len(nonJSONLabels), func(i int, s *engine.Session, ctx context.Context) *wire.Exchange {
		return s.Withheld(ctx, wire.Prefix+verb, labelled(nonJSONLabels[i].label), size, engine.ExpectAnswer, nonJSONLabels[i].what+"; body withheld"+note)
	})
}

// underCap is the Content-Length of the second look at a runner that
// turned the announced length away from the head whatever its label (a cap
// on the body's size: Express's JSON parser refuses past 100 kB before
// reading). It is under the caps frameworks ship with, and under the
// 256 KiB that some servers (Go's among them) drain before answering, so
// there a silence proves nothing: only answers decide.
const underCap = 16 << 10

// underCapNote marks the requests of the second look.
const underCapNote = " (a second look, under the size the runner turned away)"

// controlWaitsUnderCap sends verb's control again at underCap bytes and
// reports whether the runner waits for its body. A wait is what decides
// the second look, so it is watched for the full confirmation, not the
// earned wait: a refusal that comes late is still a refusal.
func controlWaitsUnderCap(t *T, verb string) bool {
	return stillReading(t.Withheld(wire.Prefix+verb, labelled(protocol.JSON), underCap, engine.ExpectAnswer, controlNote+underCapNote))
}

// decidedUnderCap asks again, at underCap bytes, a runner whose control
// was refused from the head, and decides the rule where it can: the
// control now waited on, and every other label answered from the head. A
// label refused otherwise than 400 bad_request, or accepted, fails; a
// silence, or a control refused again, leaves it undecided (false).
func decidedUnderCap(t *T, verb string) bool {
	if !controlWaitsUnderCap(t, verb) {
		return false
	}
	exs := sendLabels(t, verb, underCap, underCapNote)
	busy := false
	for i, ex := range exs {
		switch {
		case !ex.Answered():
			return false
		case unavailable(ex):
			busy = true
		case !ex.Is(http.StatusBadRequest, "bad_request"):
			t.Fail(ex, "POST %s with %s, %d bytes announced, answered %s, while the same head labelled application/json was waited on; §2.3 requires 400 bad_request", verb, nonJSONLabels[i].what, underCap, ex.Brief())
		}
	}
	if busy && !t.Failed() {
		return false
	}
	if !t.Failed() {
		t.Note("the runner turned %d announced bytes away from the head whatever the label (a cap on the body's size); at %d bytes it waited for a JSON body and refused every other label 400 from the head", announced, underCap)
	}
	return true
}

// paramsUnderCap is probeParams's second look at a runner whose control
// was refused from the head: at underCap bytes, the charset form, and
// where it is refused from the head, the control. It decides (true) where
// the charset form is waited on (a pass), or refused while the control is
// waited on (a breach).
func paramsUnderCap(t *T) bool {
	ex := t.Withheld(wire.Prefix+"run", labelled(protocol.JSONUTF8), underCap, engine.ExpectWait,
		"labelled as §2 has clients label a body, charset parameter included; body withheld"+underCapNote)
	switch {
	case stillReading(ex):
		t.Note("the runner turned %d announced bytes away from the head whatever the label (a cap on the body's size); at %d bytes it waited for the body labelled %q", announced, underCap, protocol.JSONUTF8)
	case ex.Answered() && ex.Status >= 400 && !unavailable(ex) && controlWaitsUnderCap(t, "run"):
		t.Fail(ex, "POST run labelled %q, %d bytes announced, was answered %s from the head, while the same head labelled application/json was waited on: §2.3 makes parameters irrelevant to the media type, and this is the label §2 requires clients to send",
			protocol.JSONUTF8, underCap, ex.Brief())
	default:
		return false
	}
	return true
}

func probeParams(t *T) {
	if skipWhereEntitlementFirst(t) {
		return
	}
	ex := withheldParams.Of(t)
	// Both were started together before any probe; reading the control
	// every time keeps its evidence here and in the log before the sweeps.
	ctrl := controlRefused(t, "run")
	switch {
	case stillReading(ex):
		t.Note("after the head, the runner waited for the body (watched for %s, ten times its typical answer or more), as one accepting the label must", ex.Elapsed.Round(time.Millisecond))
	case skipPastGrace(t, ex):
	case unavailable(ex):
		t.Undecided("POST run labelled %q was answered 503 unavailable, which a runner at capacity may answer to anything before its agent starts (§4.5, §4.6): it says nothing about the parameter", protocol.JSONUTF8)
	case !ex.Answered():
		t.Note("no answer to the head (%v); nothing shows the label was refused", ex.Err)
	case ex.Status >= 200 && ex.Status < 300:
		t.Note("answered %s from the head: whatever else that shows, the parameter was not refused", ex.Brief())
	case ctrl != "" && !paramsUnderCap(t):
		skipForControl(t, "run", "POST run labelled %q was answered %s from the head, but %s: the parameter is not what was refused", protocol.JSONUTF8, ex.Brief(), ctrl)
	case ctrl != "":
	default:
		if again := controlRefusedAgain(t, "run"); again != "" {
			if !paramsUnderCap(t) {
				skipForControl(t, "run", "POST run labelled %q was answered %s from the head, but %s: the parameter is not what was refused", protocol.JSONUTF8, ex.Brief(), again)
			}
			return
		}
		t.Fail(ex, "POST run labelled %q was answered %s from the head alone, while the same head labelled application/json was waited on: the parameter alone decided it, yet §2.3 makes parameters irrelevant to the media type, and this is the label §2 requires clients to send",
			protocol.JSONUTF8, ex.Brief())
	}
}

// entitlementFirst reports a runner whose entitlement refusal (§4.6 step 2)
// comes before the media type: it would answer 403 or 503 to every probe
// here, and the order rules judge that.
func entitlementFirst(e *Env) bool {
	s := entitlementStance(e)
	return s == entRevoked || s == entNever
}

// skipWhereEntitlementFirst skips where entitlementFirst holds.
func skipWhereEntitlementFirst(t *T) bool {
	switch entitlementStance(t.Env) {
	case entRevoked:
		t.NotApplicable("status reports the entitlement revoked: the answer would be §4.6 step 2's 403 not_entitled, ahead of the media type (4.6/entitlement-before-media-type judges it)")
		return true
	case entNever:
		t.NotApplicable("status reports the entitlement unknown and never checked: the answer would be §4.6 step 2's 503 unavailable, ahead of the media type (4.6/entitlement-before-media-type judges it)")
		return true
	}
	return false
}
