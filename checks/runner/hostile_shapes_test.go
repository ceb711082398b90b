package runner_test

// One hostile runner per shape of issue 6 (§3): each must be checked to an
// end within a bound that never flakes, with a verdict that carries
// evidence, and the shapes that attack memory must leave the checker's
// heap under the goal whatever they send.
//
// Every hostile server answers GET status and GET describe as the
// reference runner does (except where a shape says "everything"), so the
// check gets past its first two requests and meets the hostile answer on
// every probe after them: the worst case, not the easy one. The servers
// write from small fixed buffers, so they add nothing to the heap being
// measured.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
)

// hostileTimeout is --timeout for every shape.
const hostileTimeout = time.Second

// hostileBound is how long a check of a hostile runner may take before the
// test calls it a hang: the goal of 2 × --timeout + 5 s, plus that much
// again as work scaled for -race and a busy machine (checks/posterntest/pace): three
// times the goal was not enough for large-bodies under -race at a load
// average of 35, which ended in 25 s.
var hostileBound = runner.DefaultDeadline(hostileTimeout, false) + pace.Budget{Work: runner.DefaultDeadline(hostileTimeout, false)}.Deadline()

// heapGoal is issue 6's ceiling on the checker's peak heap.
const heapGoal = 48 << 20

// shape is one hostile runner. Exactly one of handler and raw is set: raw
// serves a connection below HTTP (for answers net/http would never write).
type shape struct {
	name    string
	execute bool // --execute, so the stream rules read a stream
	memory  bool // assert the heap peak
	handler func(ref http.Handler, quit <-chan struct{}) http.Handler
	raw     func(conn net.Conn, req *http.Request)
	all     bool // raw: every request gets the hostile answer, status and describe too
}

// fill is the fixed buffer the endless shapes write over and over.
var fill = []byte(strings.Repeat("x", 32<<10))

var sseFill = []byte(strings.Repeat("event: delta\ndata: {\"text\":\"x\"}\n\n", 1000))

var headerFill = []byte(strings.Repeat("X-Filler: "+strings.Repeat("a", 90)+"\r\n", 300))

var garbage = func() []byte {
	b := make([]byte, 16<<10)
	for i := range b {
		b[i] = byte(i*7919 + i>>3) // not HTTP, not text, the same every run
	}
	return b
}()

// isDoc is GET status or GET describe.
func isDoc(r *http.Request) bool {
	return r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/status") || strings.HasSuffix(r.URL.Path, "/describe"))
}

// except answers the documents as ref does and everything else with h.
func except(ref http.Handler, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isDoc(r) {
			ref.ServeHTTP(w, r)
			return
		}
		h(w, r)
	})
}

// endless writes chunk until the client goes away.
func endless(w http.ResponseWriter, r *http.Request, quit <-chan struct{}, chunk []byte) {
	f, _ := w.(http.Flusher)
	for r.Context().Err() == nil && !closed(quit) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
	}
}

// trickle writes a few bytes every interval until the client goes away.
func trickle(w http.ResponseWriter, r *http.Request, quit <-chan struct{}, chunk []byte, every time.Duration) {
	f, _ := w.(http.Flusher)
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-quit:
			return
		case <-tk.C:
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func isStream(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/stream")
}

const sseStart = "event: start\ndata: {\"run_id\":\"r-1\"}\n\n"

var shapes = []shape{
	dripsForever,
	{name: "hangs-on-post", handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				ref.ServeHTTP(w, r)
				return
			}
			select { // a handler that never reads its body is not told the client left
			case <-r.Context().Done():
			case <-quit:
			}
		})
	}},
	{name: "drips", raw: func(conn net.Conn, _ *http.Request) {
		answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		for i := 0; i < len(answer); i++ {
			if _, err := conn.Write([]byte{answer[i]}); err != nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}},
	{name: "drips-everything", all: true, raw: func(conn net.Conn, _ *http.Request) {
		for _, c := range []byte("HTTP/1.1 200 OK\r\n") {
			if _, err := conn.Write([]byte{c}); err != nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}},
	{name: "endless-body", memory: true, handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		return except(ref, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"error":{"code":"bad_request","message":"`))
			endless(w, r, quit, fill)
		})
	}},
	{name: "endless-stream", execute: true, memory: true, handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isStream(r) {
				ref.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(sseStart))
			endless(w, r, quit, sseFill)
		})
	}},
	{name: "giant-event", execute: true, memory: true, handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isStream(r) {
				ref.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(sseStart + "event: delta\ndata: {\"text\":\""))
			endless(w, r, quit, fill)
		})
	}},
	{name: "gib-content-length", memory: true, handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		return except(ref, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
			w.WriteHeader(http.StatusOK)
			trickle(w, r, quit, fill[:64], 100*time.Millisecond)
		})
	}},
	{name: "large-bodies", memory: true, handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
		// Every answer a complete JSON body just under the body cap: what
		// the shared body budget is for.
		return except(ref, func(w http.ResponseWriter, r *http.Request) {
			const size = 1<<20 - 1
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(size))
			w.WriteHeader(http.StatusBadRequest)
			head := `{"error":{"code":"bad_request","message":"`
			_, _ = w.Write([]byte(head))
			left := size - len(head) - len(`"}}`)
			for left > 0 {
				n := min(left, len(fill))
				if _, err := w.Write(fill[:n]); err != nil {
					return
				}
				left -= n
			}
			_, _ = w.Write([]byte(`"}}`))
		})
	}},
	{name: "garbage", raw: func(conn net.Conn, _ *http.Request) {
		_, _ = conn.Write(garbage)
	}},
	{name: "garbage-everything", all: true, raw: func(conn net.Conn, _ *http.Request) {
		_, _ = conn.Write(garbage)
	}},
	{name: "reset", raw: func(conn net.Conn, _ *http.Request) {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST
		}
	}},
	{name: "large-header-block", raw: func(conn net.Conn, _ *http.Request) {
		if _, err := conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")); err != nil {
			return
		}
		for i := 0; i < 1<<14; i++ { // 48 MiB of header, or until the client hangs up
			if _, err := conn.Write(headerFill); err != nil {
				return
			}
		}
	}},
	{name: "many-header-fields", memory: true, raw: func(conn net.Conn, _ *http.Request) {
		// Within the header cap in bytes, but some eleven thousand fields:
		// a MiB of map each, were they kept.
		_, _ = conn.Write(fieldsBlock)
	}},
}

var fieldsBlock = func() []byte {
	b := []byte("HTTP/1.1 200 OK\r\n")
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := 0; len(b) < 60<<10; i++ {
		b = append(b, alpha[i%36], alpha[i/36%36], alpha[i/1296%36], ':', '\r', '\n')
	}
	return append(b, "Content-Length: 0\r\n\r\n"...)
}()

// rawServer serves shape s below HTTP: each connection's request head is
// read, the documents are answered by ref (unless s.all), and the rest is
// handed to s.raw, after which the connection is closed.
func rawServer(t *testing.T, ref http.Handler, s shape) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var closing atomic.Bool
	conns := map[net.Conn]struct{}{}
	var mu sync.Mutex
	t.Cleanup(func() {
		closing.Store(true)
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closing.Load() {
				mu.Unlock()
				conn.Close()
				return
			}
			conns[conn] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, conn)
					mu.Unlock()
					conn.Close()
				}()
				_ = conn.SetDeadline(time.Now().Add(hostileBound))
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				if !s.all && isDoc(req) {
					rec := httptest.NewRecorder()
					ref.ServeHTTP(rec, req)
					resp := rec.Result()
					resp.ContentLength = int64(rec.Body.Len())
					resp.Close = true
					_ = resp.Write(conn)
					return
				}
				s.raw(conn, req)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// heapSampler records the peak of the heap in use (HeapInuse: live and
// not yet swept objects, and the unused part of their spans) every few
// milliseconds, from a goroutine, without stopping the world.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64() + samples[1].Value.Uint64(); v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peak.
func (s *heapSampler) Stop() uint64 {
	close(s.stop)
	<-s.done
	return s.peak.Load()
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// checkShape runs one whole check against s and judges how it ended.
func checkShape(t *testing.T, s shape) {
	ref, err := fixtures.New(fixtures.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var target string
	if s.raw != nil {
		target = rawServer(t, ref, s)
	} else {
		quit := make(chan struct{})
		srv := httptest.NewServer(s.handler(ref, quit))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(quit) }) // runs first: release the handlers
		target = srv.URL
	}

	var sampler *heapSampler
	if s.memory {
		sampler = startHeapSampler()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		env     *runner.Env
		results []runner.Result
		err     error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	o := runner.Options{Target: target, Timeout: hostileTimeout, Execute: s.execute,
		Origin: fixtures.AllowedOrigin, Deadline: runner.DefaultDeadline(hostileTimeout, false)}
	go func() {
		env, results, err := runner.Check(ctx, o)
		done <- outcome{env, results, err}
	}()
	var got outcome
	select {
	case got = <-done:
	case <-time.After(hostileBound):
		t.Errorf("the check was still running after %s: a hostile runner hung it", hostileBound)
		cancel() // the run's context is the last resort
		select {
		case got = <-done:
		case <-time.After(hostileBound):
			t.Fatalf("the check did not end even %s after its context was cancelled", hostileBound)
		}
	}
	took := time.Since(start)
	var peak uint64
	if sampler != nil {
		peak = sampler.Stop()
	}
	t.Logf("%s: ended in %s, heap peak %s", s.name, took.Round(10*time.Millisecond), mib(peak))
	if s.memory && peak > heapGoal {
		t.Errorf("the heap peaked at %s, over the goal of %s", mib(peak), mib(heapGoal))
	}
	judgeHostile(t, got.results, got.err)
	if got.err == nil {
		notConformant(t, got.env, got.results, o)
	}
	if s.execute && got.err == nil && !streamed(got.results) {
		t.Errorf("no rule read a 200 stream: the shape was never met")
	}
}

// streamed reports whether some rule's evidence is a stream answered 200.
func streamed(results []runner.Result) bool {
	for _, r := range results {
		for _, ex := range r.Exchanges {
			if ex != nil && ex.Status == http.StatusOK && strings.HasSuffix(ex.URL, "/stream") {
				return true
			}
		}
	}
	return false
}

// judgeHostile accepts a clear refusal to check the target (it cannot be
// reached, or is not a runner), or results in which nothing crashed and
// the runner is held to account: some rule FAILs or SKIPs with evidence.
func judgeHostile(t *testing.T, results []runner.Result, err error) {
	t.Helper()
	if err != nil {
		var notRunner runner.ErrNotARunner
		if !errors.As(err, &notRunner) && !strings.Contains(err.Error(), "cannot reach") {
			t.Errorf("the check refused the target with an unclear error: %v", err)
		}
		t.Logf("refused: %s", firstLine(err.Error()))
		return
	}
	evidenced := 0
	counts := map[runner.Outcome]int{}
	for _, r := range results {
		counts[r.Outcome]++
		switch r.Outcome {
		case runner.Error:
			t.Errorf("%s crashed: %s", r.Rule.ID, firstLine(r.Reason))
		case runner.Fail:
			for _, f := range r.Findings {
				if f.Ex != nil || len(r.Exchanges) > 0 {
					evidenced++
					break
				}
			}
		case runner.Skip:
			if len(r.Exchanges) > 0 {
				evidenced++
			}
		}
	}
	t.Logf("outcomes: %d fail, %d skip, %d pass, %d warn", counts[runner.Fail], counts[runner.Skip], counts[runner.Pass], counts[runner.Warn])
	if evidenced == 0 {
		t.Errorf("no rule FAILs or SKIPs with evidence: the hostile runner went unnoticed")
	}
}

// TestHostileShapesMemory runs the shapes that attack memory one after
// another (not in parallel: each measures the heap of the whole process).
func TestHostileShapesMemory(t *testing.T) {
	for _, s := range shapes {
		if !s.memory {
			continue
		}
		t.Run(s.name, func(t *testing.T) { checkShape(t, s) })
	}
}

// TestHostileShapesTime runs the other shapes side by side: they cost
// waiting, not work.
func TestHostileShapesTime(t *testing.T) {
	for _, s := range shapes {
		if s.memory {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			checkShape(t, s)
		})
	}
}

// No hostile runner is ever called conformant: whatever shape it takes
// (checkShape runs each), the exit status a CI gate reads is 1 (a breach)
// or 2 (not determined, or not a runner at all), never 0.

// dripsForever is the runner of issue 13: describe and status answered as
// the reference runner answers them, every other request a 200 head and a
// body that drips a byte every half second and never ends.
var dripsForever = shape{name: "drips-forever-after-200", handler: func(ref http.Handler, quit <-chan struct{}) http.Handler {
	return except(ref, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		trickle(w, r, quit, []byte(" "), 500*time.Millisecond)
	})
}}

// notConformant fails t where the command would exit 0 on the check of a
// hostile runner.
func notConformant(t *testing.T, env *runner.Env, results []runner.Result, o runner.Options) {
	t.Helper()
	rep := report.Assemble(env, results, o, nil, report.Run{})
	code, _ := rep.Exit(report.Strictness{})
	t.Logf("verdict: %s (exit %d)", rep.Verdict.Text, code)
	if code == report.ExitOK {
		t.Errorf("a hostile runner exits 0: %s", rep.Verdict.Text)
	}
}
