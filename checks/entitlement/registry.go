package entitlement

import "github.com/sigrix-io/postern-conformance/checks/engine"

// All is the harness's registry: every rule, in section order.
func All() []*Rule { return registry }

var registry = build()

func build() []*Rule {
	var all []*Rule
	for _, family := range [][]*Rule{
		section2,   // s2_refusals.go: every refusal's envelope, the preflight
		section4_6, // s4_6_order.go: stream refused as run is
		section5_1, // s5_1_unconfigured.go: no distributor
		section5_2, // s5_2_tokens.go
		section5_3, // s5_3_check.go: the request, what status carries, access_ends_at
		section5_4, // s5_4_revocation.go: the window, re-checks, restoration
		section5_7, // s5_7_unreachable.go: 404, grace, never checked, restart
		section7,   // s7_auth.go: inbound authentication
	} {
		all = append(all, family...)
	}
	return all
}

// Lookup returns the rule with id, or nil.
func Lookup(id string) *Rule { return engine.Lookup(All(), id) }
