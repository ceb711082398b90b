package wire

import (
	"net/http"
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
