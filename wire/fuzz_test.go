package wire

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseSSE: no stream, however broken, makes the strict reader panic or
// return more events than blank-line-separated chunks.
func FuzzParseSSE(f *testing.F) {
	for _, seed := range []string{
		"event: start\ndata: {}\n\n",
		"\ufeff: c\r\n\r\nevent:done\rdata:x\r\r",
		"data\n\ndata:\n\nid\nretry:\n\n",
		"event: a\ndata: b",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := ParseSSE(body, 4096)
		if len(s.Events) > len(body)/2+1 {
			t.Fatalf("%d events from %d bytes", len(s.Events), len(body))
		}
	})
}

// FuzzExchangeReaders: the lenient readers every rule uses on a runner's
// body never panic.
func FuzzExchangeReaders(f *testing.F) {
	for _, seed := range []string{`{"error":{"code":"x","message":"m","detail":{}}}`, `[]`, `{"error":7}`, `{`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ex := &Exchange{Status: 400, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		_, _ = ex.JSON()
		_ = ex.Object()
		_ = ex.ErrorCode()
		_ = ex.ErrorMessage()
		_ = ex.ErrorDetail()
		_ = ex.Brief()
		_ = Excerpt(body, 40)
	})
}

// FuzzStreamMatchesParseSSE: reading a stream as it arrives (Stream) and
// parsing it whole (ParseSSE) give the same events, and the lines of an
// event split as the format's three line ends say.
func FuzzStreamMatchesParseSSE(f *testing.F) {
	for _, seed := range []string{
		"event: start\ndata: {}\n\n",
		"\ufeff: c\r\n\r\nevent:done\rdata:x\r\r",
		"data: a\r\n\ndata: b\n\r\ndata: c",
		"data: " + strings.Repeat("x", 300) + "\n\ndata: y\n\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := ParseSSE(body, 256)
		got := readWhole(body, 256)
		for i := range got.Events {
			got.Events[i].At = 0
		}
		if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Comments, want.Comments) || !errors.Is(got.Err, want.Err) {
			t.Fatalf("Stream and ParseSSE differ on %q:\n%+v\n%+v", body, got, want)
		}
		var lines []string
		forEachLine(string(body), func(l string) { lines = append(lines, l) })
		s := strings.ReplaceAll(strings.ReplaceAll(string(body), "\r\n", "\n"), "\r", "\n")
		if split := strings.Split(s, "\n"); !reflect.DeepEqual(lines, split) {
			t.Fatalf("lines of %q: %q, want %q", body, lines, split)
		}
	})
}
