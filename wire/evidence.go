package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// RequestLine is "GET http://host/postern/v0/status".
func (ex *Exchange) RequestLine() string { return ex.Method + " " + ex.URL }

// StatusLine is "HTTP/1.1 404", or what went wrong instead of an answer.
func (ex *Exchange) StatusLine() string {
	if ex.Status == 0 {
		if ex.Err != nil {
			return "no answer: " + ex.Err.Error()
		}
		return "no answer"
	}
	s := fmt.Sprintf("%s %d", ex.Proto, ex.Status)
	if ex.Err != nil {
		s += " (then: " + ex.Err.Error() + ")"
	}
	return s
}

// Answered reports whether a status line arrived.
func (ex *Exchange) Answered() bool { return ex.Status != 0 }

// MediaType is the response's Content-Type without parameters, lower-cased.
func (ex *Exchange) MediaType() string { return MediaTypeOf(ex.Header.Get("Content-Type")) }

// MediaTypeOf strips parameters and case from a Content-Type value, read
// leniently (protocol.BareMediaType).
func MediaTypeOf(v string) string { return protocol.BareMediaType(v) }

// JSON decodes the body, keeping numbers exact. ok is false for a body that
// is not JSON at all, and for one holding more than MaxJSONValues values,
// which the checker declines to decode (ErrJSONTooLarge).
//
// Decoding is where a body costs most: a MaxBody body of tiny values
// ("[0,0,0,…]") decodes to forty times its size. So the values are counted
// before decoding, and the decoding of large bodies is done a few at a
// time however many probes ask at once (see bigDecodes).
func (ex *Exchange) JSON() (v any, err error) {
	if len(ex.Body) >= MaxJSONValues { // jsonValues counts one a byte at most
		if n := jsonValues(ex.Body); n > MaxJSONValues {
			return nil, fmt.Errorf("%w (%d)", ErrJSONTooLarge, n)
		}
	}
	if len(ex.Body) > bigDecode {
		bigDecodes <- struct{}{}
		defer func() { <-bigDecodes }()
	}
	dec := json.NewDecoder(bytes.NewReader(ex.Body)) // not a string copy: a body may be MaxBody long
	dec.UseNumber()
	if err = dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// Number reads a JSON number as JSON decodes one here (a json.Number), or
// a float64 or int a caller built; false for anything else.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// MaxJSONValues caps the values (objects, arrays, members and elements)
// the checker decodes from one body: each costs some eighty bytes decoded,
// and the documents of this protocol hold a few hundred. A real output of
// the full body cap in values of any ordinary size stays under it.
const MaxJSONValues = 64 << 10

// ErrJSONTooLarge is JSON's error for a body of more than MaxJSONValues values.
var ErrJSONTooLarge = errors.New("the body holds more JSON values than the checker decodes")

// bigDecode is the body size past which decoding waits its turn, and
// bigDecodes holds the one turn. Decoding a large body costs about four
// times its size in buffers that are garbage the moment it ends; one at a
// time bounds that however many probes are in flight, and costs little
// time, for decoding is CPU work on a machine of few cores.
const bigDecode = 64 << 10

var bigDecodes = make(chan struct{}, 1)

// jsonValues counts, cheaply and without allocating, an upper bound on the
// values a JSON text holds: one, plus each '{', '[' and ',' outside strings.
func jsonValues(b []byte) int {
	n, inString, escaped := 1, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ',':
			n++
		}
	}
	return n
}

// Object decodes the body as a JSON object, or returns nil.
func (ex *Exchange) Object() map[string]any {
	v, err := ex.JSON()
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// ErrorCode reads error.code leniently: "" where the body carries none.
func (ex *Exchange) ErrorCode() string {
	m := ex.Object()
	if m == nil {
		return ""
	}
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// ErrorDetail reads error.detail leniently.
func (ex *Exchange) ErrorDetail() any {
	m := ex.Object()
	e, _ := m["error"].(map[string]any)
	return e["detail"]
}

// ErrorMessage reads error.message leniently.
func (ex *Exchange) ErrorMessage() string {
	m := ex.Object()
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// Is reports whether the answer carries status and, where code is not "",
// that error code.
func (ex *Exchange) Is(status int, code string) bool {
	return ex.Status == status && (code == "" || ex.ErrorCode() == code)
}

// Brief is "404 not_found", "200", or the transport failure: the answer in
// the fewest words, for messages.
func (ex *Exchange) Brief() string {
	if !ex.Answered() {
		return ex.StatusLine()
	}
	if c := ex.ErrorCode(); c != "" && ex.Status >= 300 {
		return fmt.Sprintf("%d %s", ex.Status, c)
	}
	return fmt.Sprint(ex.Status)
}

// Excerpt returns at most n bytes of b as printable text.
func Excerpt(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = b[:n]
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.TrimRight(s, "\r\n")
	if cut {
		s += " …"
	}
	return s
}

// FormatHeader renders a header block in a stable order, one "Name: value"
// per line.
func FormatHeader(h http.Header) []string {
	var out []string
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			out = append(out, k+": "+v)
		}
	}
	return out
}

// Reproduction is how to send a request again as the checker sent it, for
// a person who wants to see a finding for themselves: a curl command
// line, or why none is given.
type Reproduction struct {
	// Curl is a POSIX shell command line sending the request as the
	// checker did (method, URL, the headers it set, the body), printing
	// the answer's head and body; "" where curl cannot send it so.
	Curl string
	// Note says why Curl is empty, or what to know before running it: a
	// value redacted from the line, a request that starts the agent.
	Note string
}

// Reproduction limits: a body longer than maxCurlBody makes a line too
// long to read or paste, and curl sends "Expect: 100-continue" before a
// body longer than curlExpectAbove, which the checker never does.
const (
	maxCurlBody     = 8 << 10
	curlExpectAbove = 1024
)

// Reproduce is the curl line that sends ex's request again as the checker
// sent it, under the checker's per-request timeout. Where curl cannot (a
// body announced and withheld, a request timed against a window or
// against other requests, a connection the checker dropped on purpose, a
// body too long for a line), Curl is empty and Note says why: a line that
// would show something else than the finding would mislead. Every value
// the reports redact stays redacted, and Note says which to put back.
func (ex *Exchange) Reproduce(timeout time.Duration) Reproduction {
	switch {
	case ex == nil:
		return Reproduction{}
	case ex.Unreplayable != "":
		return Reproduction{Note: ex.Unreplayable}
	case errors.Is(ex.Err, ErrHungUp):
		return Reproduction{Note: "the checker hung up on purpose before the answer was complete, as a client going away does; curl reads an answer to its end"}
	case len(ex.ReqBody) > maxCurlBody:
		return Reproduction{Note: fmt.Sprintf("the request body is %d bytes, too long for a command line (the JSON report's evidence holds its first 4 KiB)", len(ex.ReqBody))}
	}
	u, err := url.Parse(ex.URL)
	if ex.Method == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return Reproduction{Note: "the request was not recorded whole, so there is nothing to replay"}
	}
	args := []string{"curl", "-sS", "-i"}
	if timeout > 0 {
		args = append(args, "--max-time", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	}
	if u.Scheme == "https" {
		args = append(args, "--http1.1") // the checker speaks HTTP/1.1 only
	}
	if strings.ContainsAny(ex.URL, "[]{}") {
		args = append(args, "--globoff") // the brackets are the URL's, not curl's ranges
	}
	if dotSegments(u.EscapedPath()) {
		args = append(args, "--path-as-is") // sent as the checker sent it, not normalised
	}
	if ex.Method == http.MethodPost && strings.HasSuffix(u.Path, "/"+protocol.Stream) {
		args = append(args, "--no-buffer") // each event as it comes
	}
	body := ex.ReqBody
	hasBody := len(body) > 0
	switch {
	case ex.Method == http.MethodHead:
		args = append(args, "--head")
	case ex.Method == http.MethodGet && !hasBody, ex.Method == http.MethodPost && hasBody:
	default:
		args = append(args, "-X", ex.Method)
	}
	if !hasBody && (ex.Method == http.MethodPost || ex.Method == http.MethodPut || ex.Method == http.MethodPatch) {
		args = append(args, "-H", "Content-Length: 0") // as the checker's client sends an empty body
	}
	var redacted []string
	typed := false
	for _, name := range sortedKeys(ex.ReqHeader) {
		switch http.CanonicalHeaderKey(name) {
		case "Host", "Content-Length", "Connection", "User-Agent", "Transfer-Encoding":
			continue // curl writes these itself, as the checker's client did
		case "Content-Type":
			typed = true
		}
		for _, v := range ex.ReqHeader[name] {
			if !printable(name) || !printable(v) {
				return Reproduction{Note: fmt.Sprintf("the header %s carries bytes a command line cannot show", printableOr(name))}
			}
			if v == redactedValue {
				redacted = append(redacted, name)
			}
			args = append(args, "-H", name+": "+v)
		}
	}
	var pipe string
	if hasBody {
		if !typed {
			args = append(args, "-H", "Content-Type:") // none was sent: curl's default form type is dropped
		}
		if len(body) > curlExpectAbove {
			args = append(args, "-H", "Expect:") // the checker sends the body at once
		}
		if printable(string(body)) && !strings.HasPrefix(string(body), "@") {
			args = append(args, "--data-binary", string(body))
		} else {
			pipe = "printf " + shellQuote(printfFormat(body)) + " | "
			args = append(args, "--data-binary", "@-")
		}
	}
	args = append(args, ex.URL)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	line := pipe + strings.Join(quoted, " ")
	var notes []string
	if len(redacted) > 0 {
		notes = append(notes, fmt.Sprintf("the value of %s is redacted, as in every report: put yours in its place", strings.Join(redacted, ", ")))
	}
	if strings.Contains(line, blottedToken) {
		notes = append(notes, "each token presented is blotted out as "+blottedToken+", as in every report: put the token in its place")
	}
	if ex.Method == http.MethodPost && ex.Status >= 200 && ex.Status < 300 && (strings.HasSuffix(u.Path, "/"+protocol.Run) || strings.HasSuffix(u.Path, "/"+protocol.Stream)) {
		notes = append(notes, "the runner accepted this request and started its agent: sending it again runs the agent again, which may spend money and call its write_tools")
	}
	return Reproduction{Curl: line, Note: strings.Join(notes, "; ")}
}

// redactedValue is what evidence shows for a secret header's value, and
// blottedToken what the distributor check shows for a presented token.
const (
	redactedValue = "[redacted]"
	blottedToken  = "[token]"
)

// dotSegments reports whether a path holds a "." or ".." segment, which
// curl would otherwise resolve before sending.
func dotSegments(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// printable reports whether s is UTF-8 text a command line shows as it
// is: no control characters, no line breaks, no invisible formatting
// (bidirectional controls among them).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func printableOr(s string) string {
	if printable(s) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// printfFormat is b as a printf format that writes exactly b: printable
// ASCII as it is (% and \ escaped), every other byte as a \ooo escape,
// which POSIX printf reads in its format.
func printfFormat(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		switch {
		case c == '%':
			s.WriteString("%%")
		case c == '\\':
			s.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, `\%03o`, c)
		}
	}
	return s.String()
}

// shellQuote is s as one word of a POSIX shell: as it is where it holds
// only characters no shell treats specially, else in single quotes (where
// s holds one, the quoting is closed, the quote escaped, and reopened).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
