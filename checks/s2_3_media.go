package checks

import (
	"fmt"
	"net/http"
)

// §2.3 Browser clients: the media-type half. A body a browser may post
// cross-origin without asking (text/plain and the two form labels) must be
// refused 400 bad_request, and refused from the head: §4.2 has the check
// come before the body is read at all. Every probe here withholds its body,
// so nothing can execute whatever the runner does, and a runner still
// waiting for the body when patience runs out is one that reads first.
var section2_3Media = []*Rule{
	mediaTypeRule("run", 2),
	mediaTypeRule("stream", 3),
	{
		ID: "2.3/media-type-params", Section: "2.3", Level: 2, Keyword: Must,
		Title: "application/json; charset=utf-8 is not refused for its parameter",
		Needs: []Need{NeedStatus},
		// Only the parameter is probed. Type and subtype are case-insensitive
		// in HTTP, so Application/JSON is the same media type too, but §2
		// fixes the spelling a client sends and no conforming client sends
		// another: refusing it harms none, and probing it would cost every
		// conforming runner a further full wait for a body that never comes.
		Probe: func(t *T) {
			if skipWhereEntitlementFirst(t) {
				return
			}
			const label = "application/json; charset=utf-8"
			ex := withheldPost(t, "run", label, "the label §2 has clients send, body withheld")
			switch {
			case stillReading(ex):
				t.Note("after the head, the runner waited for the body (%s), as one accepting the label must", patience(t.Env))
			case skipPastGrace(t, ex):
			case ex.Is(http.StatusBadRequest, "") || ex.Status == http.StatusUnsupportedMediaType:
				t.Fail(ex, "POST run labelled %q was refused %s from the head alone, before any body arrived: §2.3 makes parameters irrelevant to the media type, and this is the label §2 requires clients to send",
					label, ex.Brief())
			case !ex.Answered():
				t.Note("no answer to the head (%v); nothing shows the label was refused", ex.Err)
			default:
				t.Note("answered %s from the head alone, which is not a refusal of the media type", ex.Brief())
			}
		},
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

func mediaTypeRule(verb string, level int) *Rule {
	return &Rule{
		ID: "2.3/media-type-" + verb, Section: "2.3", Level: level, Keyword: Must,
		Title: fmt.Sprintf("%s refuses a body not labelled application/json with 400 bad_request, before reading it", verb),
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			if skipWhereEntitlementFirst(t) {
				return
			}
			for _, l := range nonJSONLabels {
				ex := withheldPost(t, verb, l.label, l.what+"; body withheld")
				switch {
				case ex.Is(http.StatusBadRequest, "bad_request"):
				case skipPastGrace(t, ex):
					return
				case stillReading(ex):
					t.Fail(ex, "POST %s with %s: still reading the body after %s, so it parses before deciding on the media type (§2.3, §4.2: refuse before reading the body at all)",
						verb, l.what, patience(t.Env))
				case !ex.Answered():
					t.Fail(ex, "POST %s with %s got no answer (%v); §2.3 requires 400 bad_request", verb, l.what, ex.Err)
				default:
					t.Fail(ex, "POST %s with %s answered %s; §2.3 requires 400 bad_request", verb, l.what, ex.Brief())
				}
			}
		},
	}
}

// skipWhereEntitlementFirst skips on a runner whose entitlement refusal
// (§4.6 step 2) comes before the media type: it would answer 403 or 503 to
// every probe here, and the order rules judge that.
func skipWhereEntitlementFirst(t *T) bool {
	switch entitlementStance(t.Env) {
	case entRevoked:
		t.Skip("status reports the entitlement revoked: the answer would be §4.6 step 2's 403 not_entitled, ahead of the media type (4.6/entitlement-before-media-type judges it)")
		return true
	case entNever:
		t.Skip("status reports the entitlement unknown and never checked: the answer would be §4.6 step 2's 503 unavailable, ahead of the media type (4.6/entitlement-before-media-type judges it)")
		return true
	}
	return false
}
