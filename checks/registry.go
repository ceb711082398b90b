package checks

import (
	"slices"
	"strings"
)

// All is the registry: every rule, in section order. It is static, so the
// tool can list, select and baseline rules without touching a runner.
func All() []*Rule { return registry }

// registry is built once: the engine tells rules apart by identity.
var registry = build()

func build() []*Rule {
	var all []*Rule
	for _, family := range [][]*Rule{
		section2,        // s2_transport.go
		section2_2,      // s2_2_identity.go
		section2_3,      // s2_3_cors.go
		section2_3Media, // s2_3_media.go
		section3,        // s3_levels.go
		section4_1,      // s4_1_describe.go
		section4_2,      // s4_2_inputs.go
		section4_2Run,   // s4_2_run.go: needs --execute
		section4_3,      // s4_3_stream.go: needs --execute
		section4_4,      // s4_4_status.go
		section4_6,      // s4_6_order.go
		section5,        // s5_entitlement.go
		section7,        // s7_auth.go
		section2_1,      // s2_1_errors.go: sweeps the refusals every rule above provoked
	} {
		all = append(all, family...)
	}
	for _, r := range all {
		// A rule that needs --execute starts the agent: the engine runs
		// those one at a time, after the probing rules.
		r.Agent = slices.ContainsFunc(r.Needs, func(n Need) bool { return n.Name == NeedExecute.Name })
	}
	return all
}

// Lookup returns the rule with id, or nil.
func Lookup(id string) *Rule {
	for _, r := range All() {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Select keeps the rules whose ID or section matches any pattern. A pattern
// is a rule ID, a section ("4.4", "§4.4"), or an ID prefix ending in "*".
// No patterns keeps everything.
func Select(rules []*Rule, patterns []string) []*Rule {
	if len(patterns) == 0 {
		return rules
	}
	var out []*Rule
	for _, r := range rules {
		for _, p := range patterns {
			if Matches(r, p) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Matches reports whether pattern names r.
func Matches(r *Rule, pattern string) bool {
	p := strings.TrimPrefix(strings.TrimSpace(pattern), "§")
	switch {
	case p == "":
		return false
	case strings.HasSuffix(p, "*"):
		return strings.HasPrefix(r.ID, strings.TrimSuffix(p, "*"))
	default:
		return r.ID == p || r.Section == p || strings.HasPrefix(r.Section, p+".")
	}
}
