package runner

import (
	"fmt"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
	"slices"
)

// What a runner says about itself in status and describe, read one way for
// every family that depends on it: the entitlement's stance at §4.6 step 2,
// a credential status publishes as missing (step 5), the credentials
// describe declares, and the level each verb needs (§3). The needs built on
// them that more than one file uses are here too.

// entStance is what §4.6's step 2 does on this runner, read from status.
type entStance int

const (
	entInForce entStance = iota // not_required or active: requests go on to step 3
	entRevoked                  // revoked: 403 not_entitled (§5.7.4)
	entNever                    // unknown without checked_at: 503 unavailable (§5.7.3)
	// entUndecided is unknown with a checked_at, or anything unreadable.
	// Inside its grace such a runner still runs; past it, it answers 503
	// (§5.7.4's table). Which holds depends on the runner's clock, so the
	// checker does not guess: probes there take a 503 unavailable as a
	// reason to skip.
	entUndecided
)

func entitlementStance(e *Env) entStance {
	if e.Status.Obj == nil {
		return entUndecided
	}
	_, checked := Path(e.Status.Obj, "entitlement", "checked_at")
	switch state := Str(e.Status.Obj, "entitlement", "state"); {
	case state == "not_required" || state == "active":
		return entInForce
	case state == "revoked":
		return entRevoked
	case state == "unknown" && !checked:
		return entNever
	}
	return entUndecided
}

// entitlementBars reports whether §4.6 step 2 refuses every run and stream
// here, whatever the request: the entitlement is revoked, or unknown and
// never checked.
func entitlementBars(e *Env) bool {
	s := entitlementStance(e)
	return s == entRevoked || s == entNever
}

// entitlementWords says in a few words what status reports, for messages.
func entitlementWords(e *Env) string {
	switch entitlementStance(e) {
	case entRevoked:
		return "revoked"
	case entNever:
		return "unknown and never checked"
	}
	return quoteOr(Str(e.Status.Obj, "entitlement", "state"))
}

// needEntitled is met where the entitlement is in force. Elsewhere a
// conforming runner refuses every run at §4.6 step 2, before it reads
// the inputs, and the order rules judge that instead.
var needEntitled = Need{Name: "entitled", Check: func(e *Env) string {
	if e.Status.Obj == nil {
		return "GET status gave no JSON object, so whether the entitlement is in force is unknown"
	}
	const refused = "status reports the entitlement %s: a run is refused at §4.6 step 2 before its inputs are read (the order rules judge that)"
	switch entitlementStance(e) {
	case entRevoked:
		return fmt.Sprintf(refused, "revoked")
	case entNever:
		return fmt.Sprintf(refused, "unknown, never checked")
	}
	return ""
}}

// credentialPublishedMissing reports whether status itself says a declared
// credential is unset: it names one in credentials.missing, or reports
// degraded beside credentials describe declares. A runner reaching §4.6
// step 5 there refuses 424, so only there may a request whose inputs pass
// be sent without --execute.
//
// Both halves are cross-checked against describe, and satisfied: true is a
// veto: a name describe does not declare is one §4.6 step 5 never checks,
// so a runner listing it could still run the agent.
func credentialPublishedMissing(e *Env) bool {
	if e.Status.Obj == nil || e.Describe.Obj == nil {
		return false
	}
	declared := credentialNames(e.Describe.Obj)
	if len(declared) == 0 {
		return false
	}
	if sat, ok := Path(e.Status.Obj, "credentials", "satisfied"); ok && sat == true {
		return false
	}
	names, _ := stringsAt(e.Status.Obj, "credentials", "missing")
	for _, n := range names {
		if slices.Contains(declared, n) {
			return true
		}
	}
	return len(names) == 0 && Str(e.Status.Obj, "state") == "degraded"
}

// credentialNames lists the env names describe declares (§4.1.3).
func credentialNames(describe map[string]any) []string {
	list, _ := describe["credentials"].([]any)
	var out []string
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && Str(m, "env") != "" {
			out = append(out, Str(m, "env"))
		}
	}
	return out
}

// aboveDeclaredLevel reports whether verb sits above the level status
// declares (never, where it declares none).
func aboveDeclaredLevel(e *Env, verb string) bool {
	need := protocol.LevelOf(verb)
	return need > 0 && e.Level > 0 && e.Level < need
}

// needIdempotentRetry is met where status declares idempotent_retry true
// (§4.4), the only place that promise is read from.
var needIdempotentRetry = needStatusField("idempotent-retry", true, "idempotent_retry")
