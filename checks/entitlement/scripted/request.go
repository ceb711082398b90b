package scripted

import (
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The routing, the grammar and the bodies are protocol's (§5's wire forms,
// shared with the reference distributor); what is the puppet's own is the
// log of what came and the scripts of what goes.

// Caps on what one log entry keeps of a request, so a hostile runner's
// headers cannot grow the log past LogCap times a few KiB. Nothing a
// conforming check sends comes near them: its path is at most the route and
// 128 characters, its one Authorization value a scheme and a token.
const (
	maxLoggedTarget = 1024
	maxLoggedAuth   = 1024
)

// Request is one request the distributor received, as the harness rules
// need to judge it: when it came, what it asked for, with which credential,
// and what it was answered. The copies Log, All, Next and Await return share
// their slices with the log: read them, do not change them.
type Request struct {
	// Seq numbers the requests across the distributor, from 1; N numbers
	// Token's own, from 1 (requests carrying no known token count under "").
	Seq, N int
	// At is the shared clock's time on arrival; Real is the wall clock's.
	At, Real time.Time
	// Remote is the client's address.
	Remote string

	Method string
	// Target is the request target exactly as sent (r.RequestURI), query
	// included, so percent-encoding stays visible (§5.3.1). TargetCut says
	// it was longer than the log keeps and was cut.
	Target    string
	TargetCut bool
	// Owner and Name are the raw, undecoded segments of a path with exactly
	// two segments after the route, grammar or not; "" otherwise.
	Owner, Name string

	// Authorization holds the request's Authorization values as sent (cut
	// to a total of 1 KiB). Token is the token the distributor credited the
	// request to: one NewToken issued, presented as a bearer credential
	// (scheme matched without regard to case, as HTTP allows), or "".
	Authorization []string
	Token         string

	// Kind is what the request got; Sent is the script that answered it
	// with every default filled in as it went out (CheckedAt, AgentID,
	// Postern, Status; Body left nil), or the zero Answer for the
	// distributor's own answers. Status and Body are the response as sent;
	// Status is 0 for Hang and Refuse, which send none.
	Kind   Kind
	Sent   Answer
	Status int
	Body   []byte
}

// Windowed reports whether the request got an answer a runner holds by
// its window and grace: active or revoked, whole, for the agent it
// addressed (§5.3). Its Sent.CheckedAt is the checked_at it carried.
func (r Request) Windowed() bool {
	return (r.Kind == Active || r.Kind == Revoked) && len(r.Sent.Omit) == 0 && r.Sent.AgentID == r.Addressed()
}

// WindowEnds is checked_at + stale_after_seconds of a Windowed answer.
func (r Request) WindowEnds() time.Time {
	return r.Sent.CheckedAt.Add(time.Duration(r.Sent.StaleAfterSeconds) * time.Second)
}

// GraceEnds is WindowEnds + grace_seconds.
func (r Request) GraceEnds() time.Time {
	return r.WindowEnds().Add(time.Duration(r.Sent.GraceSeconds) * time.Second)
}

// Addressed is the identifier the request's path addresses, owner/name as
// the two segments were sent, or "" for a path that is not two segments.
func (r Request) Addressed() string {
	if r.Owner == "" {
		return ""
	}
	return r.Owner + "/" + r.Name
}

// Path is the path of the request target, without its query (and, for an
// absolute-form target, without its scheme and authority).
func (r Request) Path() string { return protocol.TargetPath(r.Target) }

// TwoSegments reports whether the path is exactly the route and two
// non-empty segments, with no percent-encoding anywhere (§5.3.1). The query,
// if any, is not judged here; the grammar of the segments is ValidID's.
func (r Request) TwoSegments() bool {
	if r.TargetCut {
		return false
	}
	p := r.Path()
	_, a := protocol.Address(p, protocol.EntitlementsRoute)
	return a != protocol.NoRoute && !strings.ContainsRune(p, '%')
}

// ValidID reports whether the path addresses an identifier valid under
// §1.5's grammar and length bound.
func (r Request) ValidID() bool { return r.Owner != "" && protocol.ValidAgentID(r.Addressed()) }

// Bearer reads the request's credential the way §5.2 says a runner presents
// it: exactly one Authorization value, "Bearer", one space, and a token of
// RFC 6750's token68 characters. Anything else (another scheme, a lower-case
// scheme, two spaces, two values, an empty token) is ok == false, even where
// the distributor still credited the request to a token.
func (r Request) Bearer() (token string, ok bool) {
	if len(r.Authorization) != 1 {
		return "", false
	}
	tok, ok := strings.CutPrefix(r.Authorization[0], "Bearer ")
	if !ok || !token68(tok) {
		return "", false
	}
	return tok, true
}

// token68 is RFC 7235's token68: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
// / "+" / "/" ) *"=".
func token68(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~+/", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// cut keeps at most n bytes of s, and says whether it dropped any.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	return s[:n], true
}
