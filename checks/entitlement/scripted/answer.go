package scripted

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// Kind is what a check gets. The kinds up to Refuse are the ones a script
// sets with Distributor.Answer; the rest are the distributor's own answers,
// which only appear in the request log.
type Kind int

// The kinds a script may set.
const (
	// Unscripted is a token with no script: it is answered 404 not_found,
	// byte for byte as an unknown token is (§5.5). Setting it clears a
	// token's script.
	Unscripted Kind = iota
	// Active is a well-formed check answer in state active (§5.3).
	Active
	// Revoked is a well-formed check answer in state revoked (§5.3, §5.4).
	Revoked
	// NotFound is the 404 not_found a distributor gives a buyer it will not
	// vouch for (§5.5): an answer, not an outage (§5.7.4).
	NotFound
	// ServerError is a 5xx, one of the ways a distributor is unreachable
	// (§5.7).
	ServerError
	// Invalid is a 200 whose body is not a check answer, another way of
	// being unreachable (§5.7).
	Invalid
	// OtherAgent is a well-formed active answer whose agent_id is not the
	// identifier the request addressed, which a runner should count as a
	// failed check (§5.3).
	OtherAgent
	// Hang sends nothing until the client gives up or the distributor is
	// closed: a timeout, on the client's own clock (§5.7).
	Hang
	// Refuse reads the request and then resets the connection without a
	// byte of answer: a transport failure (§5.7). The listener itself goes
	// on accepting, because which script applies is known only once the
	// request's token has been read, and other runners share the port. A
	// client that had reused a kept-alive connection sees the reset as a
	// stale connection, and net/http's Transport then retries a GET once on
	// a fresh one, so one check may show in the log as two requests.
	Refuse
)

// The distributor's own answers, recorded in the log and never scripted.
const (
	// NoRoute is a request that addresses no check: a path with more or
	// fewer than two segments after entitlements/, an empty segment, a path
	// outside the route, or a method other than GET or HEAD. It is answered
	// 404 not_found; no identifier could have matched, so the answer says
	// nothing about the catalogue (§5.3.1).
	NoRoute Kind = iota + 100
	// BadID is a request whose two segments do not form an identifier under
	// §1.5's grammar (a percent-encoded octet included). It is answered 400
	// bad_request from the request string alone (§5.3.1).
	BadID
)

var kindNames = map[Kind]string{
	Unscripted: "unscripted", Active: "active", Revoked: "revoked",
	NotFound: "not_found", ServerError: "server_error", Invalid: "invalid",
	OtherAgent: "other_agent", Hang: "hang", Refuse: "refuse",
	NoRoute: "no_route", BadID: "bad_id",
}

// String names the kind for logs and test failures.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// scriptable reports whether a script may set k.
func (k Kind) scriptable() bool { return k >= Unscripted && k <= Refuse }

// Answer is one token's script: what every check presented with that token
// gets until the script is changed. Only the members its Kind reads matter.
type Answer struct {
	Kind Kind

	// For Active, Revoked and OtherAgent: the members of §5.3's answer.
	//
	// Postern is the version carried; "" sends protocol.Version.
	Postern string
	// AgentID overrides the echo of the addressed identifier; "" echoes it
	// (Active, Revoked) or names a different, valid identifier (OtherAgent).
	AgentID string
	// CheckedAt is the distributor's read time. Zero means a read made as
	// the request is answered, less Age: the shared clock's now, or an older
	// read served from a cache (§5.3 counts checked_at from the read, not
	// from the answer). A non-zero CheckedAt is sent as it is, whenever the
	// check comes. Either way it goes out as RFC 3339 in UTC, to the second.
	CheckedAt time.Time
	Age       time.Duration
	// Cached, with a non-zero CheckedAt, serves the answer from a cache
	// the distributor refreshes once each stale_after_seconds, its first
	// read at CheckedAt: checked_at is the latest refresh at or before the
	// check. A runner asking again within a window is given the window it
	// holds; one asking past it, the next.
	Cached bool
	// StaleAfterSeconds and GraceSeconds are sent as they are, 0 included
	// (§5.3, §5.7.1: a grace of 0 means stop at the window).
	StaleAfterSeconds int
	GraceSeconds      int
	// AccessEndsAt is sent when non-zero (§5.3's optional date).
	AccessEndsAt time.Time
	// Omit names members left out of the body, a REQUIRED one included:
	// the answer is then no check answer, and a runner counts it as
	// unreachable (§5.3, §5.7).
	Omit []string

	// For ServerError: the status, 503 when 0; a 503 carries the error
	// envelope with code unavailable (§2.1), any other 5xx a gateway's
	// plain-text page. For ServerError and Invalid: Body and ContentType
	// replace the default body and its label when set.
	Status      int
	Body        []byte
	ContentType string
}

// Stamp is how the distributor writes a time: protocol's form, to the
// second (the walk's runners echo the text, and their own receipt times are
// whole seconds too). Request.Sent.CheckedAt holds the instant the text
// names.
func Stamp(t time.Time) string { return protocol.Stamp(t.Truncate(time.Second)) }

// Each error body the distributor sends is a constant: §5.5 wants the
// not_found body identical whatever was missed, and §5.3.1 wants
// bad_request computed from nothing but the request string.
var (
	notFoundBody    = protocol.Envelope("not_found", "No such agent.", nil)
	badRequestBody  = protocol.Envelope("bad_request", "The path does not name an agent identifier.", nil)
	unavailableBody = protocol.Envelope("unavailable", "The distributor is not available; try again later.", nil)
	// invalidBody is JSON that claims active and is not a check answer: the
	// members a runner must read to honour it are missing, so a client that
	// looks only at state is the one it catches.
	invalidBody = []byte(`{"postern":"0.1","state":"active"}`)
)

// response is what the distributor will do with one request, decided as it
// arrives.
type response struct {
	status int
	ctype  string
	body   []byte
	hang   bool
	reset  bool
}

// otherAgent is an identifier, valid under §1.5, that is not addressed.
func otherAgent(addressed string) string {
	if s := addressed + "-other"; len(s) <= protocol.MaxIDLen {
		return s
	}
	return "other/agent"
}

// resolve turns a script into the response for a check addressed to
// addressed, at now on the shared clock, and fills in sent with the
// members as they went out.
func (a Answer) resolve(addressed string, now time.Time) (response, Answer) {
	sent := a
	switch a.Kind {
	case Active, Revoked, OtherAgent:
		state := protocol.StateActive
		if a.Kind == Revoked {
			state = protocol.StateRevoked
		}
		if sent.Postern == "" {
			sent.Postern = protocol.Version
		}
		if sent.AgentID == "" {
			sent.AgentID = addressed
			if a.Kind == OtherAgent {
				sent.AgentID = otherAgent(addressed)
			}
		}
		if sent.CheckedAt.IsZero() {
			sent.CheckedAt = now.Add(-a.Age)
		} else if period := time.Duration(a.StaleAfterSeconds) * time.Second; a.Cached && period > 0 && now.After(sent.CheckedAt) {
			sent.CheckedAt = sent.CheckedAt.Add(now.Sub(sent.CheckedAt) / period * period)
		}
		sent.CheckedAt = sent.CheckedAt.UTC().Truncate(time.Second)
		body := protocol.CheckAnswer{
			Postern: sent.Postern, State: state, AgentID: sent.AgentID,
			CheckedAt:         Stamp(sent.CheckedAt),
			StaleAfterSeconds: a.StaleAfterSeconds, GraceSeconds: a.GraceSeconds,
		}
		if !a.AccessEndsAt.IsZero() {
			sent.AccessEndsAt = a.AccessEndsAt.UTC().Truncate(time.Second)
			body.AccessEndsAt = Stamp(sent.AccessEndsAt)
		}
		return response{status: http.StatusOK, ctype: protocol.JSONUTF8, body: body.Encode(a.Omit...)}, sent
	case NotFound:
		return notFound(), sent
	case ServerError:
		if sent.Status == 0 {
			sent.Status = http.StatusServiceUnavailable
		}
		r := response{status: sent.Status, ctype: protocol.JSONUTF8, body: unavailableBody}
		if sent.Status != http.StatusServiceUnavailable {
			r.ctype, r.body = "text/plain; charset=utf-8", []byte(http.StatusText(sent.Status)+"\n")
		}
		return override(r, a), sent
	case Invalid:
		return override(response{status: http.StatusOK, ctype: protocol.JSONUTF8, body: invalidBody}, a), sent
	case Hang:
		return response{hang: true}, sent
	case Refuse:
		return response{reset: true}, sent
	}
	return notFound(), sent
}

func override(r response, a Answer) response {
	if a.Body != nil {
		r.body = a.Body
	}
	if a.ContentType != "" {
		r.ctype = a.ContentType
	}
	return r
}

func notFound() response {
	return response{status: http.StatusNotFound, ctype: protocol.JSONUTF8, body: notFoundBody}
}
