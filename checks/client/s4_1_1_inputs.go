package client

import "github.com/sigrix-io/postern-conformance/checks/client/scripted"

// §4.1.1: a client treats an input type it does not recognise as text
// rather than failing, and ignores a validation member it does not
// recognise rather than rejecting it.

var section4_1_1 = []*Rule{
	inputRule("4.1.1/client-unknown-input-type", scripted.UnknownInputType,
		"a client treats an input type it does not know as text, rather than failing",
		"a required input of type colour, which §4.1.1 says a client treats as text"),
	inputRule("4.1.1/client-unknown-validation", scripted.UnknownValidation,
		"a client ignores a validation member it does not know, rather than rejecting it",
		"a validation member (step) it does not know, which §4.1.1 says a client ignores"),
}

// inputRule is a rule whose scenario's describe declares something no
// client knows yet: the client still runs, and prints the value.
func inputRule(id, scenario, title, what string) *Rule {
	return observed(&Rule{ID: id, Section: "4.1.1", Level: 2, Keyword: Must, Title: title,
		Probe: func(t *T) {
			tr := trialOf(t, scenario)
			finished(t, tr)
			if len(tr.runs()) == 0 {
				fail(t, tr, nil, "the client sent no run: it stopped at %s", what)
				return
			}
			served(t, tr)
			printsValue(t, tr, "with "+what)
		}}, scenario)
}
