package distributor

import (
	"context"
	"net/http"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The refusals §5.5 compares, by what was asked.
const (
	askMissing  = "a valid token, for an agent no catalogue holds"
	askUnowned  = "the buyer's token, for --unowned-agent"
	askStranger = "the stranger's token, for --agent"
	askUnknown  = "a token no distributor issued, for --agent"
	askMalform  = "a malformed token, for --agent"
	askAbsent   = "no Authorization at all, for --agent"
	askScheme   = "the buyer's token under another scheme (Basic), for --agent"
	askRotated  = "the rotated-away token, for --agent"
	// A withdrawn agent, asked for by callers who never owned it.
	askGoneStranger = "the stranger's token, for --withdrawn-agent"
	askGoneUnknown  = "a token no distributor issued, for --withdrawn-agent"
	askGoneAbsent   = "no Authorization at all, for --withdrawn-agent"
)

// goneAsks are the asks for --withdrawn-agent by callers who never owned it.
var goneAsks = []string{askGoneStranger, askGoneUnknown, askGoneAbsent}

// deadTokens are the asks whose token does not resolve (§5.5).
var deadTokens = []string{askUnknown, askMalform, askAbsent, askScheme}

// refusalSet is every refusal §5.5 compares, on both endpoints, and a
// second answer to the reference ask (a valid token, an agent nobody has),
// to see whether its body varies by itself.
type refusalSet struct {
	check, bundle map[string]*wire.Exchange
	again         map[string]*wire.Exchange // route → the reference ask, sent again
	addressed     map[*wire.Exchange]string
	sent          map[*wire.Exchange]wire.Request // what each was, to ask it again
	asks          []string
}

// ref is the reference answer on route's side.
func (r refusalSet) side(route string) map[string]*wire.Exchange {
	if route == protocol.BundlesRoute {
		return r.bundle
	}
	return r.check
}

var refusals = &engine.Fact[*Env, refusalSet]{Name: "the refusals §5.5 compares", Compute: func(t *T) (refusalSet, string) {
	e := t.Env
	type ask struct{ name, id, auth string }
	asks := []ask{{askMissing, e.missing, bearer(e.Token)}, {askUnknown, e.Agent, bearer(e.unknown)},
		{askMalform, e.Agent, "Bearer not a token"}, {askAbsent, e.Agent, ""}, {askScheme, e.Agent, "Basic " + e.Token}}
	if e.Unowned != "" {
		asks = append(asks, ask{askUnowned, e.Unowned, bearer(e.Token)})
	}
	if e.Stranger != "" {
		asks = append(asks, ask{askStranger, e.Agent, bearer(e.Stranger)})
	}
	if e.Rotated != "" {
		asks = append(asks, ask{askRotated, e.Agent, bearer(e.Rotated)})
	}
	if e.Withdrawn != "" {
		asks = append(asks, ask{askGoneUnknown, e.Withdrawn, bearer(e.unknown)}, ask{askGoneAbsent, e.Withdrawn, ""})
		if e.Stranger != "" {
			asks = append(asks, ask{askGoneStranger, e.Withdrawn, bearer(e.Stranger)})
		}
	}
	routes := []string{protocol.EntitlementsRoute, protocol.BundlesRoute}
	var reqs []wire.Request
	for _, route := range routes {
		for _, a := range asks {
			reqs = append(reqs, get(route, a.id, a.auth, a.name))
		}
		reqs = append(reqs, get(route, e.missing, bearer(e.Token), askMissing+", again: does the answer vary by itself?"))
	}
	exs := t.SideBySide(len(reqs), func(i int, s *engine.Session, ctx context.Context) *wire.Exchange { return s.Do(ctx, reqs[i]) })
	out := refusalSet{check: map[string]*wire.Exchange{}, bundle: map[string]*wire.Exchange{}, again: map[string]*wire.Exchange{},
		addressed: map[*wire.Exchange]string{}, sent: map[*wire.Exchange]wire.Request{}}
	n := len(asks) + 1
	for i, route := range routes {
		for j, a := range asks {
			ex := exs[i*n+j]
			out.side(route)[a.name] = ex
			out.addressed[ex] = a.id
			out.sent[ex] = reqs[i*n+j]
		}
		out.again[route] = exs[i*n+len(asks)]
		out.addressed[out.again[route]] = e.missing
	}
	for _, a := range asks {
		out.asks = append(out.asks, a.name)
	}
	return out, ""
}}

// want404 fails every answer among asks (on both endpoints, or the one
// given) that is not 404 not_found. Where nothing fails and an ask brought
// no whole answer, the rule is undecided.
func want404(t *T, set refusalSet, routes []string, asks []string, why string) {
	var gap *wire.Exchange
	for _, route := range routes {
		for _, a := range asks {
			ex := set.side(route)[a]
			switch {
			case ex == nil:
			case !engine.Whole(ex):
				gap = ex
			case ex.Status == http.StatusForbidden:
				t.Fail(ex, "%s (%s) answered 403: §5.5 forbids it, since a 403 confirms the agent exists; %s", ex.RequestLine(), a, why)
			case !ex.Is(http.StatusNotFound, "not_found"):
				t.Fail(ex, "%s (%s) answered %s, not 404 not_found: %s", ex.RequestLine(), a, ex.Brief(), why)
			}
		}
	}
	undecidedBy(t, gap)
}

// indistinct fails every 404 among asks that can be told apart from the
// reference 404 (a valid token, an agent nobody has) on its endpoint.
func indistinct(t *T, set refusalSet, asks []string, what string) {
	var gap *wire.Exchange
	for _, route := range []string{protocol.EntitlementsRoute, protocol.BundlesRoute} {
		ref := set.side(route)[askMissing]
		if !engine.Whole(ref) {
			gap = ref
		}
		if !ref.Is(http.StatusNotFound, "not_found") {
			continue
		}
		if !engine.Whole(set.again[route]) {
			gap = set.again[route]
		}
		like := learn(ref, set.again[route])
		like.explain(t, "the reference 404 on "+route)
		for _, a := range asks {
			ex := set.side(route)[a]
			if ex != nil && !engine.Whole(ex) {
				gap = ex
			}
			if ex == nil || !ex.Is(http.StatusNotFound, "not_found") {
				continue
			}
			if d := confirmedApart(t, like, ex, ref, set.addressed[ex], set.addressed[ref], set.sent[ex], set.sent[ref]); d != "" {
				t.Fail(ex, "%s (%s) can be told apart from the 404 for %s: %s. §5.5 makes %s indistinguishable", ex.RequestLine(), a, askMissing, d, what)
			}
		}
	}
	undecidedBy(t, gap)
}

var bothRoutes = []string{protocol.EntitlementsRoute, protocol.BundlesRoute}

// §5.5 Not-entitled is indistinguishable from not-found.
var section5_5 = []*Rule{
	{
		ID: "5.5/check-not-entitled-404", Section: "5.5", Level: 1, Keyword: Must,
		Title:    "a check for an agent the caller is not entitled to answers 404 not_found, never 403",
		Requires: deps(refusals),
		Probe: func(t *T) {
			want404(t, refusals.Of(t), []string{protocol.EntitlementsRoute}, []string{askMissing, askUnowned, askStranger},
				"§5.5 answers a caller who is not entitled 404 not_found")
		},
	},
	{
		ID: "5.5/bundle-not-entitled-404", Section: "5.5", Level: 1, Keyword: Must,
		Title:    "a bundle request for an agent the caller is not entitled to answers 404 not_found, never 403",
		Requires: deps(refusals),
		Probe: func(t *T) {
			want404(t, refusals.Of(t), []string{protocol.BundlesRoute}, []string{askMissing, askUnowned, askStranger},
				"§5.5 answers a caller who is not entitled 404 not_found")
		},
	},
	{
		ID: "5.5/dead-token-404", Section: "5.5", Level: 1, Keyword: MustNot,
		Title:    "a token that does not resolve (unknown, malformed, absent, another scheme) answers 404 not_found on both endpoints",
		Requires: deps(refusals),
		Probe: func(t *T) {
			want404(t, refusals.Of(t), bothRoutes, deadTokens, "§5.5 answers a token that does not resolve as it answers a valid one without the entitlement")
		},
	},
	{
		ID: "5.5/token-indistinguishable", Section: "5.5", Level: 1, Keyword: MustNot,
		Title:    "a dead token's 404 and a stranger's cannot be told apart from a valid token's: status, code, body, header set",
		Requires: deps(refusals),
		Probe: func(t *T) {
			indistinct(t, refusals.Of(t), append(append([]string{}, deadTokens...), askStranger, askRotated),
				"a token that does not resolve and a valid one without the entitlement")
		},
	},
	{
		ID: "5.5/withdrawn-indistinguishable", Section: "5.5", Level: 1, Keyword: Must,
		Title: "a withdrawn agent asked for by a caller who never owned it (the stranger, a dead token, none) gets the 404 of an agent that does not exist, on both endpoints: a 410 would confirm it exists",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(refusals),
		Probe: func(t *T) {
			set := refusals.Of(t)
			want404(t, set, bothRoutes, goneAsks, "§5.5 answers a caller who is not entitled, or whose token does not resolve, 404 not_found, and §5.6's 410 is for a buyer who was entitled: to anyone else it says the agent exists")
			indistinct(t, set, goneAsks, "an agent the caller never had and one that is not there")
		},
	},
	{
		ID: "5.5/agent-indistinguishable", Section: "5.5", Level: 1, Keyword: Must,
		Title: "a listed agent the buyer does not own answers byte for byte as an agent that does not exist",
		Needs: []engine.Need[*Env]{needUnowned}, Requires: deps(refusals),
		Probe: func(t *T) {
			indistinct(t, refusals.Of(t), []string{askUnowned}, "an agent the caller may not have and one that is not there")
		},
	},
}

// §7 rotation, as §5.5 discharges it.
var section7Rotation = []*Rule{
	{
		ID: "7/rotated-token-dead", Section: "7", Level: 1, Keyword: Must,
		Title: "a rotated-away token stops resolving at once: 404 not_found, as a token that never existed",
		Needs: []engine.Need[*Env]{needRotated}, Requires: deps(refusals),
		Probe: func(t *T) {
			set := refusals.Of(t)
			for _, route := range bothRoutes {
				ex, never := set.side(route)[askRotated], set.side(route)[askUnknown]
				switch {
				case !ex.Answered():
				case !ex.Is(http.StatusNotFound, "not_found"):
					t.Fail(ex, "%s with --rotated-token answered %s: §7 has a rotated token's predecessor stop resolving on the next request, answering 404 not_found", ex.RequestLine(), ex.Brief())
				case never.Is(http.StatusNotFound, "not_found"):
					like := learn(set.side(route)[askMissing], set.again[route])
					if d := confirmedApart(t, like, ex, never, "", "", set.sent[ex], set.sent[never]); d != "" {
						t.Fail(ex, "%s with --rotated-token can be told apart from a token that never existed: %s (§7, §5.5)", ex.RequestLine(), d)
					}
				}
			}
		},
	},
}
