package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
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
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, k+": "+v)
		}
	}
	return out
}
