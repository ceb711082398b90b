package runner

import (
	"net/http"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Rules shared by the two documents every runner serves at Level 1.

// answersRule: the document answers 200 whatever the runner's credentials
// and entitlement (§4.1, §4.4).
func answersRule(verb string, t *T) {
	d := docOf(t, verb)
	ex := d.Ex
	if ex.Status != http.StatusOK {
		t.Fail(ex, "GET %s answered %s; it must answer 200 %s", verb, ex.Brief(), postureWords(t.Env))
		return
	}
	t.Note("answered 200 %s", postureWords(t.Env))
}

// schemaRule: the document validates, apart from the parts other rules claim.
func schemaRule(verb string, t *T) {
	d := docOf(t, verb)
	schemaFindings(t, verb, d.Ex, d.Obj)
}

func docOf(t *T, verb string) *Doc {
	if verb == "describe" {
		return t.Env.Describe
	}
	return t.Env.Status
}

// postureWords describes what the runner reports about itself, for messages.
func postureWords(e *Env) string {
	if e.Status.Obj == nil {
		return "in any posture"
	}
	ent := Str(e.Status.Obj, "entitlement", "state")
	state := Str(e.Status.Obj, "state")
	return "(runner state " + quoteOr(state) + ", entitlement " + quoteOr(ent) + ")"
}

func quoteOr(s string) string {
	if s == "" {
		return "unreported"
	}
	return s
}

// refetch sends one more GET of a document, for rules that compare two.
func refetch(t *T, verb string) *wire.Exchange {
	r := wire.Get(verb)
	r.Note = "a second read, to compare with the first"
	return t.Do(r)
}
