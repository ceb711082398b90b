package wire

import (
	"encoding/json"
	"fmt"
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

// MediaTypeOf strips parameters and case from a Content-Type value.
func MediaTypeOf(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return strings.ToLower(strings.TrimSpace(v))
}

// JSON decodes the body, keeping numbers exact. ok is false for a body that
// is not JSON at all.
func (ex *Exchange) JSON() (v any, err error) {
	dec := json.NewDecoder(strings.NewReader(string(ex.Body)))
	dec.UseNumber()
	if err = dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
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
