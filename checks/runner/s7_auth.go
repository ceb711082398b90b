package runner

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// §7 Security considerations: a runner's own inbound authentication, for a
// runner bound off loopback (second bullet), and the absence of it on one
// that requires nothing.
//
// Where describe and status stand. §7 leaves the scheme, and the verbs it
// guards, to the runner: the exposure it names is run, and it speaks of an
// unauthenticated reader of status. So a 200 to an unauthenticated GET of
// describe or status is accepted (and noted); what is judged is that every
// refusal for want of authentication is 401 unauthorized, and that run and
// stream are refused.
//
// A verb above the declared level. Both §3 (501 for a verb above the level)
// and §7 (401 for a request failing authentication) are stated without
// exception, and the spec orders neither against the other. This rule asks
// for 401 and also accepts 501 not_implemented there: a 501 is true whatever
// credential the caller holds (the same reason §4.6 puts the entitlement
// refusal first), so it sends no one off to fix the wrong thing. A 400 for a
// malformed body is not accepted: it judges the content of a request from a
// caller not yet admitted, and leaves the missing credential to be
// discovered on the next round trip.
var section7 = []*Rule{
	{
		ID: "7/unauthorized", Section: "7", Level: 1, Keyword: Must,
		Title: "a request failing the runner's own authentication is refused 401 unauthorized",
		Needs: []Need{NeedAuth},
		Probe: unauthorizedProbe,
	},
	{
		ID: "7/no-token-in-documents", Section: "7", Level: 1, Keyword: MustNot,
		Title: "neither describe nor status carries the runner's inbound credential",
		Needs: []Need{NeedAuth, NeedStatus, NeedDescribe},
		Probe: func(t *T) {
			secrets := inboundSecrets(t.Env.Client.HeaderValue("Authorization"))
			for _, d := range []struct {
				name string
				doc  *Doc
			}{{"describe", t.Env.Describe}, {"status", t.Env.Status}} {
				if at := findSecret(d.doc, secrets); at != "" {
					t.Fail(redactedCopy(d.doc.Ex, secrets), "%s carries the inbound credential given in --header Authorization (at %s); §7 keeps it out of both documents",
						d.name, at)
				}
			}
			if len(secrets) > 0 && len(secrets[len(secrets)-1]) < minSecretLen {
				t.Note("the credential is shorter than %d characters, so only whole string values equal to it were looked for", minSecretLen)
			}
		},
	},
	{
		ID: "7/stray-authorization", Section: "7", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.1",
		Title: "a runner requiring no authentication answers as usual when sent an Authorization header",
		Needs: []Need{NeedNoAuth},
		Probe: func(t *T) {
			requiresNone(t)
			for _, verb := range []string{"describe", "status"} {
				r := wire.Get(verb)
				r.Header = http.Header{"Authorization": {"Bearer stray-" + randomHex()}}
				r.Note = "a made-up bearer token the runner never asked for"
				ex := t.Do(r)
				plain := docOf(t, verb).Ex
				switch {
				case ex.Status == http.StatusUnauthorized:
					t.Fail(ex, "GET %s carrying a stray Authorization header was answered %s; §2.1 gives 401 unauthorized only to a runner requiring authentication of its own (§7), and this one requires none",
						verb, ex.Brief())
				case ex.Status != plain.Status:
					t.Warn(ex, "GET %s was answered %s with a stray Authorization header and %s without; §7 has a runner requiring nothing answer as it always does (inferred: §7's sentence says the bundle a buyer runs is unchanged, and a careful reader may take it as no promise about a header it never asked for)",
						verb, ex.Brief(), plain.Brief())
				}
			}
		},
	},
}

// requiresNone skips a rule for a runner requiring no authentication as
// not applicable where this one requires some: where a document, or a run
// or stream with a body nobody could run, sent without Authorization as
// every request of a check without --header is, was refused 401
// unauthorized. §7 leaves the verbs a runner guards to it, and a runner
// guarding only run and stream answers the documents to anyone; without
// this, the rule would pass on the premise that it requires nothing.
func requiresNone(t *T) {
	for _, verb := range []string{"describe", "status"} {
		if ex := docOf(t, verb).Ex; refusedUnauthenticated(ex) {
			t.Cite(ex)
			t.NotApplicable("GET %s without Authorization was answered 401 unauthorized: this runner requires inbound authentication (§7), and the rule is for one requiring none", verb)
		}
	}
	for _, verb := range []string{"run", "stream"} {
		r := wire.PostJSON(verb, malformedRunBody)
		r.Note = "no Authorization, a body nobody could run: does the runner require authentication here?"
		if ex := t.Do(r); refusedUnauthenticated(ex) {
			t.NotApplicable("POST %s without Authorization was answered 401 unauthorized: this runner requires inbound authentication there (§7), so the rule, for a runner requiring none, does not apply; the rules it hides need --header", verb)
		}
	}
}

// malformedRunBody is refused by every runner that reads it: inputs is not
// a map. Nothing can run from it.
const malformedRunBody = `{"inputs": "probe"}`

func unauthorizedProbe(t *T) {
	wrong := "Bearer wrong-" + randomHex()
	refused := 0
	var open, above []string
	for _, verb := range []string{"describe", "status", "run", "stream"} {
		for _, omit := range []bool{true, false} {
			r := wire.Get(verb)
			if verb == "run" || verb == "stream" {
				r = wire.PostJSON(verb, malformedRunBody)
			}
			how := "without Authorization"
			if omit {
				r.OmitExtra = true
				r.Note = "the configured --header withheld; body unrunnable"
			} else {
				how = "with a wrong Authorization"
				if r.Header == nil {
					r.Header = http.Header{}
				}
				r.Header.Set("Authorization", wrong)
				r.Note = "Authorization replaced by a made-up bearer token; body unrunnable"
			}
			ex := t.Do(r)
			req := fmt.Sprintf("%s %s %s", r.Method, verb, how)
			switch {
			case ex.Is(http.StatusUnauthorized, "unauthorized"):
				refused++
			case !ex.Answered():
				t.Fail(ex, "%s got no answer; §7 requires 401 unauthorized", req)
			case (verb == "describe" || verb == "status") && ex.Status == http.StatusOK:
				open = append(open, req)
			case aboveDeclaredLevel(t.Env, verb) && ex.Is(http.StatusNotImplemented, "not_implemented"):
				above = append(above, req)
			case ex.Status == http.StatusBadRequest:
				t.Fail(ex, "%s was answered %s: the runner judged the body of a request it had not authenticated; §7 requires 401 unauthorized", req, ex.Brief())
			default:
				t.Fail(ex, "%s was answered %s; §7 requires 401 unauthorized in the §2.1 envelope", req, ex.Brief())
			}
		}
	}
	if len(open) > 0 {
		t.Note("answered 200, which §7 permits for the documents: %s", strings.Join(open, "; "))
	}
	if len(above) > 0 {
		t.Note("answered 501 not_implemented for a verb above the declared level, accepted beside 401: %s", strings.Join(above, "; "))
	}
	if refused == 0 && !t.Failed() {
		t.NotApplicable("nothing was refused for want of authentication: the documents are open and run and stream sit above the declared level")
	}
}

// minSecretLen is the shortest credential looked for as a substring; a
// shorter one would be found by coincidence in ordinary text.
const minSecretLen = 8

// inboundSecrets are the forms of the configured Authorization value to look
// for: the value itself and, after a scheme, the credential alone. Longest
// first.
func inboundSecrets(value string) []string {
	value = strings.TrimSpace(value)
	out := []string{value}
	if _, cred, ok := strings.Cut(value, " "); ok {
		if cred = strings.TrimSpace(cred); cred != "" {
			out = append(out, cred)
		}
	}
	if value == "" {
		return nil
	}
	return out
}

// findSecret returns the JSON pointer in the document where a secret first
// appears, or "". It reads decoded strings (keys and values, see
// walkStrings), so JSON escaping hides nothing, and the raw body besides.
func findSecret(d *Doc, secrets []string) string {
	hit := func(s string) bool {
		for _, sec := range secrets {
			if s == sec || (len(sec) >= minSecretLen && strings.Contains(s, sec)) {
				return true
			}
		}
		return false
	}
	if v, err := d.Ex.JSON(); err == nil {
		first := ""
		walkStrings(v, "", func(at, s string) {
			if first == "" && hit(s) {
				first = at
			}
		})
		if first != "" {
			return first
		}
	}
	for _, sec := range secrets {
		if len(sec) >= minSecretLen && bytes.Contains(d.Ex.Body, []byte(sec)) {
			return "somewhere in the raw body"
		}
	}
	return ""
}
