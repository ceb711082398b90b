package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/schemas"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Config is what a user tells the checker.
type Config struct {
	Client  *wire.Client
	Schemas *schemas.Set
	// Origin is an origin the runner is configured to allow (--origin).
	Origin string
	// Execute permits probes that run the agent (--execute).
	Execute bool
	// Patience bounds how long a probe waits for a runner that should have
	// answered at once (a withheld body). Zero means DefaultPatience; it is
	// capped by the client's timeout.
	Patience time.Duration
}

// Doc is one of the two documents fetched once per run and handed to the
// rules that need them.
type Doc struct {
	Ex  *wire.Exchange
	Obj map[string]any // nil unless the answer was a 200 carrying a JSON object
	Err string         // why Obj is nil
}

// Env is the state of one checking run.
type Env struct {
	Config
	Status   *Doc
	Describe *Doc
	// Level is status.level where it is 1, 2 or 3, and 0 otherwise.
	Level int

	// selected are the rules of this run, which decide who owns what.
	selected []*Rule

	mu  sync.Mutex
	log []*wire.Exchange
	// silent counts consecutive requests that got no answer at all; past
	// giveUpAfter the run stops sending (see T.Do).
	silent  int
	skipped int

	futures map[string]*future
	// secrets are values no report may show: the --header values, and what
	// the credential rules found in the runner's own answers.
	secrets []string
	ctx     context.Context
}

// future is a value being computed in the background (see Prefetch).
type future struct {
	done chan struct{}
	val  any
}

// Prefetch starts computing the value named key in the background, once
// per run: a slow shared request (one that must wait out the patience) is
// started early so its wait overlaps every other probe. Fetched waits for
// it; Fetched of a key never prefetched computes it there and then.
func (e *Env) Prefetch(key string, compute func(ctx context.Context) any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.futures == nil {
		e.futures = map[string]*future{}
	}
	if e.futures[key] != nil {
		return
	}
	f := &future{done: make(chan struct{})}
	e.futures[key] = f
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		defer close(f.done)
		f.val = compute(ctx)
	}()
}

// Fetched returns the value Prefetch computes for key, starting it if need be.
func (e *Env) Fetched(key string, compute func(ctx context.Context) any) any {
	e.Prefetch(key, compute)
	e.mu.Lock()
	f := e.futures[key]
	e.mu.Unlock()
	<-f.done
	return f.val
}

// giveUpAfter is how many requests in a row may go unanswered before the
// checker stops waiting on a runner that has stopped answering.
const giveUpAfter = 4

// ErrNotARunner means the target answered, but not as a Postern runner.
type ErrNotARunner struct{ Why string }

func (e ErrNotARunner) Error() string { return e.Why }

// NewEnv fetches status and describe once. It fails only where the target
// cannot be checked at all: unreachable, or answering neither verb as a
// Postern runner would.
func NewEnv(ctx context.Context, cfg Config) (*Env, error) {
	e := &Env{Config: cfg, ctx: ctx}
	e.Status = e.fetch(ctx, "status")
	if !e.Status.Ex.Answered() {
		return nil, fmt.Errorf("cannot reach %s: %s", cfg.Client.Base(), rootCause(e.Status.Ex.Err))
	}
	e.Describe = e.fetch(ctx, "describe")
	if e.Status.Obj == nil && e.Describe.Obj == nil {
		why := fmt.Sprintf("%s could not be checked: GET %s answered %s and GET describe answered %s, and neither gave its document",
			cfg.Client.Base(), e.Status.Ex.URL, e.Status.Ex.Brief(), e.Describe.Ex.Brief())
		switch {
		case e.Status.Ex.Status == http.StatusUnauthorized:
			why += "; it requires inbound authentication (§7): pass --header 'Authorization: …'"
		case e.Status.Ex.Status == http.StatusNotFound:
			why += "; is the target the runner's origin? The checker adds /postern/v0/ itself"
		}
		return nil, ErrNotARunner{Why: why}
	}
	if e.Status.Obj != nil {
		// Read leniently ("3" counts as 3) so that a mistyped level is
		// reported once, by 3/level-declared, rather than skipping every
		// rule that depends on the level.
		lv := e.Status.Obj["level"]
		if s, ok := lv.(string); ok {
			lv = json.Number(s)
		}
		if n, ok := AsInt(lv); ok && n >= 1 && n <= 3 {
			e.Level = n
		}
	}
	return e, nil
}

func (e *Env) fetch(ctx context.Context, verb string) *Doc {
	req := wire.Get(verb)
	req.Note = "fetched once and shared by every rule that reads " + verb
	ex := e.Client.Do(ctx, req)
	e.record(ex)
	d := &Doc{Ex: ex}
	switch {
	case !ex.Answered():
		d.Err = "no answer: " + fmt.Sprint(ex.Err)
	case ex.Status != http.StatusOK:
		d.Err = fmt.Sprintf("answered %s, not 200", ex.Brief())
	default:
		if d.Obj = ex.Object(); d.Obj == nil {
			d.Err = "the body is not a JSON object"
		}
	}
	return d
}

func (e *Env) record(ex *wire.Exchange) {
	e.mu.Lock()
	e.log = append(e.log, ex)
	e.mu.Unlock()
}

// ErrGaveUp marks a request not sent because the runner had stopped answering.
var ErrGaveUp = errors.New("not sent: the runner stopped answering several requests in a row")

// countSilence tracks unanswered requests and reports whether to give up.
func (e *Env) countSilence(ex *wire.Exchange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ex.Answered() {
		e.silent = 0
	} else if errors.Is(ex.Err, wire.ErrNoAnswer) {
		e.silent++
	}
}

// gaveUp reports whether to skip the next request. Even then every eighth
// request goes out, so a runner that hangs on one kind of request only is
// found answering the others again.
func (e *Env) gaveUp() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.silent < giveUpAfter {
		return false
	}
	e.skipped++
	return e.skipped%8 != 0
}

// Exchanges is every exchange of the run so far, in order.
func (e *Env) Exchanges() []*wire.Exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*wire.Exchange(nil), e.log...)
}

// AsInt reads a JSON number that is a whole number.
func AsInt(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i), true
		}
		f, err := n.Float64() // 3.0 is a whole number too
		return int(f), err == nil && f == float64(int(f))
	case float64:
		return int(n), n == float64(int(n))
	case int:
		return n, true
	}
	return 0, false
}

// Path walks nested objects: Path(m, "entitlement", "state").
func Path(m map[string]any, keys ...string) (any, bool) {
	var cur any = m
	for _, k := range keys {
		o, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = o[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Str is Path for a string value; "" where absent or not a string.
func Str(m map[string]any, keys ...string) string {
	v, _ := Path(m, keys...)
	s, _ := v.(string)
	return s
}

// rootCause strips the URL and operation wrappers from a transport error,
// leaving the part a user acts on ("connection refused").
func rootCause(err error) string {
	for {
		var ue *url.Error
		var oe *net.OpError
		switch {
		case errors.As(err, &ue) && ue.Err != nil && ue.Err != err:
			err = ue.Err
		case errors.As(err, &oe) && oe.Err != nil && oe.Err != err:
			err = oe.Err
		default:
			var se *os.SyscallError
			if errors.As(err, &se) {
				return se.Err.Error()
			}
			return err.Error()
		}
	}
}

// DefaultPatience is how long a withheld-body probe waits by default. A
// refusal decided on the request head takes a runner milliseconds.
const DefaultPatience = time.Second

// A runner slower than usual to answer status and describe gets more
// patience: ten times its slower answer, when that exceeds the default.
func (e *Env) patience() time.Duration {
	p := e.Patience
	if p <= 0 {
		p = DefaultPatience
		for _, d := range []*Doc{e.Status, e.Describe} {
			if d != nil && d.Ex != nil && 10*d.Ex.Elapsed > p {
				p = 10 * d.Ex.Elapsed
			}
		}
	}
	if to := e.Client.Timeout(); p > to {
		p = to
	}
	return p
}

// Conceal adds values that no evidence may show (see concealAll).
func (e *Env) Conceal(values ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range values {
		if v != "" {
			e.secrets = append(e.secrets, v)
		}
	}
}

// concealAll blots the concealed values, and the values of every --header,
// out of every exchange of the run, wherever a rule cites it: a runner that
// echoes a credential must not have it copied into a report kept as a
// build artifact.
func (e *Env) concealAll() {
	secrets := append([]string(nil), e.secrets...)
	for _, name := range e.Client.HeaderNames() {
		secrets = append(secrets, inboundSecrets(e.Client.HeaderValue(name))...)
	}
	if len(secrets) == 0 {
		return
	}
	for _, ex := range e.Exchanges() {
		if ex != nil && len(ex.Body) > 0 && holdsAny(ex.Body, secrets) {
			*ex = *redactedCopy(ex, secrets)
		}
	}
}

func holdsAny(body []byte, secrets []string) bool {
	for _, s := range secrets {
		if len(s) >= 4 && bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	return false
}
