package runner

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// §4.2 POST /postern/v0/run: the inputs a runner refuses before anything
// else it holds is consulted (§4.1.1 fixes their value space), and the
// Idempotency-Key such a refusal leaves unbound.
//
// Safety. A request missing a required input is refused by every conforming
// runner before its agent starts, so those probes run in default mode. A
// request whose one defect is a value (too long, off-pattern, of the wrong
// type…) is not safe there: a runner that skips the check would run it. A
// null for a required input is such a value too, since a runner asking only
// whether the key is present would run it; and so is a required key sent
// only in another case, which a runner reading inputs into a struct (Go's
// encoding/json matches field names without regard to case) or folding
// case on purpose takes for the key, and runs. The value probes therefore need
// --execute, or a runner whose status publishes a missing credential —
// there a runner skipping validation answers 424 rather than running
// anything (§4.6).
//
// A 503 unavailable is never judged: a runner may give it before its agent
// starts at any time (at capacity, §4.5, §4.6), and one past its entitlement
// grace gives it to every run (§5.7.4).
var section4_2 = []*Rule{
	{
		ID: "4.2/missing-required", Section: "4.2", Level: 2, Keyword: Must,
		Title: "a run leaving out a required input is refused 400 bad_request",
		Needs: []Need{NeedStatus, NeedDescribe, needEntitled},
		Probe: func(t *T) {
			if in, d, ok := requiredOrSkip(t, "leave out"); ok {
				expectBadRequest(t, in.missingCase(d.key, false))
			}
		},
	},
	{
		ID: "4.2/names-key", Section: "4.2", Level: 2, Keyword: Should,
		Title: "the refusal of a run missing a required input names that input's key",
		Needs: []Need{NeedStatus, NeedDescribe, needEntitled},
		Probe: func(t *T) {
			in, d, ok := requiredOrSkip(t, "leave out")
			if !ok {
				return
			}
			c := in.missingCase(d.key, true)
			ex := t.Do(c.request())
			if ex.Status != http.StatusBadRequest {
				t.SkipFor(ex, "the request (%s) was answered %s rather than 400, so there is no refusal message to read; 4.2/missing-required judges the answer",
					c.what, ex.Brief())
				return
			}
			msg := ex.ErrorMessage()
			if msg == "" {
				t.NotApplicable("the 400 carries no error.message to look for the key in; 2.1/envelope judges that")
				return
			}
			if !strings.Contains(msg, d.key) {
				t.Fail(ex, "the 400 for a run without %q says %q, which does not name the key; §4.2 asks for the offending key in error.message",
					d.key, msg)
			}
		},
	},
	{
		ID: "4.2/null-required", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "null is no value (§4.1.1)",
		Title: "null for a required input counts as leaving it out: refused 400",
		Needs: []Need{NeedStatus, NeedDescribe, needEntitled, needValidationSafe},
		Probe: func(t *T) {
			if in, d, ok := requiredOrSkip(t, "send as null"); ok {
				expectBadRequest(t, in.missingCase(d.key, false).with(d.key, nil, fmt.Sprintf("%s sent as null (§4.1.1: null is no value)", d.key)))
			}
		},
	},
	{
		ID: "4.2/case-variant-required", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "inputs is keyed by describe's keys as written (§4.1.1)",
		Title: "a key differing from a required input's only in case does not stand in for it: the run is refused 400",
		Needs: []Need{NeedStatus, NeedDescribe, needEntitled, needValidationSafe},
		Probe: func(t *T) {
			c, why := readInputs(t.Env.Describe.Obj).caseVariantCase()
			if why != "" {
				t.NotApplicable("%s", why)
				return
			}
			expectBadRequest(t, c)
		},
	},
	valueRule("4.2/boolean-value", typeChain, "a boolean value for a declared input is refused 400 (§4.1.1 admits none)",
		func(in *inputSet) ([]inputCase, string) {
			if len(in.decls) == 0 {
				return nil, "describe declares no input to send a boolean for"
			}
			d := in.decls[0]
			if r, ok := in.firstRequired(); ok {
				d = r
			}
			return in.valueCases(d.key, true, d.key+" sent as true")
		}),
	valueRule("4.2/wrong-type", typeChain, "a number for a text input, or a string for a number input, is refused 400",
		func(in *inputSet) ([]inputCase, string) {
			var out []inputCase
			if d, ok := in.first(func(d inputDecl) bool { return d.kind() != "number" }); ok {
				cs, why := in.valueCases(d.key, json.Number("7"), fmt.Sprintf("%s (%s) sent the number 7", d.key, d.kind()))
				if why != "" {
					return nil, why
				}
				out = append(out, cs...)
			}
			if d, ok := in.first(func(d inputDecl) bool { return d.kind() == "number" }); ok {
				s := "1"
				if v, ok := d.validValue(in.examples[d.key]); ok {
					s = fmt.Sprint(v)
				}
				cs, why := in.valueCases(d.key, s, fmt.Sprintf("%s (number) sent the string %q", d.key, s))
				if why != "" {
					return nil, why
				}
				out = append(out, cs...)
			}
			if len(out) == 0 {
				return nil, "describe declares no input to send a value of the wrong type for"
			}
			return out, ""
		}),
	valueRule("4.2/select-outside-options", "", "a select value outside validation.options is refused 400",
		func(in *inputSet) ([]inputCase, string) {
			d, ok := in.first(func(d inputDecl) bool { return d.kind() == "select" && len(d.options()) > 0 })
			if !ok {
				return nil, "describe declares no select input with options"
			}
			v := "conformance-probe-not-an-option"
			for slices.Contains(d.options(), v) {
				v += "-x"
			}
			return in.valueCases(d.key, v, fmt.Sprintf("%s sent %q, not among its options", d.key, v))
		}),
	valueRule("4.2/max-length", "", "a text value longer than validation.max_length is refused 400",
		func(in *inputSet) ([]inputCase, string) {
			for _, d := range in.decls {
				n, ok := AsInt(d.validation["max_length"])
				if d.kind() != "text" || !ok || n < 0 || n > 1<<16 {
					continue
				}
				for _, c := range []string{"a", "b", "x", "1", "A"} {
					v := strings.Repeat(c, n+1)
					if d.without("max_length").accepts(v) {
						return in.valueCases(d.key, v, fmt.Sprintf("%s sent %d characters, its max_length being %d", d.key, n+1, n))
					}
				}
			}
			return nil, "describe declares no text input with a max_length that a value can exceed while passing its other checks"
		}),
	valueRule("4.2/min-max", "", "a number below validation.min or above validation.max is refused 400",
		func(in *inputSet) ([]inputCase, string) {
			var cases []inputCase
			for _, d := range in.decls {
				if d.kind() != "number" {
					continue
				}
				for _, b := range []struct {
					name string
					step float64
				}{{"min", -1}, {"max", 1}} {
					lim, ok := floatOf(d.validation[b.name])
					if !ok {
						continue
					}
					v := json.Number(strconv.FormatFloat(lim+b.step, 'f', -1, 64))
					cs, why := in.valueCases(d.key, v, fmt.Sprintf("%s sent %s, its %s being %v", d.key, v, b.name, d.validation[b.name]))
					if why != "" {
						return nil, why
					}
					cases = append(cases, cs...)
				}
				if len(cases) > 0 {
					break
				}
			}
			if len(cases) == 0 {
				return nil, "describe declares no number input with a min or max"
			}
			return cases, ""
		}),
	valueRule("4.2/pattern", "", "a text value not matching validation.pattern is refused 400",
		func(in *inputSet) ([]inputCase, string) {
			for _, d := range in.decls {
				p, ok := d.validation["pattern"].(string)
				if d.kind() != "text" || !ok {
					continue
				}
				re, err := regexp.Compile(p)
				if err != nil {
					continue // a dialect this checker cannot evaluate
				}
				for _, v := range []string{"Conformance Probe!", "0", "zz zz", "A", "a", "-", "probe"} {
					if !re.MatchString(v) && d.without("pattern").accepts(v) {
						return in.valueCases(d.key, v, fmt.Sprintf("%s sent %q, which its pattern %s does not match", d.key, v, p))
					}
				}
			}
			return nil, "describe declares no text input with a pattern this checker can produce a non-matching value for"
		}),
	{
		ID: "4.2/malformed-body", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "no inputs map omits the required input",
		Title: "a body that is not an object carrying an inputs map is refused 400 bad_request",
		Needs: []Need{NeedStatus, needEntitled},
		Probe: func(t *T) {
			verbs := verbsServed(t)
			// Where describe declares no required input, §2.1's table is
			// what names a bad body's answer: the wire contract (§3).
			for _, verb := range verbs {
				for _, b := range malformedBodies(t) {
					r := wire.PostJSON(verb, b.body)
					r.Note = b.what + ": refusable by every runner, executable by none"
					ex := t.Do(r)
					switch {
					case ex.Is(http.StatusBadRequest, "bad_request"):
					case skipUnavailable(t, ex, fmt.Sprintf("POST %s (%s)", verb, b.what)):
						return
					case ex.Status == http.StatusFailedDependency:
						t.Fail(ex, "POST %s with %s was answered %s: the request is malformed, and §4.6 decides what a request says (step 4) before what the runner holds (step 5)",
							verb, b.what, ex.Brief())
					default:
						t.Fail(ex, "POST %s with %s was answered %s, not 400 bad_request (§4.2, §2.1)", verb, b.what, ex.Brief())
					}
				}
			}
		},
	},
	{
		ID: "4.2/refusal-binds-no-key", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain, Chain: "a refused request binds nothing, so a refusable repeat is owed its 400",
		Title: "a run refused 400, for a malformed body or a failed validation, binds no Idempotency-Key: a later request under it is not answered 409",
		Needs: []Need{NeedStatus, needIdempotentRetry, needEntitled},
		Probe: probeRefusalBindsNoKey,
	},
}

// probeRefusalBindsNoKey refuses a request under a fresh Idempotency-Key,
// then sends another under the same key: a 409 says the refusal bound it.
// The first refusal is for a malformed body; where a value probe is safe
// (needValidationSafe), a second key is refused for a failed validation
// too, since a runner may bind a key as soon as the body parses.
func probeRefusalBindsNoKey(t *T) {
	var unjudged []string
	for _, part := range []func(*T) string{keyAfterMalformed, keyAfterParsed, keyAfterValidation} {
		if why := part(t); why != "" {
			unjudged = append(unjudged, why)
		}
	}
	switch {
	case len(unjudged) == 3 && !t.Failed():
		t.NotApplicable("%s", strings.Join(unjudged, "; "))
	default:
		for _, why := range unjudged {
			t.Note("%s", why)
		}
	}
}

// keyAfterMalformed: two malformed bodies under one key. It returns why
// nothing was judged, or "".
func keyAfterMalformed(t *T) string {
	key := freshKey()
	ex := t.Do(keyedRun(key, `{"inputs": "probe"}`, "inputs is a string, not a map; a fresh Idempotency-Key"))
	if ex.Status != http.StatusBadRequest {
		return fmt.Sprintf("the first malformed request (inputs a string) was answered %s rather than 400, so no refusal was made to test the key against", ex.Brief())
	}
	again := t.Do(keyedRun(key, `{"inputs": ["probe"]}`, "inputs is an array, not a map; the same Idempotency-Key as the refused request before"))
	switch {
	case again.Status == http.StatusConflict:
		t.Fail(again, "a request refused 400 was followed, under the same Idempotency-Key, by another malformed one, answered %s: the refusal bound the key, though it executed nothing (§4.2)",
			again.Brief())
	case again.Status != http.StatusBadRequest:
		return fmt.Sprintf("the second malformed request was answered %s; only a 400 or a 409 says anything about the key", again.Brief())
	}
	return ""
}

// keyAfterParsed: two requests whose bodies parse and which both lack a
// required input, so that neither can run, the second with other inputs
// than the first, under one key. A runner that records a key with its
// inputs once the body parses, before it validates, answers the second
// 409: the refusal bound the key. It returns why nothing was judged, or "".
func keyAfterParsed(t *T) string {
	in := readInputs(t.Env.Describe.Obj)
	d, ok := in.firstRequired()
	if !ok {
		return "describe declares no required input, so no parsed request certain to be refused was sent"
	}
	first, second := in.missingCase(d.key, false), in.missingCase(d.key, true)
	if reflect.DeepEqual(first.inputs, second.inputs) {
		second = second.with(unknownInputKey, "x", second.what+", and an input describe does not declare")
	}
	key := freshKey()
	ex := t.Do(runRequest("run", first.inputs, key, first.what+"; a fresh Idempotency-Key"))
	if ex.Status != http.StatusBadRequest {
		return fmt.Sprintf("the first request lacking %s was answered %s rather than 400, so no refusal of a parsed body was made to test the key against (4.2/missing-input judges that answer)",
			d.key, ex.Brief())
	}
	again := t.Do(runRequest("run", second.inputs, key, second.what+"; other inputs, still lacking "+d.key+", under the Idempotency-Key of the request just refused"))
	switch {
	case again.Status == http.StatusConflict:
		t.Fail(again, "a request whose body parsed was refused 400 for lacking %s; another, with other inputs and still lacking it, was sent under the same Idempotency-Key and answered %s: the refusal bound the key to its inputs, though it executed nothing (§4.2)",
			d.key, again.Brief())
	case again.Status != http.StatusBadRequest:
		return fmt.Sprintf("the second request lacking %s was answered %s; only a 400 or a 409 says anything about the key", d.key, again.Brief())
	}
	return ""
}

// unknownInputKey is an input no describe declares, added where a second
// set of inputs must differ from the first and nothing else can.
const unknownInputKey = "undeclared-input"

// keyAfterValidation: a request failing validation under a fresh key, then
// one missing a required input (or malformed, where nothing is required)
// under the same key, which must be refused 400 as any other. Where a valid
// request is safe too (--execute, or a published missing credential), one
// follows under the key, and must not be answered 409 either: a runner that
// validates before it looks keys up shows a wrongly bound key only there.
// It returns why nothing was judged, or "".
func keyAfterValidation(t *T) string {
	if why := needValidationSafe.Check(t.Env); why != "" {
		return "no request failing validation was sent: " + why
	}
	in := readInputs(t.Env.Describe.Obj)
	bad, what, why := in.failingValidation()
	if why != "" {
		return "no request failing validation was sent: " + why
	}
	key := freshKey()
	ex := t.Do(runRequest("run", bad, key, what+"; a fresh Idempotency-Key"))
	if ex.Status != http.StatusBadRequest {
		return fmt.Sprintf("the request failing validation (%s) was answered %s rather than 400, so no validation refusal was made to test the key against (the 4.2 value rules judge that answer)",
			what, ex.Brief())
	}
	r := keyedRun(key, `{"inputs": ["probe"]}`, "inputs is an array, not a map; the same Idempotency-Key as the request refused for its values")
	if d, ok := in.firstRequired(); ok {
		c := in.missingCase(d.key, false)
		r = runRequest("run", c.inputs, key, c.what+"; the same Idempotency-Key as the request refused for its values")
	}
	again := t.Do(r)
	switch {
	case again.Status == http.StatusConflict:
		t.Fail(again, "a request refused 400 for failing validation (%s) was followed, under the same Idempotency-Key, by another refusable one (%s), answered %s: the refusal bound the key, though it executed nothing (§4.2)",
			what, r.Note, again.Brief())
		return ""
	case again.Status != http.StatusBadRequest:
		return fmt.Sprintf("the refusable request sent after the validation refusal was answered %s; only a 400 or a 409 says anything about the key", again.Brief())
	}
	valid, why := validInputs(t.Env.Describe.Obj, false)
	if why != "" {
		t.Note("no valid request followed under the key: %s", why)
		return ""
	}
	note := "valid inputs; the same Idempotency-Key as the request refused for its values"
	if !t.Env.Execute {
		note += "; sent only because status publishes a missing credential (a 424 is expected)"
	} else {
		spend(t, 1) // a valid run of this rule's own: it runs the agent
	}
	if last := t.Do(runRequest("run", valid, key, note)); last.Status == http.StatusConflict {
		t.Fail(last, "a request refused 400 for failing validation (%s) was followed, under the same Idempotency-Key, by a valid one, answered %s: the refusal bound the key, though it executed nothing, and §2.1 gives 409 only to a key already answered for other inputs (§4.2)",
			what, last.Brief())
	}
	return ""
}

// failingValidation builds inputs whose every required input is present and
// of its type, with as many declared validations failed as it can: a value
// too long, off its options, past its bounds or off its pattern. Failing
// several at once keeps the request refused by a runner that skips one
// check. why says where no such request can be built.
func (in *inputSet) failingValidation() (inputs map[string]any, what, why string) {
	inputs, unbuilt := in.base("")
	if len(unbuilt) > 0 {
		return nil, "", "no valid value could be built for the required input(s) " + strings.Join(unbuilt, ", ")
	}
	var failed []string
	for _, d := range in.decls {
		if v, how, ok := d.failingValue(); ok {
			inputs[d.key] = v
			failed = append(failed, fmt.Sprintf("%s %s", d.key, how))
		}
	}
	if len(failed) == 0 {
		return nil, "", "describe declares no validation a value of the right type can fail"
	}
	return inputs, "every required input present; " + strings.Join(failed, "; "), ""
}

// failingValue is a value of d's type that one of its validations refuses,
// and how.
func (d inputDecl) failingValue() (any, string, bool) {
	switch d.kind() {
	case "select":
		if opts := d.options(); len(opts) > 0 {
			v := "conformance-probe-not-an-option"
			for slices.Contains(opts, v) {
				v += "-x"
			}
			return v, fmt.Sprintf("sent %q (not among its options)", v), true
		}
	case "number":
		for _, b := range []struct {
			name string
			step float64
		}{{"max", 1}, {"min", -1}} {
			if lim, ok := floatOf(d.validation[b.name]); ok {
				v := json.Number(strconv.FormatFloat(lim+b.step, 'f', -1, 64))
				return v, fmt.Sprintf("sent %s (%s %v)", v, b.name, d.validation[b.name]), true
			}
		}
	default:
		if n, ok := AsInt(d.validation["max_length"]); ok && n >= 0 && n <= 1<<16 {
			return strings.Repeat("a", n+1), fmt.Sprintf("sent %d characters (max_length %d)", n+1, n), true
		}
		if p, ok := d.validation["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil {
				for _, v := range []string{"Conformance Probe!", "0", "zz zz", "A", "a", "-", "probe"} {
					if !re.MatchString(v) {
						return v, fmt.Sprintf("sent %q (pattern %s)", v, p), true
					}
				}
			}
		}
	}
	return nil, "", false
}

// malformedBodies are the bodies 4.2/malformed-body sends. An object with
// no inputs member goes only where describe declares a required input: a
// runner reading the missing member as an empty map then still refuses it
// for that input, where with nothing required it would run the agent.
func malformedBodies(t *T) []struct{ body, what string } {
	bodies := []struct{ body, what string }{
		{`["conformance probe 4.2/malformed-body"]`, "a JSON array where an object belongs"},
		{`"conformance probe 4.2/malformed-body"`, "a JSON string where an object belongs"},
	}
	if d, ok := readInputs(t.Env.Describe.Obj).firstRequired(); ok {
		b, _ := json.Marshal(map[string]any{"input": map[string]any{d.key: "conformance probe 4.2/malformed-body"}})
		return append(bodies, struct{ body, what string }{string(b), "an object with no inputs member"})
	}
	why := "describe declares no required input"
	if t.Env.Describe.Obj == nil {
		why = "describe could not be read to find a required input"
	}
	t.Note("an object with no inputs member was not sent: %s, and a runner reading the absent member as an empty map could run the agent", why)
	return bodies
}

// typeChain is how §4.2's MUST reaches a value outside its input's type.
const typeChain = "the type fixes the value space (§4.1.1), a check §4.2 requires"

// valueRule is a rule whose probe sends requests with a bad value: safe in
// default mode only where the runner publishes a missing credential. chain,
// where set, is how §4.2's MUST reaches the value's defect (Binding Chain);
// otherwise the defect is a declared validation the MUST names (Direct).
func valueRule(id, chain, title string, build func(*inputSet) ([]inputCase, string)) *Rule {
	b := Direct
	if chain != "" {
		b = Chain
	}
	return &Rule{
		ID: id, Section: "4.2", Level: 2, Keyword: Must, Binding: b, Chain: chain, Title: title,
		Needs: []Need{NeedStatus, NeedDescribe, needEntitled, needValidationSafe},
		Probe: func(t *T) {
			cases, why := build(readInputs(t.Env.Describe.Obj))
			if why != "" {
				t.NotApplicable("%s", why)
				return
			}
			for _, c := range cases {
				expectBadRequest(t, c)
			}
		},
	}
}

// requiredOrSkip is describe's inputs and the first required one; where
// there is none it skips the rule, which would toDo with one.
func requiredOrSkip(t *T, toDo string) (*inputSet, inputDecl, bool) {
	in := readInputs(t.Env.Describe.Obj)
	d, ok := in.firstRequired()
	if !ok {
		t.NotApplicable("describe declares no required input to %s", toDo)
	}
	return in, d, ok
}

// needValidationSafe is met where a request whose only defect is a value
// cannot start the agent, or where the user has allowed that.
var needValidationSafe = Need{Name: "validation-safe", Check: func(e *Env) string {
	if e.Execute || credentialPublishedMissing(e) {
		return ""
	}
	return "a bad value alone would run the agent on a runner skipping the check: needs --execute, " +
		"or a status publishing a missing credential (such a runner then answers 424)"
}, Kind: NeedsOption}

// expectBadRequest sends c to run and requires a 400.
func expectBadRequest(t *T, c inputCase) {
	ex := t.Do(c.request())
	switch {
	case ex.Status == http.StatusBadRequest:
	case skipUnavailable(t, ex, "run ("+c.what+")"):
	case !ex.Answered():
		t.Fail(ex, "run (%s) got no answer; §4.2 requires a 400 bad_request", c.what)
	case ex.Status == http.StatusFailedDependency && credentialPublishedMissing(t.Env) && c.passed != "":
		t.Fail(ex, "run (%s) was answered %s, past the input check (§4.6 step 4) to the credential check (step 5): %s; §4.2 requires a 400 bad_request",
			c.what, ex.Brief(), c.passed)
	case ex.Status == http.StatusFailedDependency && credentialPublishedMissing(t.Env):
		t.Fail(ex, "run (%s) was answered %s: the request reached the credential check with its inputs unjudged; §4.6 puts step 4 (inputs, 400) before step 5 (credentials, 424)",
			c.what, ex.Brief())
	case ex.Status >= 200 && ex.Status < 300 && c.passed != "":
		t.Fail(ex, "run (%s) was accepted (%s) and the agent ran: %s; §4.2 requires a 400 bad_request", c.what, ex.Brief(), c.passed)
	case ex.Status >= 200 && ex.Status < 300:
		t.Fail(ex, "run (%s) was accepted (%s) and the agent ran; §4.2 requires a 400 bad_request", c.what, ex.Brief())
	default:
		t.Fail(ex, "run (%s) was answered %s; §4.2 requires a 400 bad_request", c.what, ex.Brief())
	}
}

// skipUnavailable skips the rule on a 503 unavailable to what: a runner may
// answer that before its agent starts at any time (at capacity, §4.5, §4.6),
// and a runner past its entitlement grace answers every run with it
// (§5.7.4), so it says nothing of how the request was judged.
func skipUnavailable(t *T, ex *wire.Exchange, what string) bool {
	if skipPastGrace(t, ex) {
		return true
	}
	if ex.Is(http.StatusServiceUnavailable, "unavailable") {
		t.Undecided("%s was answered 503 unavailable, which a runner may give before its agent starts at any time (at capacity, §4.5, §4.6, or past its entitlement grace, §5.7.4); it does not show how the request was judged",
			what)
		return true
	}
	return false
}

// keyedRun is a POST run carrying an Idempotency-Key.
func keyedRun(key, body, note string) wire.Request {
	r := wire.PostJSON("run", body)
	r.Header.Set("Idempotency-Key", key)
	r.Note = note
	return r
}

// inputCase is one run request an input rule sends, and its defect in
// words; passed, where set, says what a runner letting it through did.
type inputCase struct {
	what   string
	inputs map[string]any
	passed string
}

func (c inputCase) request() wire.Request { return runRequest("run", c.inputs, "", c.what) }

// with returns c with key set to v, described as what.
func (c inputCase) with(key string, v any, what string) inputCase {
	return inputCase{what: what, inputs: withInput(c.inputs, key, v)}
}

// missingCase leaves key out. With optionals, every optional input whose
// default passes its checks rides along, so the refusal has other keys it
// could name instead.
func (in *inputSet) missingCase(key string, optionals bool) inputCase {
	inputs, unbuilt := in.base(key)
	if optionals {
		in.addOptionals(inputs)
	}
	what := key + " left out"
	if len(unbuilt) > 0 {
		what += "; no valid value found for " + strings.Join(unbuilt, ", ")
	} else if len(inputs) > 0 {
		what += "; every other input sent valid"
	}
	return inputCase{what: what, inputs: inputs}
}

// valueCases is the one case sending v for key, every other required input
// valid; why explains where those cannot be built.
func (in *inputSet) valueCases(key string, v any, what string) ([]inputCase, string) {
	inputs, unbuilt := in.base(key)
	if len(unbuilt) > 0 {
		return nil, "no valid value could be built for the required input(s) " + strings.Join(unbuilt, ", ") +
			", so no request would have a single defect"
	}
	return []inputCase{inputCase{inputs: inputs}.with(key, v, what)}, ""
}
