package runner

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// strangerOrigin is an origin no runner is configured with: .invalid is
// reserved and never resolves (RFC 6761).
const strangerOrigin = "https://conformance-stranger.invalid"

// The response headers §2.3 is about.
const (
	allowOrigin      = "Access-Control-Allow-Origin"
	allowMethods     = "Access-Control-Allow-Methods"
	allowHeaders     = "Access-Control-Allow-Headers"
	allowCredentials = "Access-Control-Allow-Credentials"
)

// §2.3 Browser clients: the preflight, the headers that admit an origin,
// and the origins a runner must never admit. (The media-type rules of §2.3
// live in s2_3_media.go.)
//
// Several defects would show in more than one rule; each is reported once:
//   - a preflight left unhandled (no answer, 404, 405, a bare error) is
//     2.3/preflight-*'s; the other rules set that answer aside;
//   - an allowed origin's preflight on run or stream that is refused, or
//     answered 2xx without Access-Control-Allow-Origin (a silent refusal),
//     is 2.3/preflight-unconditional's; the same on describe or status (a
//     framework's default OPTIONS, say) is 2.3/preflight-reads'; the header
//     rules judge only the answers that admit the origin: 2xx, and some
//     Access-Control-Allow-Origin;
//   - Access-Control-Allow-Origin: * is 2.3/no-wildcard's; the rules about
//     which origins are admitted judge echoes of the origin sent.
var section2_3 = []*Rule{
	preflightHandled("2.3/preflight-run", Must, "run"),
	preflightHandled("2.3/preflight-stream", Must, "stream"),
	preflightHandled("2.3/preflight-reads", Should, "describe", "status"),
	{
		ID: "2.3/preflight-unconditional", Section: "2.3", Level: 1, Keyword: MustNot,
		Title: "an allowed origin's preflight on run and stream admits it (2xx, with Access-Control-Allow-Origin) with no credential, whatever the entitlement (the level's part is 2.3/preflight-any-level's)",
		Needs: []Need{NeedOrigin},
		Probe: probeUnconditional,
	},
	{
		ID: "2.3/preflight-any-level", Section: "2.3", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.3",
		Title: "an allowed origin's preflight on a verb above the runner's level admits it all the same",
		Needs: []Need{NeedOrigin},
		Probe: probeAnyLevel,
	},
	{
		ID: "2.3/allow-origin-echo", Section: "2.3", Level: 1, Keyword: Must, Binding: Chain, Chain: "MUST ride 'as well' as the preflight",
		Title: "a preflight admitting an origin echoes it, octet for octet, in Access-Control-Allow-Origin",
		Needs: []Need{NeedOrigin},
		Probe: func(t *T) {
			for _, a := range admitted(t, "run", "describe") {
				if why := echoes(a.ex, t.Env.Origin); why != "" {
					t.Fail(a.ex, "OPTIONS %s from %s answered %d, and %s; §2.3 wants the requesting origin repeated exactly",
						a.verb, t.Env.Origin, a.ex.Status, why)
				}
			}
		},
	},
	{
		ID: "2.3/allow-methods", Section: "2.3", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.3",
		Title: "Access-Control-Allow-Methods admits POST on run/stream and GET on describe/status",
		Needs: []Need{NeedOrigin},
		Probe: probeAllowMethods,
	},
	allowsHeader("2.3/allow-headers-content-type", Contract, "Content-Type",
		"a preflight admitting an origin", []string{"run", "describe"}),
	allowsHeader("2.3/allow-headers-idempotency", Direct, "Idempotency-Key",
		"the preflight of a runner declaring status.idempotent_retry (§4.2)", []string{"run", "stream"}, needIdempotentRetry),
	allowsHeader("2.3/allow-headers-authorization", Direct, "Authorization",
		"the preflight of a runner requiring its own inbound authentication (§7)", []string{"run", "describe"}, NeedAuth),
	{
		ID: "2.3/no-needless-authorization", Section: "2.3", Level: 1, Keyword: ShouldNot,
		Title: "a runner that requires no inbound authentication does not admit Authorization in its preflight",
		Needs: []Need{NeedOrigin, NeedNoAuth},
		Probe: func(t *T) {
			// A runner may guard only run and stream (§7): ask run first,
			// without credentials, before calling Authorization needless.
			if t.Env.Level >= protocol.LevelOf(protocol.Run) {
				r := wire.PostJSON("run", `{"inputs": "conformance probe 2.3/no-needless-authorization"}`)
				r.Note = "is run guarded by inbound authentication? a malformed body, no credential"
				if ex := t.Do(r); ex.Is(http.StatusUnauthorized, "") {
					t.NeedsOption("POST run answered 401 without a credential: the runner guards run with inbound authentication (§7), so naming Authorization is required of it; give --header to check 2.3/allow-headers-authorization")
					return
				}
			}
			for _, a := range admitted(t, "run", "describe") {
				if hasToken(a.ex.Header, allowHeaders, "Authorization", true) {
					t.Fail(a.ex, "OPTIONS %s from %s lists Authorization in %s (%q), yet the runner was reached without one; §2.3: naming it makes every describe preflight for a credential nobody reads",
						a.verb, t.Env.Origin, allowHeaders, strings.Join(a.ex.Header.Values(allowHeaders), ", "))
				}
			}
		},
	},
	{
		ID: "2.3/vary-origin", Section: "2.3", Level: 1, Keyword: Must, Binding: Chain, Chain: "MUST ride 'as well' as the preflight",
		Title: "a preflight admitting an origin carries Vary: Origin",
		Needs: []Need{NeedOrigin},
		Probe: func(t *T) {
			for _, a := range admitted(t, "run", "describe") {
				if !variesByOrigin(a.ex.Header) {
					t.Fail(a.ex, "OPTIONS %s from %s answered %d with Vary %q, which does not name Origin (§2.3)",
						a.verb, t.Env.Origin, a.ex.Status, strings.Join(a.ex.Header.Values("Vary"), ", "))
				}
			}
		},
	},
	{
		ID: "2.3/actual-response-cors", Section: "2.3", Level: 1, Keyword: Must,
		Title: "actual answers to an allowed origin carry its echo and Vary: Origin: reads, refusals, and with --execute the check's shared run and stream",
		Needs: []Need{NeedOrigin},
		// It reads the shared runs where --execute allows them, so it runs
		// with the rules that start the agent, after the probing ones.
		Agent: true,
		Probe: probeActualResponses,
	},
	{
		ID: "2.3/no-wildcard", Section: "2.3", Level: 1, Keyword: MustNot, Evidence: true,
		Title: "no answer carries Access-Control-Allow-Origin: *",
		Probe: probeNoWildcard,
	},
	{
		ID: "2.3/no-unconfigured-origin", Section: "2.3", Level: 1, Keyword: MustNot,
		Title: "an origin the runner was not configured with, near misses of the allowed one included, is never admitted",
		Probe: probeUnconfigured,
	},
	{
		ID: "2.3/null-origin", Section: "2.3", Level: 1, Keyword: MustNot,
		Title: "Origin: null is never admitted",
		Probe: func(t *T) {
			exs := []*wire.Exchange{
				sentPreflight(t, "run", "null"),
				t.Do(withOrigin(wire.Get("describe"), "null", "a read from an opaque origin (sandbox, file://)")),
			}
			// A runner may decide the origin on POST answers apart from the
			// rest, and a sandboxed page's text/plain POST needs no
			// preflight: a body that is not an object of inputs keeps the
			// call refusable.
			for _, verb := range []string{"run", "stream"} {
				if t.Env.Level >= protocol.LevelOf(verb) {
					exs = append(exs, t.Do(withOrigin(wire.PostJSON(verb, malformedRunBody), "null", "a "+verb+" from an opaque origin whose inputs is not an object: refused by any runner")))
				}
			}
			for _, ex := range exs {
				judgeAdmission(t, ex, "null", "the opaque origin of sandboxed and file:// documents",
					"§2.3: null is no origin a configuration can name, and admitting it admits every such document")
			}
		},
	},
	{
		ID: "2.3/no-allow-credentials", Section: "2.3", Level: 1, Keyword: ShouldNot, Evidence: true,
		Title: "no answer carries Access-Control-Allow-Credentials",
		Probe: probeNoCredentials,
	},
	{
		ID: "2.3/refused-preflight-204", Section: "2.3", Level: 1, Keyword: Should,
		Title: "a refused origin's preflight is answered 204 without Access-Control-Allow-Origin, not an error",
		Probe: probeRefusedPreflight,
	},
	{
		ID: "2.3/refused-read-answered", Section: "2.3", Level: 1, Keyword: Must, Binding: Inferred,
		Title: "a refused origin's GET of describe or status is answered as the same read without Origin is, only without Access-Control-Allow-Origin (inferred: it warns)",
		Probe: probeRefusedRead,
	},
}

// isPost reports whether verb is called with POST (run, stream).
func isPost(verb string) bool { return verb == "run" || verb == "stream" }

// preflight is the OPTIONS a browser sends before calling verb from origin.
// It asks for the request headers a page would send: Content-Type, plus
// Authorization where --header gives one, plus Idempotency-Key on run and
// stream where status declares idempotent_retry — so that a runner echoing
// the requested headers is judged on the ones that matter. Like a browser's,
// it carries none of the --header values themselves: a browser never puts
// a credential on a preflight.
func preflight(t *T, verb, origin string) wire.Request {
	method := http.MethodGet
	if isPost(verb) {
		method = http.MethodPost
	}
	ask := []string{"content-type"}
	if t.Env.Client.HasHeader("Authorization") {
		ask = append(ask, "authorization")
	}
	if isPost(verb) && t.Env.Status.Obj != nil && t.Env.Status.Obj["idempotent_retry"] == true {
		ask = append(ask, "idempotency-key")
	}
	sort.Strings(ask)
	h := http.Header{}
	h.Set("Origin", origin)
	h.Set("Access-Control-Request-Method", method)
	h.Set("Access-Control-Request-Headers", strings.Join(ask, ","))
	return wire.Request{Method: http.MethodOptions, Path: wire.Prefix + verb, Header: h, OmitExtra: true,
		Note: fmt.Sprintf("a browser's preflight for %s %s from %s, without the --header values", method, verb, origin)}
}

// sentPreflight is the preflight for verb from origin (preflight), sent
// once per run and cited by every rule that reads it: a browser asks the
// same question the same way whichever rule models it, and a dozen rules
// read the allowed origin's preflight on run.
func sentPreflight(t *T, verb, origin string) *wire.Exchange {
	e := t.Env
	key := verb + " " + origin
	e.mu.Lock()
	if e.preflights == nil {
		e.preflights = map[string]*sharedExchange{}
	}
	sh := e.preflights[key]
	if sh == nil {
		sh = &sharedExchange{}
		e.preflights[key] = sh
	}
	e.mu.Unlock()
	sh.once.Do(func() { sh.ex = t.Session().Do(t.Ctx, preflight(t, verb, origin)) })
	t.Cite(sh.ex)
	return sh.ex
}

// sharedExchange is an exchange sent once for every rule that reads it.
type sharedExchange struct {
	once sync.Once
	ex   *wire.Exchange
}

// withOrigin adds an Origin header to r.
func withOrigin(r wire.Request, origin, note string) wire.Request {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Origin", origin)
	r.Header, r.Note = h, note+", Origin "+origin
	return r
}

// unhandled says how a preflight answer shows the method was left
// unhandled, or "" where it was answered: a 2xx, or a refusal in §2.1's
// envelope, which at least says what it is.
func unhandled(ex *wire.Exchange) string {
	// What §2.3 forbids is leaving the method unhandled, and that has a few
	// signatures: no answer at all, and the statuses a framework gives a
	// method or path nobody registered. A refusal in any other status is
	// an answer, envelope or none: §2.1 exempts preflights from the
	// envelope, and the 204 is a SHOULD (2.3/refused-preflight-204).
	switch {
	case !ex.Answered():
		return ex.StatusLine()
	case ex.Status == http.StatusMethodNotAllowed:
		return "405, a framework's answer for a method nobody registered"
	case ex.Status == http.StatusNotImplemented && ex.ErrorCode() != "not_implemented":
		// A runner's own 501 not_implemented is its level answering,
		// which 2.3/preflight-unconditional judges; any other 501 is a
		// server's for a method it does not support.
		return "501, a server's answer for a method it does not support"
	case ex.Status == http.StatusNotFound:
		return "404, as if the path were not there"
	}
	return ""
}

// preflightHandled: OPTIONS on each verb is answered, for the allowed origin
// (when --origin names one) and for a stranger. On describe and status the
// allowed origin's answer must also admit it: a framework's default OPTIONS
// (2xx, Allow, no CORS header) is a preflight the browser counts as failed.
// (On run and stream that is 2.3/preflight-unconditional's to judge.)
func preflightHandled(id string, kw Keyword, verbs ...string) *Rule {
	return &Rule{
		ID: id, Section: "2.3", Level: 1, Keyword: kw,
		Title: fmt.Sprintf("OPTIONS on %s is answered, for an allowed and a refused origin alike", strings.Join(verbs, " and ")),
		Probe: func(t *T) {
			origins := []string{strangerOrigin}
			if t.Env.Origin != "" {
				origins = []string{t.Env.Origin, strangerOrigin}
			} else {
				t.Note("without --origin, only a refused origin's preflight is tried")
			}
			for _, verb := range verbs {
				for _, o := range origins {
					ex := sentPreflight(t, verb, o)
					if why := unhandled(ex); why != "" {
						t.Fail(ex, "OPTIONS %s from %s got %s; §2.3 wants the preflight answered (a 2xx, or a refusal in any other status), not left unhandled",
							verb, o, why)
					} else if !isPost(verb) && o == t.Env.Origin && is2xx(ex) && len(ex.Header.Values(allowOrigin)) == 0 {
						t.Fail(ex, "OPTIONS %s from the allowed origin %s answered %d without %s, as a framework's default OPTIONS does: the browser counts that preflight as failed, so a page whose GET needs one cannot read %s; §2.3 asks that describe and status answer the preflight too, with the allowed origin's headers%s",
							verb, o, ex.Status, allowOrigin, verb, originHint(t))
					}
				}
			}
		},
	}
}

func probeUnconditional(t *T) {
	var state string
	if t.Env.Status.Obj != nil {
		state = Str(t.Env.Status.Obj, "entitlement", "state")
	}
	for _, verb := range []string{"run", "stream"} {
		ex := sentPreflight(t, verb, t.Env.Origin)
		var when []string
		if t.Env.Client.HasHeader("Authorization") {
			when = append(when, "without the runner's Authorization")
		}
		if state != "" && state != "not_required" && state != "active" {
			when = append(when, "while status reports entitlement "+state)
		}
		levelOnly := len(when) == 0
		if need := protocol.LevelOf(verb); t.Env.Level != 0 && t.Env.Level < need {
			when = append(when, fmt.Sprintf("to a Level %d runner (%s is Level %d)", t.Env.Level, verb, need))
		} else {
			levelOnly = false
		}
		if levelOnly && !admits(ex) {
			t.Note("OPTIONS %s answered %s to a Level %d runner, with no credential or entitlement in question: 2.3/preflight-any-level judges that", verb, ex.Brief(), t.Env.Level)
			continue
		}
		cond := ""
		if len(when) > 0 {
			cond = " " + strings.Join(when, ", ")
		}
		switch {
		case !is2xx(ex):
			t.Fail(ex, "OPTIONS %s from the allowed origin %s%s answered %s, not a 2xx; §2.3: a preflight needs no credential or entitlement, and its answer does not depend on the level",
				verb, t.Env.Origin, cond, ex.Brief())
		case len(ex.Header.Values(allowOrigin)) == 0:
			t.Fail(ex, "OPTIONS %s from the allowed origin %s%s answered %d without %s, which a browser takes as a refusal: the origin is refused in silence; §2.3 has a preflight from an allowed origin carry its echo, with no credential or entitlement and at every level%s",
				verb, t.Env.Origin, cond, ex.Status, allowOrigin, originHint(t))
		case cond != "":
			t.Note("OPTIONS %s answered %d%s", verb, ex.Status, cond)
		}
	}
}

// originHint asks whether --origin is configured at all, where no answer
// to it so far has carried Access-Control-Allow-Origin: a runner that was
// never told of the origin answers it exactly so, breaking no rule.
func originHint(t *T) string {
	for _, ex := range t.Session().Exchanges() {
		if ex.ReqHeader.Get("Origin") == t.Env.Origin && len(ex.Header.Values(allowOrigin)) > 0 {
			return ""
		}
	}
	return fmt.Sprintf(" (is --origin %s an origin this runner is configured to allow?)", t.Env.Origin)
}

// preflightAnswer is a preflight from the allowed origin that admits it.
type preflightAnswer struct {
	verb string
	ex   *wire.Exchange
}

// admitted sends the allowed origin's preflight to each verb and returns
// the answers that admit it: 2xx with some Access-Control-Allow-Origin, the
// ones §2.3's header table binds. Any other answer is set aside with a
// note: a refusal, or a 2xx without the header, is 2.3/preflight-unconditional's
// on run and stream and 2.3/preflight-reads' on describe and status. With
// none admitted, the rule is skipped.
func admitted(t *T, verbs ...string) []preflightAnswer {
	var out []preflightAnswer
	for _, verb := range verbs {
		ex := sentPreflight(t, verb, t.Env.Origin)
		owner := "2.3/preflight-reads"
		if isPost(verb) {
			owner = "2.3/preflight-unconditional"
		}
		switch {
		case !is2xx(ex):
			t.Note("OPTIONS %s from %s answered %s: not an admitting answer, set aside (2.3/preflight-* judge it)", verb, t.Env.Origin, ex.Brief())
		case len(ex.Header.Values(allowOrigin)) == 0:
			t.Note("OPTIONS %s from %s answered %d without %s: it admits nothing, so there are no headers to judge (%s judges it)",
				verb, t.Env.Origin, ex.Status, allowOrigin, owner)
		default:
			out = append(out, preflightAnswer{verb, ex})
		}
	}
	if len(out) == 0 {
		t.NeedsOption("no preflight from --origin %s admitted it (2xx with %s), so no admitting answer to judge; is --origin one the runner allows?", t.Env.Origin, allowOrigin)
	}
	return out
}

// tokens is every comma-separated member of every value of the header.
func tokens(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// hasToken reports whether the header's list holds want; fold compares
// case-insensitively (header names), otherwise exactly (method tokens).
func hasToken(h http.Header, name, want string, fold bool) bool {
	for _, p := range tokens(h, name) {
		if p == want || (fold && strings.EqualFold(p, want)) {
			return true
		}
	}
	return false
}

// wildcardHonoured reports whether a "*" in Allow-Methods or Allow-Headers
// counts as a wildcard: under the Fetch standard it does for a request
// without credentials, which is every request §2.3 has in mind, unless the
// answer also admits credentials.
func wildcardHonoured(h http.Header, name string) bool {
	return hasToken(h, name, "*", false) && !strings.EqualFold(strings.TrimSpace(h.Get(allowCredentials)), "true")
}

func variesByOrigin(h http.Header) bool {
	// Vary: * makes every answer uncacheable, which is what Vary: Origin is for.
	return hasToken(h, "Vary", "Origin", true) || hasToken(h, "Vary", "*", false)
}

// echoes says how the answer fails to echo origin in
// Access-Control-Allow-Origin, or "" where it does.
func echoes(ex *wire.Exchange, origin string) string {
	got := ex.Header.Values(allowOrigin)
	switch {
	case len(got) == 0:
		return "it carries no " + allowOrigin
	case len(got) > 1:
		return fmt.Sprintf("it carries %s %d times (%q), which a browser rejects", allowOrigin, len(got), strings.Join(got, ", "))
	case got[0] != origin:
		return fmt.Sprintf("%s is %q", allowOrigin, got[0])
	}
	return ""
}

// probeAllowMethods holds each admitting preflight to the method the page
// will actually send: POST on run and stream, GET on describe and status.
// §2.3's table lists OPTIONS beside it, but a browser never checks the list
// for OPTIONS, and common CORS middleware (the cors npm package, for one)
// leaves it out by default, so its absence is only noted.
func probeAllowMethods(t *T) {
	for _, a := range admitted(t, "run", "stream", "describe", "status") {
		want := http.MethodGet
		if isPost(a.verb) {
			want = http.MethodPost
		}
		if wildcardHonoured(a.ex.Header, allowMethods) {
			t.Note("OPTIONS %s: %s is *, which a browser honours for a request without credentials", a.verb, allowMethods)
			continue
		}
		got := strings.Join(a.ex.Header.Values(allowMethods), ", ")
		if !hasToken(a.ex.Header, allowMethods, want, false) {
			t.Fail(a.ex, "OPTIONS %s from %s: %s is %q, without %s; §2.3's table lists %s, OPTIONS (method names are case-sensitive). Today's browsers let the %s through regardless, %s being a CORS-safelisted method they do not look up in the header, so nothing breaks yet; a client or proxy reading the header as written refuses it",
				a.verb, t.Env.Origin, allowMethods, got, want, want, a.verb, want)
		} else if !hasToken(a.ex.Header, allowMethods, http.MethodOptions, false) {
			t.Note("OPTIONS %s: %s is %q, without the OPTIONS §2.3's table lists; harmless, since a browser only looks for the method it will send", a.verb, allowMethods, got)
		}
	}
}

// allowsHeader: the allowed origin's preflight on verbs lists header in
// Access-Control-Allow-Headers. Authorization is never covered by "*"
// (the Fetch standard names it explicitly), the others are.
func allowsHeader(id string, b Binding, header, who string, verbs []string, needs ...Need) *Rule {
	chain := ""
	if b == Contract {
		chain = "§2.3" // the header table of an admitting preflight
	}
	return &Rule{
		ID: id, Section: "2.3", Level: 1, Keyword: Must, Binding: b, Chain: chain,
		Title: fmt.Sprintf("%s names %s in Access-Control-Allow-Headers", who, header),
		Needs: append([]Need{NeedOrigin}, needs...),
		Probe: func(t *T) {
			for _, a := range admitted(t, verbs...) {
				if hasToken(a.ex.Header, allowHeaders, header, true) {
					continue
				}
				if header != "Authorization" && wildcardHonoured(a.ex.Header, allowHeaders) {
					t.Note("OPTIONS %s: %s is *, which a browser honours for %s", a.verb, allowHeaders, header)
					continue
				}
				t.Fail(a.ex, "OPTIONS %s from %s: %s is %q, which does not name %s; §2.3 requires it for %s, since a browser sends no header its preflight did not admit",
					a.verb, t.Env.Origin, allowHeaders, strings.Join(a.ex.Header.Values(allowHeaders), ", "), header, who)
			}
		},
	}
}

// refusableRun is a run body nothing can execute: inputs is not an object.
const refusableRun = `{"inputs": "conformance probe"}`

// The answers 2.3/actual-response-cors judges, as its findings name them
// (its clauses' marks).
const (
	corsRead         = "a cross-origin read"
	corsRefusal      = "a run refusable by any runner, its inputs not an object"
	corsSharedRun    = "the valid run the check shares"
	corsSharedStream = "the valid stream the check shares"
)

// probeActualResponses judges the head of every actual answer to the
// allowed origin it can have without starting the agent: describe,
// status and a refusable run; and, where --execute allows runs, the
// check's ordinary run and stream, which go with that Origin (runfacts.go),
// so a success is judged at no extra start. A browser discards any answer
// without the echo, a result included, with the agent having run (§2.3).
func probeActualResponses(t *T) {
	post := wire.PostJSON("run", refusableRun)
	for _, c := range []struct {
		r    wire.Request
		what string
	}{
		{wire.Get("describe"), corsRead},
		{wire.Get("status"), corsRead},
		{post, corsRefusal},
	} {
		judgeActual(t, t.Do(withOrigin(c.r, t.Env.Origin, c.what)), c.what)
	}
	if !t.Env.Execute {
		t.Note("without --execute no run succeeds, so only reads and refusals are judged")
		return
	}
	for _, s := range []struct {
		fact *engine.Fact[*Env, *watchedRun]
		verb string
		what string
	}{{ordinaryRun, protocol.Run, corsSharedRun}, {ordinaryStream, protocol.Stream, corsSharedStream}} {
		if t.Env.Level < protocol.LevelOf(s.verb) {
			continue
		}
		w, why := s.fact.Want(t)
		switch {
		case why != "":
			t.Note("%s was not judged: %s", s.what, why)
		case w == nil || !w.ex.Answered():
			t.Note("%s got no answer whose head could be judged", s.what)
		default:
			judgeActual(t, w.ex, s.what)
		}
	}
}

// judgeActual fails an answer to the allowed origin, what (one of the
// corsRead… kinds), missing its echo or Vary: Origin.
func judgeActual(t *T, ex *wire.Exchange, what string) {
	if !ex.Answered() {
		t.Fail(ex, "%s with Origin %s, %s, got %s", ex.RequestLine(), t.Env.Origin, what, ex.StatusLine())
		return
	}
	if why := echoes(ex, t.Env.Origin); why != "" {
		hint := ""
		if len(ex.Header.Values(allowOrigin)) == 0 {
			hint = originHint(t)
		}
		t.Fail(ex, "%s with Origin %s, %s, answered %s, and %s; §2.3 puts the echo on the actual answer too, or the browser hides it from the page%s",
			ex.RequestLine(), t.Env.Origin, what, ex.Brief(), why, hint)
	}
	if !variesByOrigin(ex.Header) {
		t.Fail(ex, "%s with Origin %s, %s, answered %s with Vary %q, which does not name Origin; §2.3 requires it on the actual answer, so no shared cache hands one origin's answer to another%s",
			ex.RequestLine(), t.Env.Origin, what, ex.Brief(), strings.Join(ex.Header.Values("Vary"), ", "), originHint(t))
	}
}

// maxSweepFindings caps the findings a sweep reports one by one.
const maxSweepFindings = 3

// sweepHeaders calls bad on every answer under the prefix, this rule's and
// every other's, and fails those it reports, up to maxSweepFindings.
func sweepHeaders(t *T, bad func(ex *wire.Exchange) string) {
	n, failed := 0, 0
	for _, ex := range t.Evidence() {
		if !ex.Answered() || !strings.Contains(ex.URL, wire.Prefix) {
			continue
		}
		n++
		why := bad(ex)
		if why == "" {
			continue
		}
		if failed++; failed <= maxSweepFindings {
			t.Fail(ex, "%s", why)
		}
	}
	if failed > maxSweepFindings {
		t.Fail(nil, "and %d more answers alike", failed-maxSweepFindings)
	}
	t.Note("looked at %d answers", n)
}

func originOf(ex *wire.Exchange) string {
	if o := ex.ReqHeader.Get("Origin"); o != "" {
		return "Origin " + o
	}
	return "no Origin"
}

func probeNoWildcard(t *T) {
	sentPreflight(t, "run", strangerOrigin)
	t.Do(withOrigin(wire.Get("describe"), strangerOrigin, "a cross-origin read from an origin nobody configured"))
	sweepHeaders(t, func(ex *wire.Exchange) string {
		for _, v := range ex.Header.Values(allowOrigin) {
			if strings.TrimSpace(v) == "*" {
				return fmt.Sprintf("%s (%s) answered %s with %s: *; §2.3 forbids a runner shipping the wildcard, which admits every page on the web (§7) — an operator may choose it, a runner may not choose it for them",
					ex.RequestLine(), originOf(ex), ex.Brief(), allowOrigin)
			}
		}
		return ""
	})
}

// nearMiss is an origin that differs from the allowed one in one way a
// sloppy comparison misses. same marks a spelling that serialises (RFC
// 6454) to the allowed origin itself.
type nearMiss struct {
	origin, how string
	same        bool
}

// nearMisses derives from the allowed origin others that differ from it in
// one way a sloppy comparison misses: distinct origins a browser could send
// (scheme, port, host suffix, prefix, a shorter host), and two spellings of
// the allowed origin itself (a trailing slash, an upper-case host). A
// runner that parses and normalises origins admits those two, and rightly:
// no browser sends them, and they name no other origin. They are tried all
// the same, and an admission is noted, since a runner comparing by prefix
// shows it there first. An explicit default port is left out: that is the
// same origin too.
func nearMisses(origin string) []nearMiss {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	host, port := u.Hostname(), u.Port()
	other := map[string]string{"http": "https", "https": "http"}[u.Scheme]
	withPort := func(h string) string {
		if port == "" {
			return u.Scheme + "://" + h
		}
		return u.Scheme + "://" + net.JoinHostPort(h, port)
	}
	p := "61357"
	if port == p {
		p = "61358"
	}
	out := []nearMiss{
		{other + "://" + u.Host, "with another scheme", false},
		{u.Scheme + "://" + net.JoinHostPort(host, p), "with another port", false},
	}
	if strings.Contains(host, ":") { // an IPv6 literal: no host variants
		return out
	}
	out = append(out,
		nearMiss{withPort(host + ".evil.test"), "with a suffix on its host", false},
		nearMiss{withPort("evil-" + host), "with a prefix on its host", false},
	)
	if len(host) > 1 {
		out = append(out, nearMiss{withPort(host[:len(host)-1]), "with its host cut short", false})
	}
	out = append(out, nearMiss{u.Scheme + "://" + u.Host + "/", "with a trailing slash", true})
	if up := strings.ToUpper(host); up != host {
		out = append(out, nearMiss{withPort(up), "with its host in upper case", true})
	}
	return out
}

// judgeAdmission fails ex where it admits origin: Access-Control-Allow-Origin
// equal to the origin sent. A wildcard is 2.3/no-wildcard's finding.
func judgeAdmission(t *T, ex *wire.Exchange, origin, what, why string) {
	for _, v := range ex.Header.Values(allowOrigin) {
		switch strings.TrimSpace(v) {
		case origin:
			t.Fail(ex, "%s from %s (%s) answered %s with %s: %s, admitting it; %s",
				ex.RequestLine(), origin, what, ex.Brief(), allowOrigin, v, why)
		case "*":
			t.Note("%s from %s carries %s: * (2.3/no-wildcard reports it)", ex.Method, origin, allowOrigin)
		}
	}
}

// unconfigured is why admitting an origin nobody configured is wrong.
const unconfigured = "§2.3 forbids admitting an origin the runner was not configured with"

func probeUnconfigured(t *T) {
	judgeAdmission(t, sentPreflight(t, "run", strangerOrigin), strangerOrigin, "an origin nobody configured", unconfigured)
	judgeAdmission(t, t.Do(withOrigin(wire.Get("describe"), strangerOrigin, "a cross-origin read from an origin nobody configured")),
		strangerOrigin, "an origin nobody configured", unconfigured)
	// A runner may decide the origin on POST answers apart from the rest; a
	// body that is not an object of inputs keeps the call refusable.
	for _, verb := range []string{"run", "stream"} {
		if t.Env.Level < protocol.LevelOf(verb) {
			continue
		}
		r := withOrigin(wire.PostJSON(verb, malformedRunBody), strangerOrigin, "a cross-origin "+verb+" whose inputs is not an object: refused by any runner")
		judgeAdmission(t, t.Do(r), strangerOrigin, "an origin nobody configured", unconfigured)
	}
	if t.Env.Origin == "" {
		t.Note("without --origin, near misses of an allowed origin are not tried")
		return
	}
	misses := nearMisses(t.Env.Origin)
	if len(misses) == 0 {
		t.Note("--origin %q is not a scheme://host[:port] origin; no near misses tried", t.Env.Origin)
	}
	for _, m := range misses {
		ex := sentPreflight(t, "run", m.origin)
		if m.same {
			if acao := strings.TrimSpace(ex.Header.Get(allowOrigin)); acao != "" && acao != "*" {
				t.Note("OPTIONS run from %s (--origin %s %s) answered %s: %s; harmless: it is the allowed origin once normalised (RFC 6454), and no browser sends it spelled so",
					m.origin, t.Env.Origin, m.how, allowOrigin, acao)
			}
			continue
		}
		judgeAdmission(t, ex, m.origin, fmt.Sprintf("--origin %s %s", t.Env.Origin, m.how),
			unconfigured+"; only a configuration naming this exact origin would justify it")
	}
}

func probeNoCredentials(t *T) {
	o := t.Env.Origin
	if o == "" {
		o = strangerOrigin
	}
	sentPreflight(t, "run", o)
	t.Do(withOrigin(wire.Get("describe"), o, "a cross-origin read"))
	sweepHeaders(t, func(ex *wire.Exchange) string {
		if v := ex.Header.Values(allowCredentials); len(v) > 0 {
			return fmt.Sprintf("%s (%s) answered %s with %s: %s; §2.3: Postern has no cookie or browser-held token, so the header only admits ambient credentials it never asked for",
				ex.RequestLine(), originOf(ex), ex.Brief(), allowCredentials, strings.Join(v, ", "))
		}
		return ""
	})
}

func probeRefusedPreflight(t *T) {
	judged := 0
	for _, verb := range []string{"run", "describe"} {
		ex := sentPreflight(t, verb, strangerOrigin)
		if why := unhandled(ex); why != "" {
			t.Note("OPTIONS %s from %s got %s: set aside (2.3/preflight-* report it)", verb, strangerOrigin, why)
			continue
		}
		judged++
		acao := strings.TrimSpace(ex.Header.Get(allowOrigin))
		switch {
		case !is2xx(ex):
			t.Fail(ex, "OPTIONS %s from %s, an origin nobody configured, was refused %s; §2.3 prefers 204 without %s: the page reads neither, and an error status sends whoever reads the log after a problem that is not there",
				verb, strangerOrigin, ex.Brief(), allowOrigin)
		case acao == strangerOrigin || acao == "*":
			t.Note("OPTIONS %s from %s admitted it (%s: %s): 2.3/no-unconfigured-origin and 2.3/no-wildcard report that", verb, strangerOrigin, allowOrigin, acao)
		case acao != "":
			t.Fail(ex, "OPTIONS %s from %s answered %d but carries %s: %q; §2.3 prefers a refused origin's preflight without it",
				verb, strangerOrigin, ex.Status, allowOrigin, acao)
		case ex.Status != http.StatusNoContent:
			t.Note("OPTIONS %s from %s answered %d, a 2xx without %s; 204 is the usual choice", verb, strangerOrigin, ex.Status, allowOrigin)
		}
	}
	if judged == 0 {
		t.Undecided("no refused preflight was answered at all (2.3/preflight-* report it)")
	}
}

// probeRefusedRead: §2.3 has describe and status, the reads a browser
// sends cross-origin without asking, received and answered by the runner
// and then discarded by the browser unless they carry the origin's echo,
// and §7 says such a read is served and then withheld from the page. A
// runner refusing the read itself (its origin check throwing into an
// error handler, say) gains nothing, since the page reads neither, and
// leaves a false trail in the log; and where the code is agent_error it
// says an agent ran and failed on a request that runs none (§2.1). Only
// a WARN: §2.3 leaves which origins to allow to the runner and states no
// keyword on the reads, and a careful implementer may take refusing a
// stranger's read outright as one way of not allowing it.
func probeRefusedRead(t *T) {
	judged := 0
	for _, verb := range []string{"describe", "status"} {
		plain := docOf(t, verb).Ex
		if plain.Status != http.StatusOK {
			t.Note("GET %s without Origin was answered %s: nothing to compare a cross-origin read with (the §4 rules judge it)", verb, plain.Brief())
			continue
		}
		judged++
		ex := t.Do(withOrigin(wire.Get(verb), strangerOrigin, "a cross-origin read from an origin nobody configured"))
		if ex.Status == plain.Status {
			continue
		}
		meaning := ""
		if ex.ErrorCode() == "agent_error" {
			meaning = "; and agent_error says the agent ran and failed (§2.1), on a read that runs no agent"
		}
		t.Warn(ex, "GET %s from %s, an origin nobody configured, was answered %s, where the same read without Origin is answered %s; §2.3 and §7 have a cross-origin read served and the browser withhold it from the page, so refusing it buys nothing and sends whoever reads the log after a fault that is not there%s (inferred: §2.3 leaves which origins to allow to the runner, and a careful reader may take refusing a stranger's read as one way of not allowing it)",
			verb, strangerOrigin, ex.Brief(), plain.Brief(), meaning)
	}
	if judged == 0 {
		t.NotApplicable("neither describe nor status was answered 200 without an Origin")
	}
}

// admits reports a preflight answer that admits the origin: 2xx with some
// Access-Control-Allow-Origin.
func admits(ex *wire.Exchange) bool { return is2xx(ex) && len(ex.Header.Values(allowOrigin)) > 0 }

// probeAnyLevel judges the allowed origin's preflight on each verb above
// the runner's level, where nothing but the level stands against it: a
// credential asked of the preflight, or an entitlement not in force, is
// 2.3/preflight-unconditional's (a MUST NOT binds those).
func probeAnyLevel(t *T) {
	var above []string
	for _, verb := range []string{"run", "stream"} {
		if t.Env.Level != 0 && t.Env.Level < protocol.LevelOf(verb) {
			above = append(above, verb)
		}
	}
	if len(above) == 0 {
		t.NotApplicable("the runner declares Level %d: no verb with a preflight is above it", t.Env.Level)
		return
	}
	state := ""
	if t.Env.Status.Obj != nil {
		state = Str(t.Env.Status.Obj, "entitlement", "state")
	}
	other := t.Env.Client.HasHeader("Authorization") || (state != "" && state != "not_required" && state != "active")
	for _, verb := range above {
		ex := sentPreflight(t, verb, t.Env.Origin)
		switch {
		case admits(ex):
		case other:
			t.Note("OPTIONS %s answered %s, where a credential or the entitlement is also in question: 2.3/preflight-unconditional judges that", verb, ex.Brief())
		default:
			t.Fail(ex, "OPTIONS %s from the allowed origin %s answered %s on a Level %d runner (%s is Level %d); §2.3 has the preflight answered like any other, so that the POST arrives and is refused 501%s",
				verb, t.Env.Origin, ex.Brief(), t.Env.Level, verb, protocol.LevelOf(verb), originHint(t))
		}
	}
}
