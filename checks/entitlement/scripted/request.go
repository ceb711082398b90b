package scripted

import (
	"strings"
	"time"
)

// Route is the path prefix of §5.3's check; the identifier's two segments
// follow it.
const Route = "/postern/v0/entitlements/"

// maxIDLen is §1.5's ceiling on an identifier's length.
const maxIDLen = 128

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
func (r Request) Path() string { return originPath(r.Target) }

// TwoSegments reports whether the path is exactly the route and two
// non-empty segments, with no percent-encoding anywhere (§5.3.1). The query,
// if any, is not judged here; the grammar of the segments is ValidID's.
func (r Request) TwoSegments() bool {
	if r.TargetCut {
		return false
	}
	p := r.Path()
	if strings.ContainsRune(p, '%') {
		return false
	}
	owner, name, ok := twoSegments(p)
	return ok && owner != "" && name != ""
}

// ValidID reports whether the path addresses an identifier valid under
// §1.5's grammar and length bound.
func (r Request) ValidID() bool { return r.Owner != "" && ValidAgentID(r.Addressed()) }

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

// credential is the token a set of Authorization values carries, read as
// leniently as HTTP lets a server read it: one value, a bearer scheme in any
// case, and the rest after the separating spaces. "" where there is none.
func credential(values []string) string {
	if len(values) != 1 {
		return ""
	}
	scheme, rest, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimLeft(rest, " ")
}

// ValidAgentID reports whether s is an agent identifier: §1.5's grammar (two
// parts of lower-case letters and digits, with - and . allowed inside but
// not at either end) and at most 128 characters. Nothing is normalised.
func ValidAgentID(s string) bool {
	if len(s) > maxIDLen {
		return false
	}
	owner, name, ok := strings.Cut(s, "/")
	return ok && validPart(owner) && validPart(name)
}

func validPart(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z':
		case (c == '-' || c == '.') && i > 0 && i < len(p)-1:
		default:
			return false
		}
	}
	return true
}

// twoSegments splits a raw path under the route into its two segments, ok
// false where the path is not under the route or has another count. No
// decoding: %2F is three octets of one segment, never a separator (§5.3.1).
func twoSegments(path string) (owner, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, Route)
	if !ok {
		return "", "", false
	}
	owner, name, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") {
		return "", "", false
	}
	return owner, name, true
}

// originPath is the path of a request target: an origin-form target as it
// is, an absolute-form one from the slash after its authority, and "" for
// anything else ("*", an authority alone).
func originPath(target string) string {
	if strings.HasPrefix(target, "/") {
		p, _, _ := strings.Cut(target, "?")
		return p
	}
	if _, rest, ok := strings.Cut(target, "://"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			p, _, _ := strings.Cut(rest[i:], "?")
			return p
		}
	}
	return ""
}

// cut keeps at most n bytes of s, and says whether it dropped any.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	return s[:n], true
}
