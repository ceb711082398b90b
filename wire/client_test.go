package wire

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func client(t *testing.T, h http.Handler, o Options) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	assert.NilError(t, err)
	return New(u, o), srv
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8787":               "http://127.0.0.1:8787",
		"http://127.0.0.1:8787/":              "http://127.0.0.1:8787",
		"http://127.0.0.1:8787/postern/v0":    "http://127.0.0.1:8787",
		" https://runner.example/postern/v0/": "https://runner.example",
	} {
		u, err := ParseTarget(in)
		assert.NilError(t, err, in)
		assert.Check(t, is.Equal(u.String(), want))
	}
	for _, bad := range []string{"127.0.0.1:8787", "ftp://x", "http://", "http://x/other", "http://x/?q=1", "::"} {
		_, err := ParseTarget(bad)
		assert.Check(t, err != nil, bad)
	}
}

func TestRedirectIsReportedNotFollowed(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}), Options{})
	ex := c.Do(context.Background(), Get("status"))
	assert.NilError(t, ex.Err)
	assert.Equal(t, ex.Status, http.StatusFound)
	assert.Equal(t, ex.Header.Get("Location"), "/elsewhere")
}

func TestNoTransparentDecompression(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Check(t, is.Equal(r.Header.Get("Accept-Encoding"), ""), "the checker asks for no encoding")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write([]byte("not really gzip"))
	}), Options{})
	ex := c.Do(context.Background(), Get("status"))
	assert.NilError(t, ex.Err)
	assert.Equal(t, string(ex.Body), "not really gzip", "the body is what was sent")
}

func TestBodyCap(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	}), Options{MaxBody: 1000})
	ex := c.Do(context.Background(), Get("status"))
	assert.Check(t, ex.Truncated)
	assert.Equal(t, len(ex.Body), 1000)
}

func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		select { // a runner that never finishes its body
		case <-release:
		case <-r.Context().Done():
		}
	}), Options{Timeout: 200 * time.Millisecond})
	defer close(release)
	start := time.Now()
	ex := c.Do(context.Background(), Get("status"))
	assert.Check(t, time.Since(start) < 2*time.Second)
	assert.Equal(t, ex.Err, ErrNoAnswer)
	assert.Equal(t, ex.Status, 200, "what did arrive is kept as evidence")
	assert.Equal(t, string(ex.Body), "{")
}

func TestSecretsAreRedacted(t *testing.T) {
	var seen string
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization") + "|" + r.Header.Get("X-Api-Key")
	}), Options{Headers: http.Header{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k3y"}}})
	ex := c.Do(context.Background(), Get("status"))
	assert.Equal(t, seen, "Bearer s3cret|k3y", "the runner gets the real values")
	assert.Equal(t, ex.ReqHeader.Get("Authorization"), "[redacted]")
	assert.Equal(t, ex.ReqHeader.Get("X-Api-Key"), "[redacted]")
	assert.Check(t, c.HasHeader("Authorization"))

	ex = c.Do(context.Background(), Request{Method: "GET", Path: Prefix + "status", OmitExtra: true})
	assert.Equal(t, seen, "|", "OmitExtra withholds them")
	assert.Equal(t, ex.ReqHeader.Get("Authorization"), "")
}

func TestWithheldBody(t *testing.T) {
	// A runner deciding on the head answers at once.
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"code":"bad_request","message":"no"}}`))
			return
		}
		_, _ = w.Write([]byte("read it"))
	}), Options{})
	h := http.Header{"Content-Type": {"text/plain"}}
	ex := c.Withheld(context.Background(), Prefix+"run", h, 300000, time.Second, "")
	assert.NilError(t, ex.Err)
	assert.Equal(t, ex.Status, 400)
	assert.Equal(t, ex.ErrorCode(), "bad_request")

	// A runner reading the body first is still waiting when patience ends.
	c2, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 10)
		_, _ = r.Body.Read(buf)
		w.WriteHeader(400)
	}), Options{})
	start := time.Now()
	ex = c2.Withheld(context.Background(), Prefix+"run", h, 300000, 300*time.Millisecond, "")
	assert.Equal(t, ex.Err, ErrNoAnswer)
	assert.Check(t, time.Since(start) < 2*time.Second)
}

func TestAWaitThatGrowsIsWaitedOut(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // waits for the body, which never comes
	}), Options{Timeout: 5 * time.Second})
	asked := 0
	wait := func() time.Duration {
		asked++
		if asked == 1 {
			return 20 * time.Millisecond
		}
		return 150 * time.Millisecond // the runner's answers slowed meanwhile
	}
	ex := c.WithheldFor(context.Background(), Prefix+"run", http.Header{"Content-Type": {"application/json"}}, 300000, wait, "")
	assert.Equal(t, ex.Err, ErrNoAnswer)
	assert.Check(t, ex.Elapsed >= 150*time.Millisecond, "waited %s", ex.Elapsed)
	assert.Check(t, asked >= 2)
}

func TestHostileAnswersNeverPanic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	defer ln.Close()
	answers := []string{
		"garbage\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 999 Weird\r\n\r\n",
		"",
	}
	go func() {
		for _, a := range answers {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(conn).ReadString('\n')
			_, _ = conn.Write([]byte(a))
			conn.Close()
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String())
	c := New(u, Options{Timeout: time.Second})
	for range answers {
		ex := c.Do(context.Background(), Get("status"))
		_ = ex.StatusLine()
		_ = ex.Brief()
		_ = ex.ErrorCode()
	}
}

// TestFromAddress: a request made under FromAddress connects from the
// address given (a second loopback address), and one made without it
// from the one the system picks.
func TestFromAddress(t *testing.T) {
	peers := make(chan string, 2)
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		peers <- host
	}), Options{})
	ex := c.Do(FromAddress(context.Background(), net.IPv4(127, 0, 0, 2)), Get("status"))
	if ex.Err != nil {
		t.Skipf("127.0.0.2 cannot be bound here: %v", ex.Err)
	}
	assert.Check(t, is.Equal(<-peers, "127.0.0.2"))
	assert.NilError(t, c.Do(context.Background(), Get("status")).Err)
	assert.Check(t, is.Equal(<-peers, "127.0.0.1"))
}
