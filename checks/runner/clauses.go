package runner

import "sort"

// Clause is one of the several things a rule checks, any of which a runner
// can break alone. The proof plants a fault per clause (fixtures.Fault's
// Clause), so that a check removed from a rule shows as a fault no longer
// caught.
type Clause struct {
	// Name is unique within its rule: "utf-8".
	Name string
	// What is what breaks the clause, in a line.
	What string
	// Mark is a piece of the rule's finding that shows this clause broke.
	Mark string
	// Warns marks a clause whose breach alone WARNs (it is inferred) where
	// the rule would FAIL.
	Warns bool
}

// clauses lists the clauses of the rules that check several things, by
// rule ID.
var clauses = map[string][]Clause{
	"3/run-implemented":     implementedClauses("run"),
	"3/stream-implemented":  implementedClauses("stream"),
	"2.3/media-type-run":    mediaTypeClauses("run"),
	"2.3/media-type-stream": mediaTypeClauses("stream"),
	"2.3/media-type-params": {
		{Name: "refused", What: "the charset form is refused from the head while the control is waited on", Mark: "from the head alone"},
		{Name: "under-cap", What: "past a size cap, the charset form is refused under it while the control is waited on there", Mark: "bytes announced, was answered"},
	},
	"2.1/wrong-method": {
		{Name: "envelope", What: "a wrong method is refused without the error envelope", Mark: "without the error envelope"},
		{Name: "accepted", What: "a wrong method is answered as if it were the right one", Mark: "a method the path does not take is refused", Warns: true},
		{Name: "envelope-shape", What: "a wrong method is refused in an envelope the error schema refuses", Mark: "error /error"},
	},
	"4.5/stream-timeout-event": {
		{Name: "done", What: "a stream runs past the limit and ends with done", Mark: "and ended with done"},
		{Name: "no-error-event", What: "a stream stopped at the limit ends with no error event", Mark: "with no error event"},
		{Name: "code", What: "a stream stopped at the limit ends with an error event of another code", Mark: "with an error event carrying code"},
		{Name: "refused", What: "a stream reaching the limit is refused in place of an error event", Mark: "the timeout arrives as an error event"},
	},
	"7/stray-authorization": {
		{Name: "401", What: "a stray Authorization header is refused 401", Mark: "was answered 401"},
		{Name: "changed", What: "a stray Authorization header changes the answer otherwise", Mark: "without; §7", Warns: true},
	},
	"2.3/refused-preflight-204": {
		{Name: "error-status", What: "a refused origin's preflight is answered with an error status", Mark: "an origin nobody configured, was refused"},
		{Name: "other-origin", What: "a refused origin's preflight carries another origin in Access-Control-Allow-Origin", Mark: "but carries"},
	},
	"4.6/names-missing": {
		{Name: "absent", What: "a 424 names no unset variable", Mark: "carries no error.detail.missing"},
		{Name: "disagrees", What: "a 424 names other variables than status does", Mark: "while status.credentials.missing is"},
	},
	"4.3/framing": {
		{Name: "utf-8", What: "the stream is not UTF-8", Mark: "not valid UTF-8"},
		{Name: "event-name", What: "an event has no event: field", Mark: "no event: field"},
		{Name: "data-field", What: "an event has no data: field", Mark: "no data: field"},
		{Name: "json-data", What: "an event's data is not JSON", Mark: "data is not JSON"},
		{Name: "blank-line", What: "no blank line ends an event", Mark: "no blank line ends it"},
	},
	"4.3/ends-once": {
		{Name: "no-end", What: "the stream ends without done or error", Mark: "without done or error"},
		{Name: "two-ends", What: "the stream carries more than one done or error", Mark: "ending events"},
		{Name: "after-end", What: "an event follows done or error", Mark: "more event(s)"},
	},
	"2.3/actual-response-cors": {
		{Name: "reads", What: "a read of describe or status from the allowed origin lacks the echo or Vary: Origin", Mark: corsRead},
		{Name: "refusals", What: "a refusal to the allowed origin lacks the echo or Vary: Origin", Mark: corsRefusal},
		{Name: "run", What: "a successful run to the allowed origin lacks the echo or Vary: Origin (its handler writes a head of its own)", Mark: corsSharedRun},
		{Name: "stream", What: "a stream to the allowed origin lacks the echo or Vary: Origin on its 200 head (a hijacked reply)", Mark: corsSharedStream},
	},
	"4.2/run-response": {
		{Name: "shape", What: "a valid run's 200 answer is not a run response (a member missing or mistyped)", Mark: "run-response "},
		{Name: "status", What: "a valid run is answered a 2xx other than 200", Mark: "a successful run answers 200"},
		{Name: "cut", What: "the runner closes a valid run's connection with no answer, twice", Mark: "closed the connection"},
	},
	"4.3/events-as-completed": {
		{Name: "held", What: "a stream's events are held until the run ends", Mark: "was held back"},
		{Name: "compressed", What: "a stream gzip-coded for a client offering gzip, as a browser does, is held until the run ends (a compressor never flushed)", Mark: "gzip-coded"},
	},
	"2.3/null-origin": {
		{Name: "preflight", What: "a preflight from Origin: null is admitted", Mark: "OPTIONS "},
		{Name: "read", What: "a GET from Origin: null is admitted", Mark: "GET "},
		{Name: "post", What: "a POST from Origin: null is admitted", Mark: "POST "},
	},
}

// Clauses lists the clauses of rule id, none where it checks one thing.
func Clauses(id string) []Clause { return clauses[id] }

// ClausedRules lists, sorted, the rules that declare clauses.
func ClausedRules() []string {
	ids := make([]string, 0, len(clauses))
	for id := range clauses {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Breach is how a breach of rule id's clause (any breach, where clause is
// "") is reported: the rule's strength, WARN for a clause that warns.
// "" where there is no such rule.
func Breach(id, clause string) Outcome {
	r := Lookup(id)
	if r == nil {
		return ""
	}
	for _, c := range clauses[id] {
		if c.Name == clause && c.Warns {
			return Warn
		}
	}
	return r.Strength()
}

// implementedClauses are the clauses of 3/<verb>-implemented: the ways a
// runner fails to complete a refusal of a body nobody could run.
func implementedClauses(verb string) []Clause {
	return []Clause{
		{Name: "unimplemented", What: verb + " is answered 501 or 404", Mark: "as if it did not implement it"},
		{Name: "accepted", What: verb + " answers 2xx to a body that is not JSON", Mark: "to a body that is not JSON"},
		{Name: "no-answer", What: verb + " answers nothing to a body that is not JSON", Mark: "got no answer"},
		{Name: "unfinished", What: verb + " refuses a body that is not JSON, in an answer that never ends", Mark: "never finished the answer"},
	}
}

// mediaTypeClauses are the clauses of 2.3/media-type-<verb>.
func mediaTypeClauses(verb string) []Clause {
	return []Clause{
		{Name: "reads", What: verb + " reads a body not labelled application/json before refusing it", Mark: "still reading the body"},
		{Name: "refused-otherwise", What: verb + " refuses a body not labelled application/json from the head, but otherwise than 400 bad_request", Mark: "was waited on; §2.3 requires 400 bad_request"},
		{Name: "accepted-from-head", What: "past a size cap that refuses the control, " + verb + " accepts a body not labelled application/json from the head", Mark: "its body never sent"},
		{Name: "under-cap", What: "past a size cap, " + verb + " answers a body not labelled application/json otherwise than 400 under it", Mark: "bytes announced, answered"},
	}
}
