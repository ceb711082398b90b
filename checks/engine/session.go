package engine

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Session is one run's traffic with its target, whatever the mode: the
// client, the log of every exchange, how many requests may be in flight at
// once, which routes have stopped answering, and what the target's own
// answer times say a wait should be.
type Session struct {
	Client *wire.Client
	// Patience is the longest a probe waits for an answer a conforming
	// target gives at once, before a would-be FAIL is reported: the
	// confirmation wait. It is never paid by a conforming target.
	Patience time.Duration
	// MinWait is the floor of an earned wait (see Wait).
	MinWait time.Duration

	sem chan struct{}

	mu      sync.Mutex
	log     []*wire.Exchange
	routes  map[string]int // consecutive unanswered requests per route
	methods map[string]int // consecutive unanswered requests per method, all its paths together
	// pending are the requests in flight (Do and Stream), and answered
	// when each method was last answered (see hold).
	pending  map[*pendingRequest]struct{}
	answered map[string]time.Time
	// unanswered is, per route, the latest request whose silence counted
	// toward giving the route up (see Unanswered).
	unanswered map[string]*wire.Exchange
	silent     int             // consecutive unanswered requests, all routes together
	quick      []time.Duration // the target's recent answers to requests it could decide at once (a ring)
	nquick     int             // how many were ever kept
	runCtx     context.Context
}

// DefaultInFlight bounds the requests a run has in flight at once. More
// would gain a fast runner little, and would overflow the listen backlog
// of many a small server (Python's socketserver queues five connections):
// a connection the kernel drops is retried only a second later, which
// costs the check that second.
const DefaultInFlight = 6

// DefaultMinWait is the floor of an earned wait: a target deciding on a
// request head takes well under it over loopback.
const DefaultMinWait = 25 * time.Millisecond

// waitFactor is how many times the target's typical quick answer (the
// upper quartile of its recent ones) a probe waits for a silence it
// expects, before taking the silence as shown. A quartile rather than the
// slowest: the check's own burst of requests makes a few answers slow, and
// the slowest would make every wait pay for them.
const waitFactor = 10

// quickKept is how many recent quick answers the wait is derived from.
const quickKept = 64

// giveUpAfter is how many requests in a row to one route (method and path)
// may go unanswered before the run stops sending there. Once as many
// requests in a row as may be in flight have gone unanswered, whatever
// their routes, the run stops sending anywhere: the runner has stopped
// answering altogether; and once a method has left giveUpMethodAfter in a
// row unanswered, on whatever paths, it is not sent again (a runner that
// never answers a POST, or an OPTIONS, leaves every path so).
const giveUpAfter = 2

// giveUpMethodAfter: see giveUpAfter.
const giveUpMethodAfter = 3

// NewSession starts a session over c.
func NewSession(c *wire.Client, patience time.Duration, inFlight int) *Session {
	if inFlight <= 0 {
		inFlight = DefaultInFlight
	}
	if patience <= 0 || patience > c.Timeout() {
		patience = c.Timeout()
	}
	return &Session{Client: c, Patience: patience, MinWait: DefaultMinWait,
		sem: make(chan struct{}, inFlight), routes: map[string]int{}, methods: map[string]int{},
		pending: map[*pendingRequest]struct{}{}, answered: map[string]time.Time{}, unanswered: map[string]*wire.Exchange{}}
}

// ErrGaveUp marks a request not sent because its route had stopped answering.
var ErrGaveUp = errors.New("not sent: the runner stopped answering this method and path")

// ErrDeadline marks a request cut short, or never sent, because the whole
// run's deadline passed.
var ErrDeadline = errors.New("not answered: the run's deadline passed")

func route(method, url string) string { return method + " " + url }

// Do sends r, within the bound on requests in flight, and logs it. A route
// that has left giveUpAfter requests in a row unanswered is not sent to
// again: the exchange comes back at once with ErrGaveUp.
func (s *Session) Do(ctx context.Context, r wire.Request) *wire.Exchange {
	return s.send(ctx, r, s.Client.Do)
}

// Stream is Do for a request answered with an event stream: a 200 is read
// as it arrives, under the client's stream caps (wire.Client.Stream).
func (s *Session) Stream(ctx context.Context, r wire.Request, lim wire.StreamLimits) *wire.Exchange {
	return s.send(ctx, r, func(ctx context.Context, r wire.Request) *wire.Exchange {
		return s.Client.Stream(ctx, r, lim)
	})
}

// headDecidesKey marks the context of a rule whose POSTs a conforming
// target refuses (Suite.HeadDecides).
type headDecidesKey struct{}

// refusals is ctx for a rule whose POSTs are all refusals.
func refusals(ctx context.Context) context.Context {
	return context.WithValue(ctx, headDecidesKey{}, true)
}

func (s *Session) send(ctx context.Context, r wire.Request, do func(context.Context, wire.Request) *wire.Exchange) *wire.Exchange {
	if r.Method == http.MethodPost && ctx.Value(headDecidesKey{}) != nil {
		r.HeadDecides = true
	}
	key := route(r.Method, s.Client.Base().String()+r.Path)
	unsent := func(err error) *wire.Exchange {
		return s.cut(&wire.Exchange{Method: r.Method, URL: s.Client.Base().String() + r.Path, Note: r.Note, Err: err})
	}
	// Held back first, and looked at again once a slot is free: what the
	// requests ahead of this one showed while it waited decides it.
	for {
		if !s.hold(ctx, r.Method) || !s.acquire(ctx) {
			return unsent(nil)
		}
		if !s.stuck(r.Method) {
			break
		}
		s.release()
	}
	s.mu.Lock()
	silent := s.routes[key] >= giveUpAfter || s.methods[r.Method] >= giveUpMethodAfter || s.silent >= cap(s.sem)
	s.mu.Unlock()
	if silent {
		s.release()
		return unsent(ErrGaveUp)
	}
	token := s.begin(r.Method)
	ex := do(ctx, r)
	s.release()
	s.cut(ex)
	s.mu.Lock()
	delete(s.pending, token)
	// An answer whose body did not come whole before the deadline (a drip)
	// counts as none: what the route costs is the wait, not the status line.
	switch {
	case errors.Is(ex.Err, wire.ErrNoAnswer):
		s.routes[key]++
		s.methods[r.Method]++
		s.silent++
		s.unanswered[key] = ex
	case ex.Answered():
		s.routes[key], s.methods[r.Method], s.silent = 0, 0, 0
		s.answered[r.Method] = time.Now()
		s.observe(ex)
	}
	s.mu.Unlock()
	s.Record(ex)
	return ex
}

// pendingRequest is a request in flight: its method and when it was sent.
type pendingRequest struct {
	method string
	sent   time.Time
}

func (s *Session) begin(method string) *pendingRequest {
	p := &pendingRequest{method: method, sent: time.Now()}
	s.mu.Lock()
	s.pending[p] = struct{}{}
	s.mu.Unlock()
	return p
}

// hold keeps a request back while the target looks stuck on its method: a
// request of that method has been in flight longer than the patience, and
// none of that method has been answered since it was sent. A conforming
// target answers long before, so it is never held; a hostile one is sent
// no second wave while the first is still waiting out its timeout, and by
// then the method is given up. It returns false where the run ends first.
func (s *Session) hold(ctx context.Context, method string) bool {
	for s.stuck(method) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(holdPoll):
		}
	}
	return true
}

// stuck reports whether a request of method has been in flight longer than
// the patience, with none of that method answered since it was sent.
func (s *Session) stuck(method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.pending {
		if p.method == method && time.Since(p.sent) > s.Patience && s.answered[method].Before(p.sent) {
			return true
		}
	}
	return false
}

// holdPoll is how often a held request looks again.
const holdPoll = 10 * time.Millisecond

// Expect is what a conforming target does with a withheld body's head.
type Expect int

const (
	// ExpectAnswer: a conforming target answers from the head at once. A
	// silence is a would-be FAIL, so the probe waits the full patience
	// before taking it as shown.
	ExpectAnswer Expect = iota
	// ExpectWait: a conforming target waits for the body. The probe waits
	// only as long as the target's own answers say it needs (Wait): an
	// answer in that time is conclusive, and a silence shows the wait.
	ExpectWait
)

// Withheld sends the head of a POST announcing a body it never sends (see
// wire.Client.Withheld), waiting as expect says.
func (s *Session) Withheld(ctx context.Context, path string, h http.Header, announced int, expect Expect, note string) *wire.Exchange {
	wait := s.Confirm
	if expect == ExpectWait {
		wait = s.Wait
	}
	if !s.acquire(ctx) {
		return s.cut(&wire.Exchange{Method: http.MethodPost, URL: s.Client.Base().String() + path, Note: note})
	}
	ex := s.Client.WithheldFor(ctx, path, h, announced, wait, note)
	s.release()
	s.cut(ex)
	s.noteAnswer(ex)
	s.Record(ex)
	return ex
}

// HeadFirst sends the head of a POST and its body only once the earned
// wait has passed without an answer (see wire.Client.HeadFirst).
func (s *Session) HeadFirst(ctx context.Context, path string, h http.Header, body []byte, note string) *wire.Exchange {
	if !s.acquire(ctx) {
		return s.cut(&wire.Exchange{Method: http.MethodPost, URL: s.Client.Base().String() + path, Note: note})
	}
	ex := s.Client.HeadFirstFor(ctx, path, h, body, s.Wait, note)
	s.release()
	s.cut(ex)
	switch {
	case ex.BodySentLate && errors.Is(ex.Err, wire.ErrNoAnswer):
		// The body went, and still nothing came: as unanswered as a Do.
		key := route(http.MethodPost, s.Client.Base().String()+path)
		s.mu.Lock()
		s.routes[key]++
		s.methods[http.MethodPost]++
		s.silent++
		s.unanswered[key] = ex
		s.mu.Unlock()
	case !ex.BodySentLate:
		s.noteAnswer(ex)
	}
	s.Record(ex)
	return ex
}

func (s *Session) noteAnswer(ex *wire.Exchange) {
	if ex.Answered() {
		s.mu.Lock()
		s.observe(ex)
		s.mu.Unlock()
	}
}

// observe keeps an answer to a request the target could decide at once: a
// GET, or a refusal. A 2xx to a POST may be a run, which takes as long as
// the agent does, and says nothing about how fast the target answers.
// Called with s.mu held.
func (s *Session) observe(ex *wire.Exchange) {
	if ex.Method == http.MethodPost && ex.Status < 300 {
		return
	}
	if len(s.quick) < quickKept {
		s.quick = append(s.quick, ex.Elapsed)
	} else {
		s.quick[s.nquick%quickKept] = ex.Elapsed
	}
	s.nquick++
}

// Observe counts an exchange made outside the session (the documents a
// mode fetches before the run) among the target's answer times.
func (s *Session) Observe(ex *wire.Exchange) {
	if ex != nil && ex.Answered() {
		s.mu.Lock()
		s.observe(ex)
		s.mu.Unlock()
	}
}

// Wait is the earned wait: how long a probe expecting a silence waits
// before taking the silence as shown. It is derived from the target's own
// recent answers (waitFactor times their upper quartile), with a floor,
// and capped by the patience, so a
// fast target is checked fast and a slow one is given the time it shows
// it needs. A probe asks again when the time has passed (wire's
// WithheldFor), so answers that slow down meanwhile lengthen its wait.
func (s *Session) Wait() time.Duration {
	w := waitFactor * s.typical()
	if w < s.MinWait {
		w = s.MinWait
	}
	if w > s.Patience {
		w = s.Patience
	}
	return w
}

// Confirm is how long a probe expecting an answer from the head waits
// before taking a silence as a breach: the patience, or longer where the
// target's own answers show it slower than the patience allows for
// (waitFactor times their upper quartile), so a target on a loaded machine
// is not failed for answering late. Like Wait it is asked again when it
// runs out, so answers that slow down meanwhile lengthen it.
func (s *Session) Confirm() time.Duration {
	return max(s.Patience, waitFactor*s.typical())
}

// typical is the upper quartile of the target's recent answer times to
// requests it could decide at once (0 before any).
func (s *Session) typical() time.Duration {
	s.mu.Lock()
	sorted := slices.Clone(s.quick)
	s.mu.Unlock()
	if len(sorted) == 0 {
		return 0
	}
	slices.Sort(sorted)
	return sorted[len(sorted)*3/4]
}

// Record adds ex to the run's log.
func (s *Session) Record(ex *wire.Exchange) {
	s.mu.Lock()
	s.log = append(s.log, ex)
	s.mu.Unlock()
}

// Unanswered is the latest request to the method and URL of ex that got
// no whole answer before its own deadline and counted toward giving the
// route up: for a rule whose request ex was never sent (ErrGaveUp), what
// made the run stop sending there. It is nil where there is none (the run
// stopped sending anywhere, say, for silence on other routes). A withheld
// body's silence, which a conforming target shows, never counts.
func (s *Session) Unanswered(ex *wire.Exchange) *wire.Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unanswered[route(ex.Method, ex.URL)]
}

// Exchanges is every exchange of the run so far, in order.
func (s *Session) Exchanges() []*wire.Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*wire.Exchange(nil), s.log...)
}

func (s *Session) acquire(ctx context.Context) bool {
	select {
	case s.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Session) release() { <-s.sem }

// cut marks an exchange the run's deadline cut short, or kept from being
// sent at all.
func (s *Session) cut(ex *wire.Exchange) *wire.Exchange {
	s.mu.Lock()
	rc := s.runCtx
	s.mu.Unlock()
	if errors.Is(ex.Err, wire.ErrRunDeadline) || (rc != nil && rc.Err() != nil && !ex.Answered() && ex.Err == nil) {
		ex.Err = ErrDeadline
	}
	return ex
}

// setRunContext is the context whose end is the run's deadline.
func (s *Session) setRunContext(ctx context.Context) {
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
}
