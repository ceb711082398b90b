package wire

// What a hostile runner can cost the client, one bound at a time: the
// body budget, the excerpt of a cut body, the header cap, the two kinds of
// deadline, and the classes of transport failure.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

var xs = []byte(strings.Repeat("x", 32<<10))

// endlessBody writes a body that never ends, from a fixed buffer.
func endlessBody(w http.ResponseWriter, r *http.Request) {
	for r.Context().Err() == nil {
		if _, err := w.Write(xs); err != nil {
			return
		}
	}
}

func TestCutBodyKeepsAnExcerpt(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(endlessBody), Options{})
	ex := c.Do(context.Background(), Get("status"))
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, is.Equal(ex.Cap, int64(DefaultMaxBody)))
	assert.Check(t, is.Len(ex.Body, KeepTruncated))
	assert.Check(t, c.Retained() < KeepTruncated+1024, "what was read past the excerpt is given back (the header is kept): %d", c.Retained())
}

func TestBodyAtExactlyTheCapIsWhole(t *testing.T) {
	const max = 10000
	for _, chunked := range []bool{false, true} {
		c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !chunked {
				w.Header().Set("Content-Length", fmt.Sprint(max))
			}
			_, _ = w.Write(xs[:max/2])
			w.(http.Flusher).Flush()
			_, _ = w.Write(xs[:max/2])
		}), Options{MaxBody: max})
		ex := c.Do(context.Background(), Get("status"))
		assert.NilError(t, ex.Err)
		assert.Check(t, !ex.Truncated, "chunked=%v", chunked)
		assert.Check(t, is.Len(ex.Body, max), "chunked=%v", chunked)
		assert.Check(t, is.Equal(cap(ex.Body), max), "the body is held in a slice of its own size")
	}
}

func TestBudgetIsSharedByEveryBody(t *testing.T) {
	const body = 200 << 10
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("y", body)))
	}), Options{MaxBody: 256 << 10, BodyBudget: 1 << 20})
	var whole, cut int
	for i := 0; i < 12; i++ {
		ex := c.Do(context.Background(), Get("status"))
		assert.NilError(t, ex.Err)
		if ex.Truncated {
			cut++
			assert.Check(t, is.Equal(ex.Cap, int64(MinBody)), "once the budget is spent a body gets the floor")
			assert.Check(t, is.Len(ex.Body, KeepTruncated))
		} else {
			whole++
			assert.Check(t, is.Len(ex.Body, body))
		}
	}
	assert.Check(t, is.Equal(whole, 5), "1 MiB holds five bodies of 200 KiB")
	assert.Check(t, is.Equal(cut, 7))
	assert.Check(t, c.Retained() <= 1<<20+int64(cut)*KeepTruncated, "retained %d", c.Retained())
}

func TestBudgetBoundsConcurrentReads(t *testing.T) {
	// Sixteen endless bodies read at once reserve no more than the budget
	// between them, past the floors.
	const budget = 2 << 20
	c, _ := client(t, http.HandlerFunc(endlessBody), Options{BodyBudget: budget})
	var wg sync.WaitGroup
	caps := make([]int64, 16)
	for i := range caps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := c.Do(context.Background(), Get("status"))
			caps[i] = ex.Cap
		}()
	}
	wg.Wait()
	for _, n := range caps {
		assert.Check(t, n >= MinBody, "every read gets at least the floor")
	}
	assert.Check(t, c.budget.peak <= budget+16*MinBody, "at most %d held at once", c.budget.peak)
	assert.Check(t, c.Retained() <= 16*(KeepTruncated+1024), "%d", c.Retained())
}

func TestNoBudget(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(endlessBody), Options{BodyBudget: -1, MaxBody: 100 << 10})
	for i := 0; i < 3; i++ {
		ex := c.Do(context.Background(), Get("status"))
		assert.Check(t, is.Equal(ex.Cap, int64(100<<10)))
	}
	assert.Check(t, is.Equal(c.Retained(), int64(0)))
}

// hang answers nothing until the client goes away or release is called
// (deferred by the test, so it runs before the server's Close, which waits
// for handlers: one whose body is unread is not told the client left).
func hang() (http.Handler, func()) {
	release := make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}), func() { close(release) }
}

func TestOwnDeadlineAndRunDeadlineDiffer(t *testing.T) {
	h, release := hang()
	slow, _ := client(t, h, Options{Timeout: 5 * time.Second})
	fast, _ := client(t, h, Options{Timeout: 100 * time.Millisecond})
	defer release()

	ex := fast.Do(context.Background(), Get("status"))
	assert.Check(t, is.Equal(ex.Err, ErrNoAnswer), "the request's own deadline")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	ex = slow.Do(ctx, Get("status"))
	assert.Check(t, is.Equal(ex.Err, ErrRunDeadline), "the run's deadline: %v", ex.Err)
	assert.Check(t, time.Since(start) < 3*time.Second)

	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	ex = slow.Do(cancelled, Get("status"))
	assert.Check(t, is.Equal(ex.Err, ErrRunDeadline), "a cancelled run sends nothing: %v", ex.Err)

	ex = slow.Stream(ctx, PostJSON("stream", "{}"), StreamLimits{})
	assert.Check(t, is.Equal(ex.Err, ErrRunDeadline))
}

func TestWithheldEndsWithTheRun(t *testing.T) {
	h, release := hang()
	c, _ := client(t, h, Options{Timeout: 5 * time.Second})
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	ex := c.Withheld(ctx, Prefix+"run", nil, 300000, 5*time.Second, "")
	assert.Check(t, time.Since(start) < 3*time.Second, "a cancelled run closes the raw connection; took %s", time.Since(start))
	assert.Check(t, is.Equal(ex.Err, ErrRunDeadline), "%v", ex.Err)

	ex = c.Withheld(context.Background(), Prefix+"run", nil, 300000, 100*time.Millisecond, "")
	assert.Check(t, is.Equal(ex.Err, ErrNoAnswer), "patience is the probe's own deadline")
}

// rawServer answers every connection with what answer writes, after
// reading the request's first line.
func rawServer(t *testing.T, answer func(net.Conn)) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = bufio.NewReader(conn).ReadString('\n')
				answer(conn)
			}()
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String())
	return u
}

func TestTransportFailuresAreClassified(t *testing.T) {
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i * 31)
	}
	cases := []struct {
		name   string
		answer func(net.Conn)
		class  error
	}{
		{"garbage", func(c net.Conn) { _, _ = c.Write(garbage) }, ErrMalformed},
		{"text", func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH\r\n\r\n")) }, ErrMalformed},
		{"reset", func(c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0) }, ErrReset},
		{"closed", func(c net.Conn) {}, ErrReset},
		{"bad chunking", func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"))
		}, ErrMalformed},
		{"huge header", func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n"))
			line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
			for i := 0; i < 1000; i++ {
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		}, ErrHeaderTooLarge},
		{"many header fields", func(c net.Conn) {
			// Within MaxHeader bytes, but a MiB of map once parsed.
			b := []byte("HTTP/1.1 200 OK\r\n")
			const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
			for i := 0; len(b) < MaxHeader-100; i++ {
				b = append(b, alpha[i%36], alpha[i/36%36], alpha[i/1296%36], ':', '\r', '\n')
			}
			_, _ = c.Write(append(b, "Content-Length: 0\r\n\r\n"...))
		}, ErrHeaderTooLarge},
		{"endless continues", func(c net.Conn) {
			for i := 0; i < 100; i++ {
				if _, err := c.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n")); err != nil {
					return
				}
			}
		}, nil}, // the Transport and the raw reader give up in their own words; never a hang
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(rawServer(t, tc.answer), Options{Timeout: 2 * time.Second})
			for _, ex := range []*Exchange{
				c.Do(context.Background(), Get("status")),
				c.Withheld(context.Background(), Prefix+"run", nil, 300000, time.Second, ""),
			} {
				assert.Assert(t, ex.Err != nil, "%s", ex.RequestLine())
				if tc.class != nil {
					assert.Check(t, errors.Is(ex.Err, tc.class), "%v", ex.Err)
				}
				var te *TransportError
				assert.Check(t, errors.As(ex.Err, &te) || ex.Err == ErrNoAnswer, "%T %v", ex.Err, ex.Err)
				assert.Check(t, len(ex.Err.Error()) < 300, "an error quotes a bounded part of what came: %d bytes", len(ex.Err.Error()))
				_ = ex.StatusLine()
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	u, _ := url.Parse("http://" + addr)
	c := New(u, Options{Timeout: time.Second})
	ex := c.Do(context.Background(), Get("status"))
	assert.Check(t, errors.Is(ex.Err, ErrUnreachable), "%v", ex.Err)
	var ue *url.Error
	assert.Check(t, errors.As(ex.Err, &ue), "the transport's own error is still there")
	ex = c.Withheld(context.Background(), Prefix+"run", nil, 300000, time.Second, "")
	assert.Check(t, errors.Is(ex.Err, ErrUnreachable), "%v", ex.Err)
}

func TestWithheldEndlessBodyIsCut(t *testing.T) {
	// A runner that answers the head at once with an endless body: the
	// raw reader cuts it like Do, and does not wait out the patience.
	c, _ := client(t, http.HandlerFunc(endlessBody), Options{})
	start := time.Now()
	ex := c.Withheld(context.Background(), Prefix+"run", nil, 300000, 5*time.Second, "")
	assert.NilError(t, ex.Err)
	assert.Check(t, ex.Truncated)
	assert.Check(t, is.Len(ex.Body, KeepTruncated))
	assert.Check(t, time.Since(start) < 3*time.Second, "took %s", time.Since(start))
}

func TestJSONValueCap(t *testing.T) {
	ex := &Exchange{Body: []byte("[" + strings.Repeat("0,", MaxJSONValues) + "0]")}
	_, err := ex.JSON()
	assert.Check(t, errors.Is(err, ErrJSONTooLarge), "%v", err)
	assert.Check(t, ex.Object() == nil)

	// Commas and brackets inside strings are not values.
	ex = &Exchange{Body: []byte(`{"a":"` + strings.Repeat(`,[{\"`, MaxJSONValues) + `"}`)}
	v, err := ex.JSON()
	assert.NilError(t, err)
	assert.Check(t, v != nil)
	assert.Check(t, is.Equal(jsonValues([]byte(`[1,{"a":"x,y"},[]]`)), 6))
}
