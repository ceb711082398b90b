// Package distributor is the distributor check: a mode that judges a
// distributor (§5.2–§5.7, with §2.1, §6, §7 and §8's profile) from outside,
// as a test buyer's client sees it. Its rules are a registry of their own
// (registry.go, one file per section), run by the engine every mode shares
// (checks/engine) over wire's bounded client.
//
// The inputs describe the test buyer's catalogue (Options): only the token
// and one agent it is entitled to are required, and a rule needing an
// input that was not given skips, naming it. Out-of-band hooks that reverse
// and restore the buyer's purchase enable the timed rules of §5.4; they are
// never run without them, and nothing else changes the distributor's state.
package distributor

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The engine's types, as this mode instantiates them.
type (
	Rule   = engine.Rule[*Env]
	T      = engine.T[*Env]
	Result = engine.Result[*Env]
)

// The keywords and bindings rules carry.
const (
	Must      = engine.Must
	MustNot   = engine.MustNot
	Required  = engine.Required
	Should    = engine.Should
	ShouldNot = engine.ShouldNot
	Chain     = engine.Chain
	Contract  = engine.Contract
	Inferred  = engine.Inferred
)

// ProfileSigrix is the profile §8 defines.
const ProfileSigrix = "sigrix"

// Options is one check as a user asks for it.
type Options struct {
	// Target is the distributor's origin (a trailing /postern/v0 is accepted).
	Target string
	// Token is the test buyer's token; Agent an agent it is entitled to.
	Token, Agent string
	// Stranger is a second buyer's token, entitled to none of the agents
	// given; Rotated a predecessor of Token, rotated away (§7).
	Stranger, Rotated string
	// Revoked is an agent the buyer bought and whose purchase was reversed
	// (§5.4); Withdrawn one the buyer owned that was withdrawn from sale,
	// its access ended or still in a tail (§5.3 access_ends_at, §5.6 410,
	// §8); Unowned a listed agent the buyer does not own.
	Revoked, Withdrawn, Unowned string
	// Revoke and Restore reverse the buyer's purchase of Agent and undo the
	// reversal, out of band; each returns once the authority has recorded
	// it. With both, the timed rules run.
	Revoke, Restore Hook
	// RateLimit opts in to §5.6's burst (a few hundred bundle requests)
	// and, on loopback, to the requests from 127.0.0.2 that show whether a
	// refusal counts against both buckets.
	RateLimit bool
	// Profile "sigrix" also checks §8.
	Profile string
	// Timeout bounds each request; Deadline the whole check (zero: derived).
	Timeout, Deadline time.Duration
	// Rules selects rules by pattern (engine.Select); none means all.
	Rules []string
	// Headers are sent on every request (and never shown).
	Headers http.Header
	// Progress, where set, is told how far the check has come.
	Progress engine.Progress
	// Lookup resolves a host name for §7's loopback rule; nil is the
	// system's resolver.
	Lookup func(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DefaultTimeout is each request's deadline where none is given.
const DefaultTimeout = 10 * time.Second

// Hook is an out-of-band action on the distributor: reversing or restoring
// a purchase.
type Hook interface {
	Run(ctx context.Context) error
}

// HookFunc is a Hook made of a function (an in-process distributor's).
type HookFunc func(ctx context.Context) error

// Run calls f.
func (f HookFunc) Run(ctx context.Context) error { return f(ctx) }

// Env is what a check's rules share.
type Env struct {
	Options
	Base *url.URL
	// Stale is the stale_after_seconds the buyer's first answer declared.
	Stale time.Duration
	// pre is the buyer's first check of Agent, made before the run.
	pre *wire.Exchange
	// unknown is a token minted here, which no distributor issued.
	unknown string
	// missing is an identifier no catalogue holds.
	missing string

	reversalOnce sync.Once
	rev          reversal
	// HookErr is a hook that failed: the check could not be made.
	HookErr error
}

// ErrBadInput marks an input the distributor's own answers show is wrong.
var ErrBadInput = errors.New("bad input")

// Check runs the selected rules against the distributor o names. An error
// means no check was possible at all: a bad input, an unreachable
// distributor, or a buyer whose token and agent do not answer active.
func Check(ctx context.Context, o Options) (*Env, []Result, error) {
	if o.Token == "" || o.Agent == "" {
		return nil, nil, fmt.Errorf("%w: the test buyer's --token and an --agent it is entitled to are both required", ErrBadInput)
	}
	base, err := wire.ParseTarget(o.Target)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	for _, in := range []struct{ flag, id string }{{"--agent", o.Agent}, {"--revoked-agent", o.Revoked}, {"--withdrawn-agent", o.Withdrawn}, {"--unowned-agent", o.Unowned}} {
		if in.id != "" && !protocol.ValidAgentID(in.id) {
			return nil, nil, fmt.Errorf("%w: %s %q is not an agent identifier (§1.5: owner/name, each of a-z, 0-9, - and ., at most 128 characters)", ErrBadInput, in.flag, in.id)
		}
	}
	if (o.Revoke == nil) != (o.Restore == nil) {
		return nil, nil, fmt.Errorf("%w: --revoke and --restore go together: the check never leaves a purchase reversed", ErrBadInput)
	}
	if o.Profile != "" && o.Profile != ProfileSigrix {
		return nil, nil, fmt.Errorf("%w: --profile %q: the one profile is %q (§8)", ErrBadInput, o.Profile, ProfileSigrix)
	}
	rules := engine.Select(All(), o.Rules)
	if len(rules) == 0 {
		return nil, nil, fmt.Errorf("%w: no rule matches %v; `postern-conformance list --distributor` shows the IDs", ErrBadInput, o.Rules)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Lookup == nil {
		o.Lookup = net.DefaultResolver.LookupIPAddr
	}
	env := &Env{Options: o, Base: base, unknown: mint(), missing: "zz-postern-conformance/no-such-agent-" + nonce()}
	sess := engine.NewSession(wire.New(base, wire.Options{Timeout: o.Timeout, Headers: o.Headers}), o.Timeout, 0)
	env.pre = sess.Do(ctx, env.checkRequest(o.Agent, bearer(o.Token), "the test buyer's check of --agent, before the run"))
	sess.Observe(env.pre)
	sess.Record(env.pre)
	if err := env.preflight(); err != nil {
		return env, nil, err
	}
	deadline := o.Deadline
	if deadline <= 0 {
		deadline = 2*o.Timeout + 5*time.Second
		if o.Revoke != nil {
			deadline += 2*(env.Stale+hookTimeout(o.Timeout)) + 2*o.Timeout
		}
		if o.RateLimit {
			deadline += 4 * o.Timeout
		}
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	suite := engine.Suite[*Env]{Rules: All(), Progress: o.Progress, Finish: func(e *Env, s *engine.Session) { e.scrub(s.Exchanges()) }}
	results := engine.Run(ctx, suite, sess, env, rules)
	env.scrubResults(results)
	if env.HookErr != nil {
		return env, results, env.HookErr
	}
	return env, results, nil
}

// preflight reads the buyer's first answer: the check is possible only
// where the token and agent given answer 200 active.
func (e *Env) preflight() error {
	ex := e.pre
	if !ex.Answered() {
		return fmt.Errorf("cannot reach the distributor at %s: %v", e.Base, ex.Err)
	}
	a, _ := answerOf(ex)
	if ex.Status != http.StatusOK || a == nil || a["state"] != protocol.StateActive {
		return fmt.Errorf("%w: the check of --agent %s with --token answered %s, not 200 active: either --token is not the test buyer's token, or --agent is not an agent that buyer is entitled to (§5.5 lets a distributor not say which)",
			ErrBadInput, e.Agent, ex.Brief())
	}
	if n, ok := wire.Number(a["stale_after_seconds"]); ok && n >= 0 {
		e.Stale = time.Duration(n) * time.Second
	}
	return nil
}

// contextWithTimeout is t's context, ending after d at the latest.
func contextWithTimeout(t *T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Ctx, d)
}

func hookTimeout(timeout time.Duration) time.Duration { return max(3*timeout, 30*time.Second) }

// mint is a token no distributor issued: 32 random bytes, URL-safe base64.
func mint() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// nonce is 10 random hex digits.
func nonce() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func bearer(tok string) string { return "Bearer " + tok }

// get is a GET of route+raw (raw is sent exactly as given: never encoded
// or decoded) with the Authorization value auth ("" sends none).
func get(route, raw, auth, note string) wire.Request {
	r := wire.Request{Method: http.MethodGet, Path: route + raw, Note: note, Header: http.Header{}}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return r
}

func (e *Env) checkRequest(id, auth, note string) wire.Request {
	return get(protocol.EntitlementsRoute, id, auth, note)
}

// secrets are the tokens this check presents, for the scrub.
func (e *Env) secrets() []string {
	var out []string
	for _, s := range []string{e.Token, e.Stranger, e.Rotated, e.unknown} {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// blot is a replacer of every presented token by "[token]", or nil.
func (e *Env) blot() *strings.Replacer {
	var pairs []string
	for _, s := range e.secrets() {
		pairs = append(pairs, s, "[token]")
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}

// scrubResults blots every presented token out of what the rules said: a
// finding quotes a request line, which may carry one in its query.
func (e *Env) scrubResults(results []Result) {
	rep := e.blot()
	if rep == nil {
		return
	}
	for i := range results {
		r := &results[i]
		r.Reason = rep.Replace(r.Reason)
		for j := range r.Findings {
			r.Findings[j].Message = rep.Replace(r.Findings[j].Message)
		}
		for j := range r.Notes {
			r.Notes[j] = rep.Replace(r.Notes[j])
		}
	}
}

// scrub blots every presented token out of the evidence, once the rules
// have judged it: request URLs and headers (the widening probes carry the
// buyer's token) and whatever the distributor sent back.
func (e *Env) scrub(exs []*wire.Exchange) {
	rep := e.blot()
	if rep == nil {
		return
	}
	for _, ex := range exs {
		ex.URL = rep.Replace(ex.URL)
		for _, h := range []http.Header{ex.ReqHeader, ex.Header} {
			for k, vs := range h {
				for i, v := range vs {
					h[k][i] = rep.Replace(v)
				}
			}
		}
		for _, s := range e.secrets() {
			if strings.Contains(string(ex.Body), s) {
				ex.Body = []byte(rep.Replace(string(ex.Body)))
				break
			}
		}
	}
}

// need is an input a rule cannot do without.
func need(flag string, has func(e *Env) bool) engine.Need[*Env] {
	return engine.Need[*Env]{Name: flag, Check: func(e *Env) string {
		if has(e) {
			return ""
		}
		return "needs an option: " + flag
	}}
}

var (
	needStranger  = need("--stranger-token", func(e *Env) bool { return e.Stranger != "" })
	needRotated   = need("--rotated-token", func(e *Env) bool { return e.Rotated != "" })
	needWithdrawn = need("--withdrawn-agent", func(e *Env) bool { return e.Withdrawn != "" })
	needUnowned   = need("--unowned-agent", func(e *Env) bool { return e.Unowned != "" })
	needHooks     = need("--revoke and --restore", func(e *Env) bool { return e.Revoke != nil && e.Restore != nil })
	needRateLimit = need("--rate-limit", func(e *Env) bool { return e.RateLimit })
	needSigrix    = need("--profile sigrix", func(e *Env) bool { return e.Profile == ProfileSigrix })
)
