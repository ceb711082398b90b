// Package wire is the black-box HTTP/1.1 client every check speaks through.
//
// It is deliberately unhelpful in the ways an ordinary client is helpful:
// it never follows a redirect, never retries, decompresses only what it
// asked for compressed (a stream, as a browser asks: coding.go), reads every
// body under a size cap and gives every request a deadline. Each request and
// its answer are kept as an Exchange, the evidence a report quotes.
//
// Whatever a runner sends, what one Client costs is bounded: in time, by
// each request's deadline (and the caller's context, which ends a run); in
// memory, by MaxHeader for a header block, by the body cap for one body,
// and by the body budget for all of them together, including those being
// read at the same moment by concurrent probes (see DefaultBodyBudget).
// Every read streams into bounded buffers; nothing reads to an end it
// does not know.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Prefix is the path prefix every Postern verb lives under (§2).
const Prefix = protocol.Prefix

// DefaultMaxBody is the cap on any one response body the checker reads: a
// document or refusal of this protocol is a few KiB, and 1 MiB leaves room
// for a large output while keeping one body's cost small.
const DefaultMaxBody = 1 << 20

// Client speaks to one runner. It may be used by many goroutines at once.
type Client struct {
	base    *url.URL
	timeout time.Duration
	maxBody int64
	floor   int64 // MinBody, or maxBody where that is smaller
	budget  *budget
	extra   http.Header // --header values, sent on every request unless withheld
	http    *http.Client
}

// Options configure a Client.
type Options struct {
	Timeout time.Duration // per request; 10s when zero
	MaxBody int64         // one response body's cap; DefaultMaxBody when zero
	// BodyBudget caps the response body bytes held at once over every
	// exchange of this client, read or being read: each body's cap is
	// MaxBody or what is left of the budget, whichever is less, but never
	// below MinBody. DefaultBodyBudget when zero; negative means none.
	BodyBudget int64
	Headers    http.Header // sent on every request (inbound authentication, §7)
}

// ParseTarget accepts an origin ("http://127.0.0.1:8787") or an origin with
// the version prefix ("http://127.0.0.1:8787/postern/v0") and returns the
// origin. Anything else is an error a user can act on.
func ParseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("target %q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target %q must start with http:// or https://", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("target %q names no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("target %q must not carry a query or fragment", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	if p != "" && p != strings.TrimRight(Prefix, "/") {
		return nil, fmt.Errorf("target %q: give the runner's origin (optionally ending in /postern/v0), not the path %q", raw, u.Path)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// New returns a client for the runner at base (an origin).
func New(base *url.URL, o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.BodyBudget == 0 {
		o.BodyBudget = DefaultBodyBudget
	}
	tr := &http.Transport{
		Proxy:                  nil, // a conformance probe talks to the runner, not to a proxy in front of it
		DisableCompression:     true,
		DisableKeepAlives:      true, // one connection per probe: no probe inherits another's broken state
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		DialContext:            dialer(o.Timeout),
		TLSHandshakeTimeout:    o.Timeout,
		MaxResponseHeaderBytes: MaxHeader,
		// Each probe has a connection of its own, and each connection its
		// own buffers: a probe's request is a few hundred bytes, and most
		// answers are under a kilobyte, so the default 4 KiB each way is
		// mostly allocated to be collected (a fleet of a hundred runners
		// allocated 70 MB of them).
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  2 << 10,
	}
	return &Client{
		base:    base,
		timeout: o.Timeout,
		maxBody: o.MaxBody,
		floor:   min(MinBody, o.MaxBody),
		budget:  newBudget(o.BodyBudget),
		extra:   o.Headers.Clone(),
		http: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // a redirect is reported as what it is
			},
		},
	}
}

// Base is the runner's origin.
func (c *Client) Base() *url.URL { return c.base }

// Timeout is the per-request deadline.
func (c *Client) Timeout() time.Duration { return c.timeout }

// MaxBody is the cap on one response body.
func (c *Client) MaxBody() int64 { return c.maxBody }

// Retained is how many body bytes the client holds now, against its
// budget: those kept in exchanges, and those reserved by reads under way.
func (c *Client) Retained() int64 { return c.budget.held() }

// HeaderValue is the configured value of a header sent on every request
// (--header), for rules that must look for it where it must not appear. It
// is never put into evidence.
func (c *Client) HeaderValue(name string) string { return c.extra.Get(name) }

// HeaderNames lists the headers sent on every request (--header).
func (c *Client) HeaderNames() []string {
	var out []string
	for k := range c.extra {
		out = append(out, k)
	}
	return out
}

// HasHeader reports whether name is among the headers sent on every request.
func (c *Client) HasHeader(name string) bool { return c.extra.Get(name) != "" }

// Request is one probe.
type Request struct {
	Method string
	Path   string      // relative to the origin, e.g. Prefix+"status"
	Header http.Header // set as given; Content-Type absent means none is sent
	Body   []byte
	// OmitExtra withholds the --header values (to probe inbound authentication).
	OmitExtra bool
	// Note says in a few words why the request was sent; it is shown as evidence.
	Note string
	// HeadDecides marks a request no conforming target accepts (a body
	// that is not JSON, say): a 2xx status line is the whole verdict, so
	// the body of a 2xx is not waited for (Exchange.BodyUnread), and a
	// target that drips it forever costs nothing.
	HeadDecides bool
	// Unreplayable, where set, says why this request alone, sent again,
	// would not show what it showed (it was timed against others): see
	// Exchange.Reproduce.
	Unreplayable string
}

// Get is a convenience for a plain GET of a verb.
func Get(verb string) Request { return Request{Method: http.MethodGet, Path: Prefix + verb} }

// PostJSON is a POST of body labelled application/json.
func PostJSON(verb, body string) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return Request{Method: http.MethodPost, Path: Prefix + verb, Header: h, Body: []byte(body)}
}

// Exchange is one request and what came back: the evidence a check cites.
type Exchange struct {
	Method    string
	URL       string
	ReqHeader http.Header // as sent, secrets redacted
	ReqBody   []byte
	Note      string

	Proto  string
	Status int
	Header http.Header
	Body   []byte
	// Truncated marks a body cut at Cap (for a stream, at a cap of
	// StreamLimits): the runner sent more. Body then keeps only its first
	// KeepTruncated bytes (or Cap, where that is less), evidence enough
	// for a body no rule can judge whole; a stream keeps its whole events.
	Truncated bool
	// Cap is the cap the body was read under: MaxBody, or less where the
	// client's body budget was running out.
	Cap     int64
	Err     error // transport failure: no (complete) answer; see ErrNoAnswer
	Elapsed time.Duration
	// Sent is when the request was sent: with Elapsed and each event's At
	// it places an exchange on the same clock as the others, for the rules
	// that judge what overlapped (§4.5).
	Sent time.Time

	// SSE is the event stream of a 200 answer read by Client.Stream, as
	// far as it was read; nil otherwise.
	SSE *SSEStream
	// Coding is the content coding the body was decoded from ("gzip",
	// which Client.Stream offers as a browser does); "" where the body is
	// as it came. Body holds the decoded bytes; Header still names the
	// coding.
	Coding string

	// BodySentLate marks a HeadFirst exchange whose body was sent only after
	// the runner had not answered its head within the patience.
	BodySentLate bool

	// BodyUnread marks a 2xx to a request whose head decides
	// (Request.HeadDecides): its body was not read.
	BodyUnread bool

	// Unreplayable, where set, says why curl cannot send this request as
	// the checker did (a body announced and withheld, a request timed
	// against a window or against other requests): Reproduce says so
	// rather than give a line that would mislead.
	Unreplayable string
}

// Do sends r and reads the answer under the deadline and the body cap. It
// never returns nil and never panics on a hostile answer: a failure is
// recorded in Exchange.Err, classified (ErrNoAnswer, ErrRunDeadline, or a
// TransportError).
func (c *Client) Do(ctx context.Context, r Request) *Exchange {
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	ex, resp, start := c.send(ctx, r)
	if resp == nil {
		return ex
	}
	defer resp.Body.Close()
	if r.HeadDecides && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		ex.BodyUnread, ex.Elapsed = true, time.Since(start)
		return ex
	}
	err := c.readBody(ex, resp.Body, resp.ContentLength)
	ex.Elapsed = time.Since(start)
	ex.Err = classify(ctx, err)
	return ex
}

// send sends r under ctx and returns the exchange so far, with the head of
// the answer where one came (resp is nil where none did, and ex.Err says
// why), and when the request left.
func (c *Client) send(ctx context.Context, r Request) (*Exchange, *http.Response, time.Time) {
	ex := &Exchange{Method: r.Method, URL: c.base.String() + r.Path, ReqBody: r.Body, Note: r.Note, Unreplayable: r.Unreplayable}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, ex.URL, body)
	if err != nil {
		ex.Err = err
		return ex, nil, time.Now()
	}
	if !r.OmitExtra {
		for k, vs := range c.extra {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	for k, vs := range r.Header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "postern-conformance")
	}
	ex.ReqHeader = c.redact(req.Header)
	start := time.Now()
	ex.Sent = start
	resp, err := c.http.Do(req)
	if err != nil {
		ex.Elapsed = time.Since(start)
		ex.Err = classify(ctx, err)
		return ex, nil, start
	}
	if err := c.keepHead(ex, resp); err != nil {
		resp.Body.Close()
		ex.Elapsed = time.Since(start)
		ex.Err = err
		return ex, nil, start
	}
	return ex, resp, start
}

// MaxHeaderFields caps the distinct header fields of an answer. MaxHeader
// bounds a header block's bytes, but not what it costs parsed: 64 KiB of
// three-letter names is eleven thousand fields, a MiB of map once parsed,
// and every exchange is kept. A real server sends a few dozen.
const MaxHeaderFields = 256

// keepHead records the head of resp in ex, or refuses it as too large.
// What the header holds is charged to the body budget (it is kept with
// the exchange, as a body is), so bodies read later get less of it.
func (c *Client) keepHead(ex *Exchange, resp *http.Response) error {
	if n := len(resp.Header); n > MaxHeaderFields {
		return &TransportError{Class: ErrHeaderTooLarge, Err: fmt.Errorf("%d header fields, more than the %d the checker keeps", n, MaxHeaderFields)}
	}
	var cost int64
	for k, vs := range resp.Header {
		cost += int64(len(k)) + 64 // the name, its map slot and its slice
		for _, v := range vs {
			cost += int64(len(v)) + 16
		}
	}
	c.budget.take(cost, cost)
	ex.Proto, ex.Status, ex.Header = resp.Proto, resp.StatusCode, resp.Header
	return nil
}

// readBody reads body into ex under a cap drawn from the budget, and
// gives back what it did not keep. contentLength is the announced length,
// -1 where none was: a body announced within MaxBody reserves only that.
func (c *Client) readBody(ex *Exchange, body io.Reader, contentLength int64) error {
	want := c.maxBody
	if contentLength >= 0 && contentLength < want {
		want = contentLength
	}
	limit := c.budget.take(want, c.floor)
	var buf bodyBuf
	truncated, err := buf.readCapped(body, limit, contentLength)
	keep := int64(-1)
	if truncated {
		keep = min(limit, KeepTruncated)
	}
	ex.Body, ex.Truncated, ex.Cap = buf.bytes(keep), truncated, limit
	c.budget.give(limit - int64(len(ex.Body)))
	return err
}

// secretHeaders are redacted from evidence.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

func (c *Client) redact(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range secretHeaders {
		if out.Get(k) != "" {
			out.Set(k, redactedValue)
		}
	}
	for k := range c.extra {
		if out.Get(k) != "" {
			out.Set(k, redactedValue)
		}
	}
	return out
}

// Withheld sends the head of a POST announcing a body of contentLength bytes
// and never sends the body. A runner that decides on the head alone answers;
// one that reads the body first is still waiting when wait runs out, and the
// Exchange then carries ErrNoAnswer. Because no body ever leaves the checker,
// nothing can be executed whatever the runner does.
//
// contentLength should exceed 256 KiB: some servers (Go's net/http among
// them) try to drain a small unread body before writing their answer, which
// would hold up even a runner that refused on the head.
func (c *Client) Withheld(ctx context.Context, path string, header http.Header, contentLength int, wait time.Duration, note string) *Exchange {
	return c.headFirst(ctx, path, header, contentLength, nil, fixed(wait), note)
}

// WithheldFor is Withheld with a wait that may grow while it runs: wait is
// asked again when the time it gave has passed, and the probe waits on as
// long as the new answer is longer (see HeadFirstFor).
func (c *Client) WithheldFor(ctx context.Context, path string, header http.Header, contentLength int, wait func() time.Duration, note string) *Exchange {
	return c.headFirst(ctx, path, header, contentLength, nil, wait, note)
}

func fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// bound keeps a wait within the request timeout; none given is the timeout.
func (c *Client) bound(wait time.Duration) time.Duration {
	if wait <= 0 || wait > c.timeout {
		return c.timeout
	}
	return wait
}

// HeadFirst sends the head of a POST and holds body back for up to wait. A
// runner that answers from the head alone is answered before the body
// leaves; one still waiting then gets the body, and its answer is read
// under the client's timeout, with Exchange.BodySentLate set. It tells a
// runner that decides from the head from one that reads first, and still
// learns what the second one answers.
func (c *Client) HeadFirst(ctx context.Context, path string, header http.Header, body []byte, wait time.Duration, note string) *Exchange {
	return c.headFirst(ctx, path, header, len(body), body, fixed(wait), note)
}

// HeadFirstFor is HeadFirst with a wait derived as the run goes: a wait
// taken from the runner's own answer times (checks/engine) is asked again
// once it has passed, so a runner that slows down under the check's load
// is given the longer wait its answers now show.
func (c *Client) HeadFirstFor(ctx context.Context, path string, header http.Header, body []byte, wait func() time.Duration, note string) *Exchange {
	return c.headFirst(ctx, path, header, len(body), body, wait, note)
}

func (c *Client) headFirst(ctx context.Context, path string, header http.Header, contentLength int, late []byte, wait func() time.Duration, note string) *Exchange {
	ex := &Exchange{Method: http.MethodPost, URL: c.base.String() + path, Note: note}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k, vs := range c.extra {
		if h.Get(k) == "" {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
	}
	h.Set("Content-Length", fmt.Sprint(contentLength))
	h.Set("User-Agent", "postern-conformance")
	h.Set("Connection", "close")
	ex.ReqHeader = c.redact(h)
	ex.ReqBody = []byte(fmt.Sprintf("[%d bytes announced, none sent]", contentLength))
	ex.Unreplayable = fmt.Sprintf("the checker sent the head, announcing %d bytes, and held the body back to see whether the runner answers from the head alone; curl sends a body with its head", contentLength)

	// The connection is made under the request timeout, and the wait
	// starts only once the head is written: a runner slow to accept a
	// connection (a short listen backlog, say) is not taken for one
	// waiting for the body.
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	defer func() { ex.Elapsed = time.Since(start) }()

	host := c.base.Host
	if c.base.Port() == "" {
		if c.base.Scheme == "https" {
			host += ":443"
		} else {
			host += ":80"
		}
	}
	conn, err := dialer(c.timeout)(ctx, "tcp", host)
	if err != nil {
		ex.Err = classify(ctx, err)
		return ex
	}
	if c.base.Scheme == "https" {
		conn = tls.Client(conn, &tls.Config{ServerName: c.base.Hostname(), NextProtos: []string{"http/1.1"}})
	}
	defer conn.Close()
	// The connection's deadline is the request's; the end of the run (the
	// parent context, which may be cancelled before any deadline) closes
	// it, so no read or write outlives the run.
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, c.base.Host)
	_ = h.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		ex.Err = classify(ctx, err)
		return ex
	}

	answered := make(chan struct{})
	go func() {
		defer close(answered)
		c.readRaw(ctx, conn, ex)
	}()
	sent := time.Now()
	timer := time.NewTimer(c.bound(wait()))
	defer timer.Stop()
	for waiting := true; waiting; {
		select {
		case <-answered:
			return ex
		case <-ctx.Done():
			<-answered // the AfterFunc has closed the connection; readRaw classified what that cut
			return ex
		case <-timer.C:
			if left := c.bound(wait()) - time.Since(sent); left > 0 {
				timer.Reset(left)
			} else {
				waiting = false
			}
		}
	}
	if late == nil {
		_ = conn.Close() // patience is over: stop the reader
		<-answered
		if !ex.Answered() || ex.Err != nil {
			ex.Err = ErrNoAnswer // whatever failed did so because the checker hung up
		}
		return ex
	}
	ex.BodySentLate = true
	ex.ReqBody = late
	ex.Unreplayable = "the checker sent the head, held the body back for " + time.Since(sent).Round(time.Millisecond).String() + " and sent it only when no answer had come; curl sends both at once, so it would not show when the runner answered"
	_, _ = conn.Write(late)
	<-answered
	return ex
}

// maxContinues bounds the 100 Continue answers skipped before the real one.
const maxContinues = 8

// readRaw reads one answer (skipping any 100 Continue: the body stays
// withheld) into ex, bounded as Do is: the header block by MaxHeader
// (all the 100 Continues before it included), the body by a cap drawn
// from the client's budget.
func (c *Client) readRaw(ctx context.Context, conn net.Conn, ex *Exchange) {
	lr := &io.LimitedReader{R: conn, N: MaxHeader}
	br := bufio.NewReader(lr)
	resp, err := http.ReadResponse(br, nil)
	for n := 0; err == nil && resp.StatusCode == http.StatusContinue; n++ {
		resp.Body.Close()
		if n == maxContinues {
			err = &TransportError{Class: ErrMalformed, Err: errors.New("too many 100 Continue answers")}
			break
		}
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		if lr.N <= 0 && ctx.Err() == nil {
			err = errHeaderTooLarge
		}
		ex.Err = classify(ctx, err)
		return
	}
	lr.N = math.MaxInt64 // the head is read; the body has its own cap
	if err := c.keepHead(ex, resp); err != nil {
		lr.N = 0
		resp.Body.Close()
		ex.Err = err
		return
	}
	err = c.readBody(ex, resp.Body, resp.ContentLength)
	lr.N = 0 // closing a body read this way drains it: there must be nothing left to drain
	resp.Body.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		ex.Err = classify(ctx, err)
	}
}

// sourceKey marks a context whose requests connect from a given local
// address (FromAddress).
type sourceKey struct{}

// FromAddress is ctx for requests whose connections are made from the
// local address ip rather than the one the system picks: a second source
// address on loopback (127.0.0.2: Linux routes all of 127.0.0.0/8 to lo),
// for a check that must be seen coming from two places.
func FromAddress(ctx context.Context, ip net.IP) context.Context {
	return context.WithValue(ctx, sourceKey{}, ip)
}

// dialer dials under timeout, from the source address ctx names, if any.
func dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return lingerless(func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		if ip, ok := ctx.Value(sourceKey{}).(net.IP); ok {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
		return d.DialContext(ctx, network, addr)
	})
}

// lingerless dials as dial does, with a connection that closes at once
// (SO_LINGER 0: a reset) instead of lingering in TIME_WAIT. Every probe has
// a connection of its own and closes it only once it has read what it
// came for (or given up on it), so nothing is lost; and a loopback port
// waits a minute in TIME_WAIT, so a fleet of a few hundred runners (88
// connections each) would otherwise run the 28,000 ephemeral ports out,
// and every run after another pays for the last one's (BenchmarkFleet:
// 2.07, 2.40 and 2.58 s back to back before, 1.82 to 1.94 s after).
func lingerless(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			_ = tc.SetLinger(0)
		}
		return c, err
	}
}
