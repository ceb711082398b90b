package runner

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §4.6 The order of refusals: level (1), entitlement (2), media type (3),
// inputs (4), credentials (5). Each rule puts one pair of steps side by side
// on a runner whose posture makes both observable (posture.go reads it). The
// probes here are shared with §2.3's media-type rules and §5's entitlement
// rules.
var section4_6 = []*Rule{
	{
		ID: "4.6/level-before-entitlement", Section: "4.6", Level: 1, Keyword: Must,
		Title: "a verb above the level answers 501, not an entitlement refusal, on a runner not entitled",
		Needs: []Need{NeedStatus, needEntitlementBars},
		Probe: func(t *T) {
			for _, verb := range verbsAboveOrSkip(t) {
				ex := t.Do(notAnObject(t, verb))
				switch {
				case ex.Is(http.StatusNotImplemented, "not_implemented"):
				case stepTwoAnswer(ex):
					t.Fail(ex, "a Level %d runner whose entitlement is %s answered POST %s with %s: §4.6 puts the level's 501 not_implemented (step 1) ahead of the entitlement (step 2)",
						t.Env.Level, entitlementWords(t.Env), verb, ex.Brief())
				default:
					t.Fail(ex, "a Level %d runner answered POST %s with %s, not 501 not_implemented (§3, §4.6 step 1)",
						t.Env.Level, verb, ex.Brief())
				}
			}
		},
	},
	{
		ID: "4.6/level-before-media-type", Section: "4.6", Level: 1, Keyword: Must,
		Title: "a verb above the level answers 501, not 400, to a body labelled text/plain",
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			for _, verb := range verbsAboveOrSkip(t) {
				ex := headFirstPost(t, verb, plainLabel, "labelled text/plain, body held back: the level alone decides")
				switch {
				case ex.Is(http.StatusNotImplemented, "not_implemented"):
					readFirstNote(t, ex)
				case stillReading(ex):
					t.Fail(ex, "a Level %d runner was still reading the body of POST %s after %s: a verb above the level is refused from the head, with 501 not_implemented (§3, §4.6 step 1)",
						t.Env.Level, verb, patience(t))
				case ex.Is(http.StatusBadRequest, ""):
					t.Fail(ex, "a Level %d runner answered POST %s labelled text/plain with %s: the media-type refusal (§4.6 step 3) came before the level's 501 not_implemented (step 1)",
						t.Env.Level, verb, ex.Brief())
				default:
					t.Fail(ex, "a Level %d runner answered POST %s labelled text/plain with %s, not 501 not_implemented (§3, §4.6 step 1)",
						t.Env.Level, verb, ex.Brief())
				}
			}
		},
	},
	{
		ID: "4.6/entitlement-before-media-type", Section: "4.6", Level: 2, Keyword: Must,
		Title: "an entitlement not in force is answered 403/503 ahead of a text/plain label",
		Needs: []Need{NeedStatus, needEntitlementBars},
		Probe: func(t *T) {
			for _, verb := range verbsServed(t) {
				ex := headFirstPost(t, verb, plainLabel, "labelled text/plain, body held back: the entitlement alone decides")
				if stillReading(ex) {
					t.Fail(ex, "with the entitlement %s, POST %s was still reading its body after %s: the entitlement refusal (§4.6 step 2) needs nothing from the body",
						entitlementWords(t.Env), verb, patience(t))
					continue
				}
				judgeEntitlementFirst(t, ex, verb, "labelled text/plain", http.StatusBadRequest, "the media type (step 3)")
			}
		},
	},
	{
		ID: "4.6/entitlement-before-inputs", Section: "4.6", Level: 2, Keyword: Must,
		Title: "an entitlement not in force is answered 403/503 ahead of malformed or incomplete inputs",
		Needs: []Need{NeedStatus, needEntitlementBars},
		Probe: func(t *T) {
			for _, verb := range verbsServed(t) {
				for _, r := range refusableBodies(t, verb) {
					judgeEntitlementFirst(t, t.Do(r), verb, "("+r.Note+")", http.StatusBadRequest, "the inputs (step 4), since no fix to the request can help")
				}
			}
		},
	},
	{
		ID: "4.6/inputs-before-credentials", Section: "4.6", Level: 2, Keyword: Must,
		Title: "a malformed or incomplete request answers 400, not 424, while a credential is missing",
		Needs: []Need{NeedStatus, needCredentialPublished},
		Probe: func(t *T) {
			if skipUnlessInForce(t) {
				return
			}
			for _, verb := range verbsServed(t) {
				for _, r := range refusableBodies(t, verb) {
					ex := t.Do(r)
					switch {
					case ex.Is(http.StatusBadRequest, "bad_request"):
					case skipPastGrace(t, ex):
						return
					case ex.Is(http.StatusFailedDependency, ""):
						t.Fail(ex, "POST %s (%s) answered %s: §4.6 judges the request (step 4, 400 bad_request) before the runner's own environment (step 5)",
							verb, r.Note, ex.Brief())
					default:
						t.Fail(ex, "POST %s (%s) answered %s, not 400 bad_request (§4.2, §4.6 step 4)", verb, r.Note, ex.Brief())
					}
				}
			}
		},
	},
	{
		ID: "4.6/entitlement-before-credentials", Section: "4.6", Level: 2, Keyword: Must,
		Title: "an entitlement not in force is answered 403/503 ahead of a missing credential's 424",
		Needs: []Need{NeedStatus, NeedDescribe, needEntitlementBars, needCredentialPublished},
		Probe: func(t *T) {
			// Safe without --execute: status publishes both a refused
			// entitlement and a missing credential, so a conforming runner
			// answers 403/503 and one checking credentials first 424.
			for _, verb := range verbsServed(t) {
				r, _, ok := completeRequest(t, verb)
				if !ok {
					return
				}
				r.Note = "complete and valid, to a runner whose entitlement is refused and whose credential is missing"
				judgeEntitlementFirst(t, t.Do(r), verb, "(complete, with a credential missing)", http.StatusFailedDependency, "the credentials (step 5)")
			}
		},
	},
	{
		ID: "4.6/missing-credential", Section: "4.6", Level: 2, Keyword: Must,
		Title: "a request valid in every other respect answers 424 missing_credential while a credential is unset",
		Needs: []Need{NeedStatus, NeedDescribe, needCredentialPublished},
		Probe: func(t *T) {
			if skipUnlessInForce(t) {
				return
			}
			for _, verb := range verbsServed(t) {
				r, unsure, ok := completeRequest(t, verb)
				if !ok {
					return
				}
				ex := t.Do(r)
				switch {
				case ex.Is(http.StatusFailedDependency, "missing_credential"):
				case ex.Is(http.StatusServiceUnavailable, "unavailable"):
					t.Undecided("POST %s answered 503 unavailable, a refusal (capacity, §4.5, or an entitlement past its grace) that may come before step 5; nothing to judge", verb)
					return
				case ex.Status >= 200 && ex.Status < 300, ex.Is(http.StatusInternalServerError, "agent_error"):
					t.Fail(ex, "status publishes a missing credential, yet POST %s with a complete request answered %s: the agent was started. §4.6 step 5 requires 424 missing_credential before it starts",
						verb, ex.Brief())
				case ex.Is(http.StatusBadRequest, "") && len(unsure) > 0:
					t.NotApplicable("POST %s answered %s; the request may break validation members the checker does not know (%s)", verb, ex.Brief(), strings.Join(unsure, ", "))
					return
				case ex.Is(http.StatusBadRequest, ""):
					t.Fail(ex, "POST %s, built to satisfy every declaration in describe, answered %s: either the runner refuses inputs its own describe admits, or it never reached §4.6 step 5 (424 missing_credential)",
						verb, ex.Brief())
				default:
					t.Fail(ex, "status publishes a missing credential; POST %s with a complete request answered %s, not 424 missing_credential (§4.6 step 5)",
						verb, ex.Brief())
				}
			}
		},
	},
	{
		ID: "4.6/names-missing", Section: "4.6", Level: 2, Keyword: Should,
		Title:  "a 424 names the unset variables in error.detail.missing",
		Needs:  []Need{NeedStatus, NeedDescribe, needCredentialPublished},
		Claims: []Claim{{Doc: "error", Path: "/error/detail/missing"}},
		Probe: func(t *T) {
			if skipUnlessInForce(t) {
				return
			}
			r, _, ok := completeRequest(t, "run")
			if !ok {
				return
			}
			ex := t.Do(r)
			if !ex.Is(http.StatusFailedDependency, "missing_credential") {
				t.SkipFor(ex, "run answered %s, not a 424 missing_credential to read (4.6/missing-credential judges that)", ex.Brief())
				return
			}
			body, _ := ex.JSON()
			schemaFindings(t, "error", ex, body)
			if t.Failed() {
				return
			}
			detail, _ := ex.ErrorDetail().(map[string]any)
			names, ok := stringList(detail["missing"])
			if !ok || len(names) == 0 {
				t.Fail(ex, "the 424 carries no error.detail.missing naming the unset variables (§4.6)")
				return
			}
			if want, ok := stringsAt(t.Env.Status.Obj, "credentials", "missing"); ok && len(want) > 0 {
				if !sameSet(names, want) {
					t.Fail(ex, "error.detail.missing is %s, while status.credentials.missing is %s: §4.6 has the two name the same variables",
						showList(names), showList(want))
				}
				return
			}
			declared := credentialNames(t.Env.Describe.Obj)
			for _, n := range names {
				if !slices.Contains(declared, n) {
					t.Fail(ex, "error.detail.missing names %q, which describe does not declare among its credentials (§4.6, §4.1.3)", n)
				}
			}
			t.Note("status publishes no credentials.missing; checked the names against describe's credentials")
		},
	},
}

// The postures the §4.6 rules apply to.
var (
	needEntitlementBars = Need{Name: "entitlement-not-in-force", Check: func(e *Env) string {
		if entitlementBars(e) {
			return ""
		}
		return fmt.Sprintf("applies where status reports the entitlement revoked, or unknown with no checked_at; this runner reports %s",
			show(Str(e.Status.Obj, "entitlement", "state")))
	}}
	needCredentialPublished = Need{Name: "credential-missing-published", Check: func(e *Env) string {
		if credentialPublishedMissing(e) {
			return ""
		}
		return "applies where status publishes a missing credential (credentials.missing, or state degraded beside credentials describe declares); " +
			"this runner publishes none, and a request it would accept could start its agent"
	}}
)

// skipUnlessInForce skips where step 2 would answer first: the entitlement
// rules judge those postures.
func skipUnlessInForce(t *T) bool {
	if entitlementBars(t.Env) {
		t.NotApplicable("status reports the entitlement %s, which §4.6 answers first (step 2); the 4.6/entitlement-* rules judge this posture", entitlementWords(t.Env))
		return true
	}
	return false
}

// skipPastGrace skips on a 503 unavailable from a runner whose entitlement
// is unknown with a checked_at: it may be past its grace (see entUndecided).
func skipPastGrace(t *T, ex *wire.Exchange) bool {
	if entitlementStance(t.Env) == entUndecided && ex.Is(http.StatusServiceUnavailable, "unavailable") {
		t.Undecided("status reports the entitlement unknown with a checked_at, and %s answered 503 unavailable: the runner may be past its grace (§5.7), which §4.6 answers first",
			ex.RequestLine())
		return true
	}
	return false
}

// verbsAboveOrSkip are the verbs above the declared level; where there are
// none it skips the rule.
func verbsAboveOrSkip(t *T) []string {
	var out []string
	for _, verb := range []string{"run", "stream"} {
		if aboveDeclaredLevel(t.Env, verb) {
			out = append(out, verb)
		}
	}
	switch {
	case t.Env.Level == 0:
		t.NotApplicable("status declares no level, so no verb is known to sit above it")
	case len(out) == 0:
		t.NotApplicable("the runner declares Level %d: no verb sits above it", t.Env.Level)
	}
	return out
}

// verbsServed are the POST verbs the declared level serves (§3): run, and
// stream at Level 3.
func verbsServed(t *T) []string {
	var out []string
	for _, verb := range []string{protocol.Run, protocol.Stream} {
		if t.Env.Level >= protocol.LevelOf(verb) {
			out = append(out, verb)
		}
	}
	return out
}

// plainLabel is the label a browser gives a string body it posts
// cross-origin without a preflight (§2.3).
const plainLabel = "text/plain;charset=UTF-8"

// judgeEntitlementFirst judges the answer to a request sent (what) to a runner
// whose entitlement is not in force: §4.6's step 2 refusal must win; an
// answer with the status of a later step (later, stated as step) lost the
// order, anything else is simply the wrong answer.
func judgeEntitlementFirst(t *T, ex *wire.Exchange, verb, what string, later int, step string) {
	switch {
	case stepTwoAnswer(ex):
		readFirstNote(t, ex)
	case ex.Status == later:
		t.Fail(ex, "with the entitlement %s, POST %s %s answered %s: §4.6 answers the entitlement (step 2: 403 not_entitled or 503 unavailable) before %s",
			entitlementWords(t.Env), verb, what, ex.Brief(), step)
	default:
		t.Fail(ex, "with the entitlement %s, POST %s %s answered %s, not 403 not_entitled or 503 unavailable (§4.6 step 2)",
			entitlementWords(t.Env), verb, what, ex.Brief())
	}
}

// headFirstPost is withheldPost for the order rules: the body follows if the
// head alone got no answer, since only the media-type refusal itself must
// come before the body is read (§2.3, §4.2); the level and the entitlement
// may be decided after it, as long as they win.
func headFirstPost(t *T, verb, contentType, note string) *wire.Exchange {
	return t.HeadFirst(wire.Prefix+verb, labelled(contentType), filler, note)
}

// readFirstNote says that the runner read the body before its answer.
func readFirstNote(t *T, ex *wire.Exchange) {
	if ex.BodySentLate {
		t.Note("POST %s answered only once its body had been sent: allowed, as only the media-type refusal must precede reading the body", ex.URL)
	}
}

// patience is how long a probe waited before it took a silence a
// conforming runner never leaves as shown.
func patience(t *T) time.Duration { return t.Session().Patience }

// filler is a body nobody could execute: not JSON, and too big to be
// drained quietly by a server before it answers (see wire.Client.Withheld).
var filler = bytes.Repeat([]byte("x"), announced)

// notAnObject is a body every runner refuses and none could execute: inputs
// is a string, not a map (§4.2). The string names the rule that sent it, so
// the evidence says which probe it was.
func notAnObject(t *T, verb string) wire.Request {
	return runRequest(verb, "conformance probe "+t.Rule.ID, "", "inputs is a string, not a map: refusable by every runner, executable by none")
}

// refusableBodies are the request-level refusals steps 2 and 4 are compared
// on: a malformed body, and, where describe declares a required input, a
// body lacking it.
func refusableBodies(t *T, verb string) []wire.Request {
	out := []wire.Request{notAnObject(t, verb)}
	if d, ok := readInputs(t.Env.Describe.Obj).firstRequired(); ok {
		r := wire.PostJSON(verb, `{"inputs": {}}`)
		r.Note = fmt.Sprintf("the required input %q is absent", d.key)
		out = append(out, r)
	} else if verb == "run" {
		t.Note("describe declares no required input (or was not read): probed with a malformed body only")
	}
	return out
}

// completeRequest is a POST to verb whose inputs satisfy describe. Where the
// checker cannot build one it skips and returns ok false; unsure lists
// validation members it does not recognise.
func completeRequest(t *T, verb string) (r wire.Request, unsure []string, ok bool) {
	inputs, unsure, why := readInputs(t.Env.Describe.Obj).complete("conformance probe " + t.Rule.ID)
	if why != "" {
		t.NotApplicable("cannot build a request valid in every other respect: %s", why)
		return r, nil, false
	}
	return runRequest(verb, inputs, "", "complete and valid per describe; sent only because status publishes a missing credential"), unsure, true
}

func sameSet(a, b []string) bool {
	as, bs := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(as)
	sort.Strings(bs)
	return strings.Join(as, "\x00") == strings.Join(bs, "\x00")
}

func showList(l []string) string { return "[" + strings.Join(l, ", ") + "]" }
