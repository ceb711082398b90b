package wire

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// sseServer writes parts with a flush and a pause between each, then
// either ends or (hold) stays open until the client leaves.
func sseServer(t *testing.T, pause time.Duration, hold bool, parts ...string) *Client {
	release := make(chan struct{})
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, p := range parts {
			if i > 0 {
				time.Sleep(pause)
			}
			_, _ = w.Write([]byte(p))
			w.(http.Flusher).Flush()
		}
		if hold {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}), Options{Timeout: 2 * time.Second})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	return c
}

func TestStreamRecordsArrivalTimes(t *testing.T) {
	parts := []string{"event: start\ndata: {}\n\n", "event: delta\ndata: {\"text\":\"a\"}\n\n", "event: done\ndata: {}\n\n"}
	c := sseServer(t, 150*time.Millisecond, false, parts...)
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	assert.Check(t, !ex.Truncated)
	assert.Assert(t, ex.SSE != nil)
	assert.NilError(t, ex.SSE.Err)
	assert.Equal(t, len(ex.SSE.Events), 3)
	assert.Check(t, is.Equal(string(ex.Body), strings.Join(parts, "")))
	for i := 1; i < 3; i++ {
		gap := ex.SSE.Events[i].At - ex.SSE.Events[i-1].At
		assert.Check(t, gap >= 100*time.Millisecond, "event %d came %s after the one before", i, gap)
	}
	assert.Check(t, ex.SSE.Events[2].At <= ex.Elapsed)
}

func TestStreamByteCap(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(strings.Repeat("event: delta\ndata: {\"text\":\"x\"}\n\n", 300))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}), Options{})
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{MaxBytes: 64 << 10})
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, errors.Is(ex.SSE.Err, ErrStreamTooLong))
	assert.Check(t, len(ex.SSE.Events) > 100)
	for _, ev := range ex.SSE.Events {
		assert.Check(t, ev.Terminated && ev.Name == "delta", "only whole events are kept: %q", ev.Raw)
	}
	assert.Check(t, len(ex.Body) <= KeepTruncated)
	assert.Check(t, c.Retained() <= 2*(64<<10), "retained %d", c.Retained())
}

func TestStreamEventCap(t *testing.T) {
	c := sseServer(t, 0, true, strings.Repeat("data: {}\n\n", 100))
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{MaxEvents: 10})
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, errors.Is(ex.SSE.Err, ErrStreamTooLong))
	assert.Check(t, is.Len(ex.SSE.Events, 10))
}

func TestStreamGiantEvent(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: start\ndata: {}\n\nevent: delta\ndata: \""))
		endlessBody(w, r)
	}), Options{})
	start := time.Now()
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{MaxEvent: 16 << 10})
	assert.Check(t, time.Since(start) < 2*time.Second)
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, errors.Is(ex.SSE.Err, ErrEventTooLarge), "%v", ex.SSE.Err)
	assert.Assert(t, is.Len(ex.SSE.Events, 1))
	assert.Check(t, ex.SSE.Events[0].Terminated, "the event before the giant one was whole")
}

func TestStreamTimeCap(t *testing.T) {
	c := sseServer(t, 0, true, "event: start\ndata: {}\n\n", "event: delta\ndata: {\"te")
	start := time.Now()
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{MaxTime: 300 * time.Millisecond})
	assert.Check(t, time.Since(start) < 2*time.Second)
	assert.Check(t, is.Equal(ex.Err, ErrNoAnswer))
	assert.Check(t, is.Equal(ex.SSE.Err, ErrNoAnswer))
	assert.Check(t, !ex.Truncated)
	assert.Assert(t, is.Len(ex.SSE.Events, 1), "the fragment the deadline cut is dropped")
	assert.Check(t, is.Equal(ex.SSE.Events[0].Name, "start"))
	assert.Check(t, strings.HasSuffix(string(ex.Body), `{"te`), "the bytes read are all evidence")
}

func TestStreamEndingWithoutBlankLine(t *testing.T) {
	c := sseServer(t, 0, false, "event: start\ndata: {}\n\nevent: done\ndata: {}")
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	assert.Assert(t, is.Len(ex.SSE.Events, 2))
	assert.Check(t, !ex.SSE.Events[1].Terminated, "a stream that ends mid-event is the runner's doing")
}

func TestStreamReadsOtherAnswersAsBodies(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":{"code":"bad_request","message":"no"}}`))
	}), Options{})
	ex := c.Stream(context.Background(), PostJSON("stream", "{}"), StreamLimits{})
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.SSE == nil)
	assert.Check(t, is.Equal(ex.ErrorCode(), "bad_request"))
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// readWhole parses body as Stream does, from a reader rather than a
// connection.
func readWhole(body []byte, maxEvent int) SSEStream {
	c := New(mustURL("http://127.0.0.1:1"), Options{BodyBudget: -1})
	ex := &Exchange{}
	_ = c.readStream(ex, bytes.NewReader(body), StreamLimits{MaxBytes: 1 << 30, MaxEvents: len(body) + 1, MaxEvent: maxEvent}, time.Now())
	return *ex.SSE
}

func TestStreamParsesAsParseSSE(t *testing.T) {
	body := []byte("\uFEFF: hi\n\nevent: start\r\ndata: a\r\ndata: b\r\n\r\nid: 1\nretry: 5\nx: y\n\nevent: done\ndata: {}")
	assertSameStream(t, readWhole(body, 1024), ParseSSE(body, 1024))
}

func assertSameStream(t *testing.T, got, want SSEStream) {
	t.Helper()
	for i := range got.Events {
		got.Events[i].At = 0
	}
	assert.Check(t, is.DeepEqual(got.Events, want.Events))
	assert.Check(t, is.DeepEqual(got.Comments, want.Comments))
	assert.Check(t, errors.Is(got.Err, want.Err) || got.Err == want.Err, "%v / %v", got.Err, want.Err)
}
