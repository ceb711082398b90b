package runner

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
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

// unauthenticated sets aside what inbound authentication hid, where the
// user gave no credential to send. A rule every finding of which is a 401
// unauthorized to a request that carried no Authorization, or that
// skipped as not applicable (or needing an option) after such a 401, was
// not decided: the runner requires inbound authentication (§7) on that
// request, and its rule can only be decided with a credential.
//
// Undecided, not "needs an option": --origin and --execute widen a check
// the user chose the scope of, while this rule is one the check decides
// by default, on a verb the level requires, and the runner itself kept it
// from being decided. So a runner guarding only run and stream, checked
// without --header, is not called conformant on describe and status
// alone: the verdict is not determined and says to pass --header, as it
// is for a runner guarding every verb (which cannot be checked at all). A
// runner requiring nothing never answers 401, and is judged as ever.
func unauthenticated(t *T) {
	if t.Env.Client.HasHeader("Authorization") {
		return
	}
	findings := t.Findings()
	if len(findings) > 0 {
		for _, f := range findings {
			if !refusedUnauthenticated(f.Ex) {
				return
			}
		}
		t.Drop(engine.Undecided, authWords(findings[0].Ex))
		return
	}
	// A rule for a runner requiring no authentication is not applicable
	// to one that does, which is what its 401 shows.
	if slices.ContainsFunc(t.Rule.Needs, func(n Need) bool { return n.Name == NeedNoAuth.Name }) {
		return
	}
	if why, kind := t.Skipped(); why != "" && (kind == engine.NotApplicable || kind == engine.NeedsOption) {
		for _, ex := range t.Sent() {
			if refusedUnauthenticated(ex) {
				t.Drop(engine.Undecided, why+"; "+authWords(ex))
				return
			}
		}
	}
}

// refusedUnauthenticated reports whether ex is a 401 unauthorized to a
// request that carried no Authorization.
func refusedUnauthenticated(ex *wire.Exchange) bool {
	return ex != nil && ex.Is(http.StatusUnauthorized, "unauthorized") && ex.ReqHeader.Get("Authorization") == ""
}

// authWords says why a rule a 401 hid is undecided, and what to do.
func authWords(ex *wire.Exchange) string {
	return fmt.Sprintf("%s was answered 401 unauthorized: the runner requires inbound authentication there (§7), and no --header gave a credential; pass --header 'Authorization: …' to decide this rule",
		ex.RequestLine())
}
