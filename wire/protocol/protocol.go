// Package protocol holds the facts of Postern 0.1 that both sides of the
// wire need: the path prefix, the verbs and the level each needs, the error
// codes with their HTTP statuses and sides, and how a Content-Type is read.
// The checker and the bundled reference runner read them from here, so a
// fact is written once.
package protocol

import (
	"mime"
	"strings"
)

// Version is the protocol version this checker speaks.
const Version = "0.1"

// Prefix is the path prefix every verb lives under (§2).
const Prefix = "/postern/v0/"

// The four verbs (§4).
const (
	Describe = "describe"
	Status   = "status"
	Run      = "run"
	Stream   = "stream"
)

// Verbs are the four verbs in the order §4 defines them.
var Verbs = []string{Describe, Run, Stream, Status}

// verbLevel is §3's table: the lowest level that serves each verb.
var verbLevel = map[string]int{Describe: 1, Status: 1, Run: 2, Stream: 3}

// LevelOf is the lowest conformance level that serves verb (§3), or 0 for a
// string that is not a verb.
func LevelOf(verb string) int { return verbLevel[verb] }

// IsVerb reports whether v is one of the four verbs.
func IsVerb(v string) bool { return verbLevel[v] != 0 }

// Posts reports whether verb is called with POST (run, stream) rather than
// GET (describe, status).
func Posts(verb string) bool { return verb == Run || verb == Stream }

// Path is the path of verb under the prefix.
func Path(verb string) string { return Prefix + verb }

// Side says which half of the protocol may emit an error code (§2.1).
type Side int

// The sides of §2.1's table.
const (
	Runner      Side = 1 << iota // R
	Distributor                  // D
)

// Code is one row of §2.1's table of error codes.
type Code struct {
	Name   string
	Status int
	Sides  Side
}

// Codes is §2.1's table.
var Codes = []Code{
	{"bad_request", 400, Runner | Distributor},
	{"unauthorized", 401, Runner},
	{"not_found", 404, Runner | Distributor},
	{"not_entitled", 403, Runner},
	{"idempotency_conflict", 409, Runner},
	{"withdrawn", 410, Distributor},
	{"missing_credential", 424, Runner},
	{"agent_error", 500, Runner},
	{"not_implemented", 501, Runner},
	{"unavailable", 503, Runner | Distributor},
	{"run_timeout", 504, Runner},
}

// LookupCode returns the row for name, and false for a code §2.1 does not
// define.
func LookupCode(name string) (Code, bool) {
	for _, c := range Codes {
		if c.Name == name {
			return c, true
		}
	}
	return Code{}, false
}

// StatusOf is the HTTP status §2.1 gives code, or 0 for an undefined code.
func StatusOf(code string) int {
	c, _ := LookupCode(code)
	return c.Status
}

// JSON is the media type of every request and response body but a stream's
// (§2); EventStream is a stream's (§4.3).
const (
	JSON        = "application/json"
	JSONUTF8    = "application/json; charset=utf-8"
	EventStream = "text/event-stream"
)

// MediaType is a Content-Type value's media type, parameters dropped and
// lower-cased: "Application/JSON; charset=utf-8" is "application/json". A
// value that does not parse yields "" (it names no media type at all).
func MediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// BareMediaType is MediaType for reading a response's label leniently: it
// keeps whatever stands before the first ";", lower-cased and trimmed, even
// where the parameters do not parse.
func BareMediaType(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return strings.ToLower(strings.TrimSpace(contentType))
}

// IsJSON reports whether a request so labelled must be read as JSON: its
// media type is application/json, whatever its parameters (§2.3).
func IsJSON(contentType string) bool { return MediaType(contentType) == JSON }
