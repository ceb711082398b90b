package runner

import (
	"fmt"
	"net/http"

	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// suite is the runner check as the engine runs it: the whole registry, the
// level gate, the review that sets aside what inbound authentication hid,
// and the blotting of secrets from the evidence.
func suite() engine.Suite[*Env] {
	return engine.Suite[*Env]{
		Rules:  All(),
		Gate:   gate,
		Review: unauthenticated,
		Finish: func(e *Env, _ *engine.Session) { e.concealAll() },
		// The rules that start the agent overlap as far as the runner
		// says it takes runs at once (runfacts.go).
		AgentSlots: agentSlots,
		// Every default probe is a request a conforming runner refuses
		// before its agent starts: a 2xx to one is a breach from its head.
		HeadDecides: true,
	}
}

// gate says why r cannot run against this runner's declared level, or "".
func gate(env *Env, r *Rule) string {
	if r.Level > 1 {
		if env.Level == 0 {
			return fmt.Sprintf("a Level %d rule, and status declares no level 1–3", r.Level)
		}
		if r.Level > env.Level {
			return fmt.Sprintf("a Level %d rule; the runner declares Level %d", r.Level, env.Level)
		}
	}
	return ""
}

// unauthenticated drops findings that say nothing about the rule: every one
// of them is a 401 unauthorized to a request that carried no Authorization,
// while the user gave none to send. Such a runner requires inbound
// authentication (§7) on that request, and the rule cannot be decided until
// the checker is given a credential.
func unauthenticated(t *T) {
	findings := t.Findings()
	if len(findings) == 0 || t.Env.Client.HasHeader("Authorization") {
		return
	}
	for _, f := range findings {
		if f.Ex == nil || !f.Ex.Is(http.StatusUnauthorized, "unauthorized") || f.Ex.ReqHeader.Get("Authorization") != "" {
			return
		}
	}
	t.Drop(engine.NeedsOption, fmt.Sprintf("%s was answered 401 unauthorized: the runner requires inbound authentication there (§7); pass --header 'Authorization: …' to decide this rule",
		findings[0].Ex.RequestLine()))
}
