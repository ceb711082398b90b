package runner

import (
	"slices"

	"github.com/sigrix-io/postern-conformance/checks/engine"
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
		section4_5,      // s4_5_life.go: needs --execute; a run observed over time
		section4_6,      // s4_6_order.go
		section5,        // s5_entitlement.go
		section7,        // s7_auth.go
		section2_1,      // s2_1_errors.go: sweeps the refusals every rule above provoked
	} {
		all = append(all, family...)
	}
	for _, r := range all {
		// A rule that needs --execute starts the agent: the engine runs
		// those after the probing rules, as many at once as the runner
		// declares it takes (suite.go). So does a rule marked Agent that
		// reads the shared runs only where --execute allows them.
		r.Agent = r.Agent || slices.ContainsFunc(r.Needs, func(n Need) bool { return n.Name == NeedExecute.Name })
		// The rules on the life of a run measure capacity and timing: each
		// runs with no other run of the checker's in flight.
		r.Alone = r.Agent && slices.Contains(section4_5, r)
	}
	return all
}

// Lookup returns the rule with id, or nil.
func Lookup(id string) *Rule { return engine.Lookup(All(), id) }

// Select keeps the rules whose ID or section matches any pattern (see
// engine.Select). No patterns keeps everything.
func Select(rules []*Rule, patterns []string) []*Rule { return engine.Select(rules, patterns) }

// Matches reports whether pattern names r (see engine.Matches).
func Matches(r *Rule, pattern string) bool { return engine.Matches(r, pattern) }
