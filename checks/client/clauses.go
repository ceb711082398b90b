package client

import (
	"maps"
	"slices"
)

// Clause is one of the several things a rule checks, any of which a client
// can break alone. The proof plants a fault per clause (fixtures/client's
// Fault.Clause), so that a check removed from a rule shows as a fault no
// longer caught.
type Clause struct {
	// Name is unique within its rule.
	Name string
	// What breaks the clause, in a line.
	What string
	// Mark is a piece of the rule's finding that shows this clause broke.
	Mark string
	// Warns marks a clause whose breach alone WARNs (it is inferred).
	Warns bool
}

var clauses = map[string][]Clause{
	"2/client-json-body": {
		{Name: "media-type", What: "a run body labelled other than application/json", Mark: "went out labelled"},
		{Name: "not-object", What: "a run body labelled JSON that is no JSON object", Mark: "not a JSON object"},
		{Name: "charset", What: "a JSON body labelled without charset=utf-8", Mark: "without charset=utf-8", Warns: true},
	},
	"4.2/client-inputs": {
		{Name: "not-map", What: "inputs that are not an object keyed by describe's keys", Mark: "not as an object keyed"},
		{Name: "missing", What: "a required input left out", Mark: "required, and absent or null"},
		{Name: "bad-value", What: "an input of the wrong shape, or outside its validation", Mark: "sent as"},
		{Name: "undeclared", What: "an input describe does not declare", Mark: "describe does not declare", Warns: true},
	},
	"3/client-level-from-status": {
		{Name: "after-status", What: "stream called after status said level 2", Mark: "status answered level 2"},
		{Name: "no-status", What: "stream called with no status read", Mark: "having read no status"},
	},
	"2.1/client-unknown-code": {
		{Name: "success", What: "an unknown code taken for a success", Mark: "exited 0, reporting a success"},
		{Name: "crash", What: "the client dies of an unknown code", Mark: "the client died"},
		{Name: "trace", What: "the client fails with an uncaught error of its own", Mark: "its own error, not a failure it reported"},
	},
	"2.1/client-error-sibling": {
		{Name: "success", What: "an envelope with a member beside error taken for a success", Mark: "reported success"},
		{Name: "message", What: "an envelope with a member beside error rejected: its message not shown", Mark: "did not show error.message"},
	},
	"4.5/client-ready-for-503": {
		{Name: "hang", What: "a 503 retried, or waited on, past the deadline", Mark: "had not finished"},
		{Name: "success", What: "a 503 reported as a success", Mark: "reporting a success"},
	},
}

// Clauses lists the clauses of rule id, none where it checks one thing.
func Clauses(id string) []Clause { return clauses[id] }

// ClausedRules lists, sorted, the rules that declare clauses.
func ClausedRules() []string { return slices.Sorted(maps.Keys(clauses)) }
