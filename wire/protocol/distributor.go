package protocol

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// The distributor's side of the wire (§5), written once for every party
// that speaks it: the checker's scripted distributor, the reference
// distributor in fixtures/distributor, and the rules of checks/distributor
// that judge a real one.

// The two distributor routes (§5.3, §5.6); an identifier's two raw
// segments follow each.
const (
	EntitlementsRoute = Prefix + "entitlements/"
	BundlesRoute      = Prefix + "bundles/"
	// VersionsRoute is where §8's Sigrix profile serves a version answer.
	VersionsRoute = Prefix + "versions/"
)

// The two states a check answers (§5.3). Nothing else is a state.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
)

// MaxIDLen is §1.5's ceiling on an identifier's length.
const MaxIDLen = 128

// ValidAgentID reports whether s is an agent identifier: §1.5's grammar (two
// parts of lower-case letters and digits, with - and . allowed inside but not
// at either end) and at most MaxIDLen characters. Nothing is normalised.
func ValidAgentID(s string) bool {
	if len(s) > MaxIDLen {
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

// Addressing is what a request path under a distributor route addresses
// (§5.3.1).
type Addressing int

// The three answers to "what does this path address?".
const (
	// NoRoute: not exactly two non-empty segments after the route (or not
	// under it at all): 404, since no identifier could match.
	NoRoute Addressing = iota
	// BadID: two segments that do not form an identifier under §1.5's
	// grammar, a percent-encoded octet included: 400 bad_request, computed
	// from the string alone.
	BadID
	// ID: two raw segments forming a valid identifier.
	ID
)

// Address reads a raw request path (as sent: never decoded) under route.
// %2F is three octets of one segment, never a separator, and any
// percent-encoding makes the identifier invalid: §1.5's grammar needs none.
func Address(rawPath, route string) (id string, a Addressing) {
	rest, ok := strings.CutPrefix(rawPath, route)
	if !ok {
		return "", NoRoute
	}
	owner, name, ok := strings.Cut(rest, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", NoRoute
	}
	id = owner + "/" + name
	if !ValidAgentID(id) {
		return id, BadID
	}
	return id, ID
}

// CheckAnswer is §5.3's answer, members in the order the section lists
// them. AccessEndsAt is the one OPTIONAL member.
type CheckAnswer struct {
	Postern           string `json:"postern"`
	State             string `json:"state"`
	AgentID           string `json:"agent_id"`
	CheckedAt         string `json:"checked_at"`
	StaleAfterSeconds int    `json:"stale_after_seconds"`
	GraceSeconds      int    `json:"grace_seconds"`
	AccessEndsAt      string `json:"access_ends_at,omitempty"`
}

// Encode is the answer's body as JSON, the members named in omit left out:
// a fault or a script may drop a REQUIRED one, and the body is then no
// check answer (§5.3).
func (a CheckAnswer) Encode(omit ...string) []byte {
	b, _ := json.Marshal(a)
	if len(omit) == 0 {
		return b
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range omit {
		delete(m, k)
	}
	b, _ = json.Marshal(m)
	return b
}

// BearerToken is the token a request's Authorization values present, read
// as leniently as HTTP lets a server read one: a single value, the Bearer
// scheme in any case, and what follows the separating spaces. "" where
// there is none. (How strictly a runner must write it is §5.2's business,
// judged elsewhere.)
func BearerToken(values []string) string {
	if len(values) != 1 {
		return ""
	}
	scheme, rest, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimLeft(rest, " ")
}

// TargetPath is the path of a request target exactly as sent (never
// decoded, so §5.3.1's %2F stays three octets): an origin-form target
// without its query, an absolute-form one from the slash after its
// authority, and "" for anything else ("*", an authority alone).
func TargetPath(target string) string {
	if !strings.HasPrefix(target, "/") {
		_, rest, ok := strings.Cut(target, "://")
		i := strings.IndexByte(rest, '/')
		if !ok || i < 0 {
			return ""
		}
		target = rest[i:]
	}
	p, _, _ := strings.Cut(target, "?")
	return p
}

// Stamp writes a time as the distributors here write one: RFC 3339 in UTC,
// to the millisecond where there is a fraction.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.999Z07:00") }

// ParseStamp reads an RFC 3339 timestamp as the RFC lets one be written:
// fraction or not, T and Z in either case, and a leap second (read as the
// second before it, which Go's time cannot hold). ok is false for anything
// else (a missing offset, a space for the T). Every party here reads a
// stamp with it: the checker's rules and the reference runner's client.
func ParseStamp(s string) (time.Time, bool) {
	if !rfc3339.MatchString(s) {
		return time.Time{}, false
	}
	s = strings.ToUpper(s)
	if s[17:19] == "60" {
		s = s[:17] + "59" + s[19:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`)

// Envelope is a §2.1 error body: one root member, error, holding code,
// message and detail (nil is sent as null).
func Envelope(code, message string, detail any) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": message, "detail": detail}})
	return b
}

// IsDistributorCode reports whether §2.1's table lets a distributor emit
// code, and at which status.
func IsDistributorCode(code string) (status int, ok bool) {
	c, found := LookupCode(code)
	return c.Status, found && c.Sides&Distributor != 0
}

// ReprDigest is an RFC 9530 Repr-Digest field value for body: the SHA-256
// as a structured-field byte sequence.
func ReprDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// ParseReprDigest reads a Repr-Digest value as an RFC 8941 dictionary of
// byte sequences, strictly enough to tell a well-formed field from the RFC
// 3230 form it replaced, and returns its members by algorithm. ok is false
// for a value that is not such a dictionary.
func ParseReprDigest(v string) (members map[string][]byte, ok bool) {
	members = map[string][]byte{}
	for _, member := range strings.Split(v, ",") {
		key, val, has := strings.Cut(strings.TrimSpace(member), "=")
		if i := strings.IndexByte(val, ';'); i >= 0 { // parameters follow the item
			val = val[:i]
		}
		if !has || key == "" || key != strings.ToLower(key) || len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return nil, false
		}
		b, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil {
			return nil, false
		}
		members[key] = b
	}
	return members, true
}

// DigestOf is body's digest under an algorithm RFC 9530 registers as
// active (sha-256, sha-512), or nil for any other.
func DigestOf(alg string, body []byte) []byte {
	switch alg {
	case "sha-256":
		sum := sha256.Sum256(body)
		return sum[:]
	case "sha-512":
		sum := sha512.Sum512(body)
		return sum[:]
	}
	return nil
}

// PluginSchema is the $schema a bundle's root plugin.json carries (§6).
const PluginSchema = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"

// The Sigrix profile's fixed values (§8).
const (
	SigrixNamespace    = "org.sigrix"
	SigrixStaleSeconds = 60
	SigrixGraceSeconds = 86400
	SigrixTokenBytes   = 32
)
