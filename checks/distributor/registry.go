package distributor

import "github.com/sigrix-io/postern-conformance/checks/engine"

// All is the distributor check's registry: every rule, in section order.
func All() []*Rule { return registry }

var registry = build()

func build() []*Rule {
	var all []*Rule
	for _, family := range [][]*Rule{
		section2_1,       // s2_1_errors.go: the envelope and its codes
		section5_2,       // s7_tokens.go: opaque tokens, long enough
		section5_3,       // s5_3_check.go: the answer, and no widening
		section5_3_1,     // s5_3_1_addressing.go: two raw segments, 400 from the string alone
		section5_4,       // s5_4_revocation.go: the declared window, and the hooks
		section5_5,       // s5_5_indistinguishable.go: 404, never 401 or 403, nothing to tell apart
		section5_6,       // s5_6_bundles.go: the bundle, its digest, 410 withdrawn
		sectionRateLimit, // s5_6_rate_limit.go: --rate-limit
		section6,         // s5_6_bundles.go: plugin.json
		section7,         // s7_tokens.go: TLS or loopback, no token echoed
		section7Rotation, // s5_5_indistinguishable.go: a rotated token is dead
		section8,         // s8_sigrix.go: --profile sigrix
	} {
		all = append(all, family...)
	}
	return all
}

// Lookup returns the rule with id, or nil.
func Lookup(id string) *Rule { return engine.Lookup(All(), id) }
