package wire

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// gzipServer answers a stream gzip-coded where the request offers gzip:
// flushed after each part (a compressor that is flushed, as a stream's
// must be) or, with hold, only at the end (Express's compression() with
// no res.flush()). A request offering nothing gets the parts as written.
func gzipServer(t *testing.T, pause time.Duration, hold bool, parts ...string) *Client {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		var out interface{ Write([]byte) (int, error) } = w
		flush := func() { w.(http.Flusher).Flush() }
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			defer z.Close()
			out = z
			flush = func() {
				if !hold {
					_ = z.Flush()
					w.(http.Flusher).Flush()
				}
			}
		}
		w.WriteHeader(http.StatusOK)
		for i, p := range parts {
			if i > 0 {
				time.Sleep(pause)
			}
			_, _ = out.Write([]byte(p))
			flush()
		}
	}), Options{Timeout: 5 * time.Second})
	return c
}

var gzipParts = []string{"event: start\r\ndata: {}\r\n\r\n", ": a comment\n\n", "event: delta\ndata: {\"text\":\"a\"}\n\n", "event: done\ndata: {}\n\n"}

// A flushed gzip stream is read decoded, each event timed as it decodes,
// and its bytes are the runner's own: CRLF line ends kept.
func TestStreamDecodesGzipAsItArrives(t *testing.T) {
	c := gzipServer(t, 150*time.Millisecond, false, gzipParts...)
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	assert.Check(t, is.Equal(ex.ReqHeader.Get("Accept-Encoding"), "gzip"))
	assert.Check(t, is.Equal(ex.Coding, "gzip"))
	assert.Check(t, is.Equal(ex.Header.Get("Content-Encoding"), "gzip"))
	assert.Check(t, is.Equal(string(ex.Body), strings.Join(gzipParts, "")))
	assert.Equal(t, len(ex.SSE.Events), 3)
	assert.Check(t, is.Len(ex.SSE.Comments, 1))
	for i := 1; i < 3; i++ {
		gap := ex.SSE.Events[i].At - ex.SSE.Events[i-1].At
		assert.Check(t, gap >= 100*time.Millisecond, "event %d came %s after the one before", i, gap)
	}
}

// A compressor that is never flushed holds every event for a client
// offering gzip: they all decode at the end.
func TestStreamSeesAHeldGzipStreamHeld(t *testing.T) {
	c := gzipServer(t, 150*time.Millisecond, true, gzipParts...)
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	evs := ex.SSE.Events
	assert.Equal(t, len(evs), 3)
	assert.Check(t, evs[2].At-evs[0].At < 50*time.Millisecond, "held events arrived %s apart", evs[2].At-evs[0].At)
	assert.Check(t, evs[0].At >= 400*time.Millisecond, "the first event came at %s", evs[0].At)

	// Asked for no coding, the same runner writes them as they happen.
	r := PostJSON("stream", "{}")
	r.Header.Set("Accept-Encoding", "identity")
	plain := c.Stream(context.Background(), r, StreamLimits{})
	assert.NilError(t, plain.Err)
	assert.Check(t, is.Equal(plain.Coding, ""))
	assert.Check(t, plain.SSE.Events[2].At-plain.SSE.Events[0].At >= 300*time.Millisecond)
}

func TestStreamCodingErrors(t *testing.T) {
	for name, c := range map[string]struct {
		status int
		coding string
		body   []byte
	}{
		"not offered": {http.StatusOK, "br", []byte("\x1b\x00")},
		"corrupt":     {http.StatusOK, "gzip", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xffnot deflate at all")},
		"not gzip":    {http.StatusServiceUnavailable, "gzip", []byte(`{"error":{}}`)},
	} {
		cl, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", c.coding)
			w.WriteHeader(c.status)
			_, _ = w.Write(c.body)
		}), Options{Timeout: 2 * time.Second})
		ex := cl.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
		assert.Check(t, errors.Is(ex.Err, ErrCoding), "%s: %v", name, ex.Err)
		assert.Check(t, ex.Answered(), name)
	}
}

// A refusal to a stream, gzip-coded, is read decoded like the stream.
func TestStreamDecodesAGzipRefusal(t *testing.T) {
	const body = `{"error":{"code":"unavailable","message":"busy","detail":null}}`
	cl, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		_, _ = z.Write([]byte(body))
		_ = z.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(b.Bytes())
	}), Options{Timeout: 2 * time.Second})
	ex := cl.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	assert.Check(t, is.Equal(string(ex.Body), body))
	assert.Check(t, is.Equal(ex.Coding, "gzip"))
}

// A gzip bomb costs what its decoded bytes are capped at: the caps count
// what the parser reads.
func TestStreamGzipBombIsCapped(t *testing.T) {
	var bomb bytes.Buffer
	z, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	line := []byte(strings.Repeat("event: delta\ndata: {\"text\":\"x\"}\n\n", 1000))
	for range 300 { // about 10 MiB decoded, some tens of KiB coded
		_, _ = z.Write(line)
	}
	_ = z.Close()
	cl, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(bomb.Bytes())
	}), Options{Timeout: 5 * time.Second})
	ex := cl.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{MaxBytes: 256 << 10})
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, errors.Is(ex.SSE.Err, ErrStreamTooLong))
	assert.Check(t, cl.Retained() <= 2*(256<<10), "retained %d", cl.Retained())
}
