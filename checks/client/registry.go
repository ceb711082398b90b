package client

import "github.com/sigrix-io/postern-conformance/checks/engine"

// All is the client check's registry: every rule, in section order.
func All() []*Rule { return registry }

var registry, observes = build()

func build() ([]*Rule, map[string][]string) {
	var all []*Rule
	for _, family := range [][]*Rule{
		section2,     // s2_requests.go: the body is JSON, labelled so
		section2_1,   // s2_1_errors.go: unknown codes, the message, a member beside error
		section3,     // s3_levels.go: the level read from status
		section4_1_1, // s4_1_1_inputs.go: an input type or a validation member nobody knows
		section4_1_4, // s4_1_4_output.go: an output type nobody knows, bytes
		section4_2,   // s4_2_request.go: inputs keyed by describe's keys
		section4_3,   // s4_3_stream.go: the event-stream grammar, names, deltas, steps
		section4_5,   // s4_5_unavailable.go: a 503 whatever status said
		section7,     // s7_credentials.go: a credential value in describe
	} {
		all = append(all, family...)
	}
	obs := map[string][]string{}
	for _, r := range all {
		if names := scenarioNames[r]; names != nil {
			obs[r.ID] = names
		}
	}
	return all, obs
}

// scenarioNames are the scenarios each rule observes, as observed says;
// a rule absent from it reads every scenario's requests.
var scenarioNames = map[*Rule][]string{}

// observed marks r as observed in the scenarios named: it needs one of
// them to have run.
func observed(r *Rule, names ...string) *Rule {
	r.Needs = append(r.Needs, needScenario(names...))
	scenarioNames[r] = names
	return r
}

// Observes lists the scenarios rule id is observed in; nil for a rule
// that reads every scenario's requests.
func Observes(id string) []string { return observes[id] }

// Lookup returns the rule with id, or nil.
func Lookup(id string) *Rule { return engine.Lookup(All(), id) }
