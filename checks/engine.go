package checks

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Result is what one rule came to.
type Result struct {
	Rule      *Rule
	Outcome   Outcome
	Findings  []Finding // why it failed or warned
	Reason    string    // why it was skipped, or what went wrong in the checker
	Notes     []string
	Exchanges []*wire.Exchange // every request the probe sent
	Elapsed   time.Duration
}

// Run evaluates rules against the runner in env: every rule yields exactly
// one Result, in the order given, sweep rules evaluated last.
func Run(ctx context.Context, env *Env, rules []*Rule) []Result {
	env.selected = rules
	for _, r := range rules {
		if r.Warm != nil && gate(env, r) == "" {
			r.Warm(env)
		}
	}
	out := make([]Result, len(rules))
	for pass := 0; pass < 2; pass++ {
		for i, r := range rules {
			if r.Sweep == (pass == 1) {
				out[i] = evaluate(ctx, env, r)
			}
		}
	}
	env.concealAll()
	return out
}

func evaluate(ctx context.Context, env *Env, r *Rule) (res Result) {
	res.Rule = r
	if why := gate(env, r); why != "" {
		res.Outcome, res.Reason = Skip, why
		return res
	}
	t := &T{Ctx: ctx, Env: env, Rule: r}
	start := time.Now()
	defer func() {
		res.Elapsed = time.Since(start)
		res.Exchanges, res.Notes = t.sent, t.notes
		if p := recover(); p != nil {
			res.Outcome = Error
			res.Reason = fmt.Sprintf("the checker failed evaluating this rule: %v\n%s", p, debug.Stack())
		}
	}()
	r.Probe(t)
	if why := unauthenticated(env, t.findings); why != "" {
		t.findings, t.skip = nil, why
	}
	switch {
	case len(t.findings) > 0:
		res.Outcome, res.Findings = Warn, t.findings
		for _, f := range t.findings {
			if !f.Inferred {
				res.Outcome = r.Strength()
			}
		}
	case t.skip != "":
		res.Outcome, res.Reason = Skip, t.skip
	default:
		res.Outcome = Pass
	}
	return res
}

// gate returns why r cannot run here, or "".
func gate(env *Env, r *Rule) string {
	if r.Level > 1 {
		if env.Level == 0 {
			return fmt.Sprintf("a Level %d rule, and status declares no level 1–3", r.Level)
		}
		if r.Level > env.Level {
			return fmt.Sprintf("a Level %d rule; the runner declares Level %d", r.Level, env.Level)
		}
	}
	for _, n := range r.Needs {
		if why := n.Check(env); why != "" {
			return why
		}
	}
	return ""
}

// unauthenticated returns why findings say nothing about the rule: every one
// of them is a 401 unauthorized to a request that carried no Authorization,
// while the user gave none to send. Such a runner requires inbound
// authentication (§7) on that request, and the rule cannot be decided until
// the checker is given a credential.
func unauthenticated(env *Env, findings []Finding) string {
	if len(findings) == 0 || env.Client.HasHeader("Authorization") {
		return ""
	}
	for _, f := range findings {
		if f.Ex == nil || !f.Ex.Is(http.StatusUnauthorized, "unauthorized") || f.Ex.ReqHeader.Get("Authorization") != "" {
			return ""
		}
	}
	return fmt.Sprintf("%s was answered 401 unauthorized: the runner requires inbound authentication there (§7); pass --header 'Authorization: …' to decide this rule",
		findings[0].Ex.RequestLine())
}
