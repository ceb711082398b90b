// Package scripted is the checker's own distributor for the entitlement
// harness: a §5.3 check endpoint on a loopback port whose every answer is
// set by the walk, token by token, and which keeps a log of every request
// it receives.
//
// A walk issues a token with NewToken, hands it and URL to the runner it
// launches, and moves the runner through §5.7.4's situations by changing
// that token's Answer: active, revoked, the 404 a distributor gives a buyer
// it will not vouch for, and the shapes of unreachable (§5.7: a 5xx, a body
// that is no check answer, a hang, a reset connection), with an answer
// naming another agent besides (§5.3). The log, and Next to wait on it,
// let the harness see when the runner asked, what it asked for and with
// which credential; the rules judge those requests against §5.2 and §5.3.1.
//
// Several runners share one distributor, each with its own token and so its
// own script, which is how independent steps of a walk run side by side.
// Times come from a clock.Clock shared with the harness and, in tests, with
// an in-process runner, so a Fake clock crosses a window at once.
//
// The distributor is built to face a runner that may be hostile: the
// headers it reads and the log it keeps are capped, it reads no request
// body, and Close ends every request in flight, a hanging one included.
package scripted

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sigrix-io/postern-conformance/wire/clock"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// LogCap is how many requests the log keeps: the newest, the oldest
// dropped first. A walk makes a few dozen checks per runner.
const LogCap = 10000

// maxHeaderBytes caps the request headers the server reads. A check's
// headers are a few hundred bytes.
const maxHeaderBytes = 8 << 10

// maxConns caps the connections served at once; one accepted past it is
// closed unread. A walk's runners hold a few each.
const maxConns = 256

// ErrClosed is what Next and Await return once the distributor is closed
// and the request waited for has not come.
var ErrClosed = errors.New("scripted distributor closed")

// Distributor is a running scripted distributor. Its methods are safe for
// concurrent use.
type Distributor struct {
	// URL is the base URL runners are given: plain HTTP on a loopback
	// address, which §7 allows a distributor on this machine.
	URL string

	clock     clock.Clock
	srv       *http.Server
	serveDone chan struct{}
	conns     sync.WaitGroup
	open      atomic.Int64 // connections open, as conns counts them
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	scripts map[string]Answer // one per issued token
	counts  map[string]int    // requests per token; "" for none known
	cursors map[string]int    // how far Next has read, per token
	ring    []Request         // the log, oldest at head once full
	head    int
	seq     int
	changed chan struct{} // closed and replaced on every new entry
}

// Start serves a distributor on an ephemeral loopback port. c is the clock
// its answers stamp checked_at by and its log records; nil means the
// system clock. Close it when done.
func Start(c clock.Clock) (*Distributor, error) {
	if c == nil {
		c = clock.Real{}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &Distributor{
		URL:       "http://" + ln.Addr().String(),
		clock:     c,
		serveDone: make(chan struct{}),
		done:      make(chan struct{}),
		scripts:   map[string]Answer{},
		counts:    map[string]int{},
		cursors:   map[string]int{},
		changed:   make(chan struct{}),
	}
	d.srv = &http.Server{
		Handler:           http.HandlerFunc(d.serve),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				d.open.Add(1)
				d.conns.Add(1)
			case http.StateHijacked, http.StateClosed:
				d.open.Add(-1)
				d.conns.Done()
			}
		},
	}
	go func() {
		defer close(d.serveDone)
		_ = d.srv.Serve(capped{ln, &d.open})
	}()
	return d, nil
}

// Close stops the distributor: it closes the listener and every
// connection, releases a Hang in flight and every Next waiting, and returns
// once each connection's goroutine has ended. The log stays readable.
// Closing twice is harmless.
func (d *Distributor) Close() {
	d.closeOnce.Do(func() {
		_ = d.srv.Close() // returns once Serve has; every connection is closed
		<-d.serveDone
		close(d.done)
		d.conns.Wait()
	})
}

// NewToken issues a fresh token: 256 bits from crypto/rand, base64url
// without padding, opaque as §5.2 wants a token to be. It has no script
// until Answer gives it one, and is answered 404 until then.
func (d *Distributor) NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("scripted: crypto/rand: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	d.mu.Lock()
	d.scripts[tok] = Answer{}
	d.mu.Unlock()
	return tok
}

// Answer sets what every check carrying token gets from now on, until the
// next Answer. The answer is decided as each request arrives, so a check in
// flight when the script changes gets the script it arrived under. It
// panics for a token NewToken did not issue, or a Kind only the
// distributor gives (NoRoute, BadID): both are mistakes in the walk.
func (d *Distributor) Answer(token string, a Answer) {
	if !a.Kind.scriptable() {
		panic("scripted: a script cannot set " + a.Kind.String())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.scripts[token]; !ok {
		panic("scripted: Answer for a token this distributor did not issue")
	}
	a.Body = bytes.Clone(a.Body) // the walk may reuse its slices
	a.Omit = slices.Clone(a.Omit)
	d.scripts[token] = a
}

// Script is token's current script, and whether the token was issued.
func (d *Distributor) Script(token string) (Answer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.scripts[token]
	return a, ok
}

// serve answers one request and logs it. Everything about the answer is
// decided, and the entry logged, on arrival, before anything is sent: Next
// sees a hanging check as soon as it comes.
func (d *Distributor) serve(w http.ResponseWriter, r *http.Request) {
	req := Request{At: d.clock.Now(), Real: time.Now(), Remote: r.RemoteAddr, Method: r.Method}
	req.Target, req.TargetCut = cut(r.RequestURI, maxLoggedTarget)
	auth := r.Header.Values("Authorization")
	req.Authorization = capValues(auth, maxLoggedAuth)
	id, addressing := protocol.Address(protocol.TargetPath(r.RequestURI), protocol.EntitlementsRoute)
	if addressing != protocol.NoRoute && !req.TargetCut {
		req.Owner, req.Name, _ = strings.Cut(id, "/")
	}

	var resp response
	d.mu.Lock()
	if tok := protocol.BearerToken(auth); tok != "" {
		if _, ok := d.scripts[tok]; ok {
			req.Token = tok
		}
	}
	switch {
	case addressing == protocol.NoRoute || (r.Method != http.MethodGet && r.Method != http.MethodHead):
		req.Kind, resp = NoRoute, notFound()
	case addressing == protocol.BadID:
		req.Kind = BadID
		resp = response{status: http.StatusBadRequest, ctype: protocol.JSONUTF8, body: badRequestBody}
	default:
		script := d.scripts[req.Token] // the zero Answer, Unscripted, for no known token
		req.Kind = script.Kind
		resp, req.Sent = script.resolve(id, req.At)
	}
	if !resp.hang && !resp.reset {
		req.Status, req.Body = resp.status, bytes.Clone(resp.body)
	}
	req.Sent.Body = nil // Body holds what went out
	d.record(req)
	d.mu.Unlock()

	switch {
	case resp.hang:
		// Read what little body there is, so the server watches the
		// connection and the request's context ends when the client goes.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
		select {
		case <-r.Context().Done():
		case <-d.done:
		}
		panic(http.ErrAbortHandler) // end the connection with nothing sent
	case resp.reset:
		reset(w)
	default:
		h := w.Header()
		h.Set("Content-Type", resp.ctype)
		h.Set("Content-Length", strconv.Itoa(len(resp.body)))
		w.WriteHeader(resp.status)
		_, _ = w.Write(resp.body)
	}
}

// capped is a listener that closes, unread, a connection accepted while
// maxConns are open, so a runner opening connections without end costs the
// checker nothing but the accept.
type capped struct {
	net.Listener
	open *atomic.Int64
}

func (l capped) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.open.Load() < maxConns {
			return c, err
		}
		_ = c.Close()
	}
}

// reset takes the connection from the server and closes it at once, with
// SO_LINGER 0 so the client reads a reset rather than an orderly end.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// capValues copies values, keeping at most n bytes in all.
func capValues(values []string, n int) []string {
	if len(values) == 0 {
		return nil
	}
	out := make([]string, 0, len(values))
	for _, v := range values {
		if n <= 0 {
			break
		}
		v, _ = cut(v, n)
		n -= len(v)
		out = append(out, v)
	}
	return out
}

// record numbers req and appends it to the log. d.mu is held.
func (d *Distributor) record(req Request) {
	d.seq++
	req.Seq = d.seq
	d.counts[req.Token]++
	req.N = d.counts[req.Token]
	if len(d.ring) < LogCap {
		d.ring = append(d.ring, req)
	} else {
		d.ring[d.head] = req
		d.head = (d.head + 1) % LogCap
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// each calls f on the log's entries, oldest first, until f returns false.
// d.mu is held.
func (d *Distributor) each(f func(*Request) bool) {
	for i := range d.ring {
		if !f(&d.ring[(d.head+i)%len(d.ring)]) {
			return
		}
	}
}

// All is the whole log, oldest first (at most LogCap entries).
func (d *Distributor) All() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Request, 0, len(d.ring))
	d.each(func(r *Request) bool { out = append(out, *r); return true })
	return out
}

// Log is the logged requests credited to token, oldest first. Log("") is
// those that carried no token the distributor issued.
func (d *Distributor) Log(token string) []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Request
	d.each(func(r *Request) bool {
		if r.Token == token {
			out = append(out, *r)
		}
		return true
	})
	return out
}

// Count is how many requests have been credited to token since the
// distributor started, the log's cap notwithstanding: the N the next one
// will carry, less one.
func (d *Distributor) Count(token string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[token]
}

// Await waits for a request credited to token with N greater than n, and
// returns the first such one: Await(ctx, tok, d.Count(tok)) taken before an
// action is the request the action provokes, however fast it comes. It
// ends early with ctx's error, or ErrClosed once the distributor is closed.
// (Where the log has already dropped request n+1, the oldest it still holds
// past n is returned.)
func (d *Distributor) Await(ctx context.Context, token string, n int) (Request, error) {
	for {
		d.mu.Lock()
		var found *Request
		d.each(func(r *Request) bool {
			if r.Token == token && r.N > n {
				found = r
				return false
			}
			return true
		})
		if found != nil {
			req := *found
			d.mu.Unlock()
			return req, nil
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, ctx.Err()
		case <-d.done:
			// One last look: a request may have been logged as it closed.
			d.mu.Lock()
			closedChanged := d.changed
			d.mu.Unlock()
			if closedChanged == changed {
				return Request{}, ErrClosed
			}
		}
	}
}

// Next returns the first request credited to token that Next has not yet
// returned, waiting for it if there is none: successive calls walk that
// token's requests in order, so a harness observes "the runner asked again"
// without polling. It is meant for one reader per token; ctx and Close end
// the wait as for Await.
func (d *Distributor) Next(ctx context.Context, token string) (Request, error) {
	d.mu.Lock()
	n := d.cursors[token]
	d.mu.Unlock()
	req, err := d.Await(ctx, token, n)
	if err != nil {
		return req, err
	}
	d.mu.Lock()
	if req.N > d.cursors[token] {
		d.cursors[token] = req.N
	}
	d.mu.Unlock()
	return req, nil
}

// Skip moves Next past every request credited to token so far, so the next
// Next waits for one yet to come.
func (d *Distributor) Skip(token string) {
	d.mu.Lock()
	d.cursors[token] = d.counts[token]
	d.mu.Unlock()
}
