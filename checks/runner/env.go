package runner

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

	"github.com/sigrix-io/postern-conformance/checks/engine"
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
	// answered at once (a withheld body) before reporting that it did not.
	// Zero means DefaultPatience; it is capped by the client's timeout.
	Patience time.Duration
	// MaxRuns caps how many times the check may start the agent
	// (--max-runs); zero means DefaultMaxRuns.
	MaxRuns int
}

// Doc is one of the two documents fetched once per run and handed to the
// rules that need them.
type Doc struct {
	Ex  *wire.Exchange
	Obj map[string]any // nil unless the answer was a 200 carrying a JSON object
	Err string         // why Obj is nil
}

// Env is what the runner check knows of its target: the user's
// configuration, and the two documents fetched once before any rule runs.
type Env struct {
	Config
	Status   *Doc
	Describe *Doc
	// Level is status.level where it is 1, 2 or 3, and 0 otherwise.
	Level int
	// Session is the run's traffic with the runner (checks/engine).
	Session *engine.Session

	mu sync.Mutex
	// secrets are values no report may show: the --header values, and what
	// the credential rules found in the runner's own answers.
	secrets []string
	// judged memoises the violations of an exchange's whole body against a
	// schema: several rules read the same answer (every refusal's
	// envelope, the two documents), and validating is the costly part.
	judged map[judgedKey][]schemas.Violation
	// preflights are the preflights sent so far, by verb and origin
	// (sentPreflight).
	preflights map[string]*sharedExchange
	// spent is how many agent starts the rules have taken from the budget
	// (spend).
	spent int
}

type judgedKey struct {
	doc string
	ex  *wire.Exchange
}

// ErrNotARunner means the target answered, but not as a Postern runner.
type ErrNotARunner struct{ Why string }

func (e ErrNotARunner) Error() string { return e.Why }

// NewEnv fetches status and describe, side by side, once. It fails only
// where the target cannot be checked at all: unreachable, or answering
// neither verb as a Postern runner would.
func NewEnv(ctx context.Context, cfg Config, sess *engine.Session) (*Env, error) {
	e := &Env{Config: cfg, Session: sess}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e.Status = e.fetch(ctx, "status") }()
	go func() { defer wg.Done(); e.Describe = e.fetch(ctx, "describe") }()
	wg.Wait()
	if !e.Status.Ex.Answered() {
		return nil, fmt.Errorf("cannot reach %s: %s", cfg.Client.Base(), rootCause(e.Status.Ex.Err))
	}
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
	e.Session.Record(ex)
	e.Session.Observe(ex)
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

// DefaultPatience is how long a probe waits, by default, before it takes a
// silence a conforming runner never leaves as shown: the confirmation of a
// would-be FAIL. A conforming runner never pays it; the waits it does pay
// are earned (engine.Session.Wait).
const DefaultPatience = time.Second

// patience is the confirmation wait for this runner: the one given, or by
// default DefaultPatience, more for a runner slower than usual to answer
// status and describe (ten times its slower answer), and never more than
// the request timeout.
func patienceFor(cfg Config, docs ...*Doc) time.Duration {
	p := cfg.Patience
	if p <= 0 {
		p = DefaultPatience
		for _, d := range docs {
			if d != nil && d.Ex != nil && 10*d.Ex.Elapsed > p {
				p = 10 * d.Ex.Elapsed
			}
		}
	}
	if to := cfg.Client.Timeout(); p > to {
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
	for _, ex := range e.Session.Exchanges() {
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
