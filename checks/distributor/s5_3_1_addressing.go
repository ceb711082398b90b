package distributor

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// §5.3.1 Addressing the agent, on both endpoints (§5.6 addresses a bundle
// the same way). Every probe carries the buyer's token and a spelling of
// --agent, or a string no catalogue can hold.

// spell sends raw (exactly as given) to both endpoints with the buyer's
// token, and returns the answers, check's first.
func spell(t *T, note string, raws ...string) []*wire.Exchange {
	exs, _ := spelled(t, note, raws...)
	return exs
}

// spelled is spell, with the requests sent.
func spelled(t *T, note string, raws ...string) ([]*wire.Exchange, []wire.Request) {
	var reqs []wire.Request
	for _, route := range bothRoutes {
		for _, raw := range raws {
			reqs = append(reqs, get(route, raw, bearer(t.Env.Token), note))
		}
	}
	return t.SideBySide(len(reqs), func(i int, s *engine.Session, ctx context.Context) *wire.Exchange { return s.Do(ctx, reqs[i]) }), reqs
}

// notAnsweredFor fails every 2xx among exs: the spelling was answered for.
// Where none is and one brought no whole answer, the rule is undecided.
func notAnsweredFor(t *T, exs []*wire.Exchange, why string) {
	for _, ex := range exs {
		if ex.Status >= 200 && ex.Status < 300 {
			t.Fail(ex, "%s answered %s: %s", ex.RequestLine(), ex.Brief(), why)
		}
	}
	undecidedBy(t, unanswered(exs))
}

// encodeOne percent-encodes the first octet of id's name that is not the
// separator: an encoded spelling of the same identifier.
func encodeOne(id string) string {
	owner, name, _ := strings.Cut(id, "/")
	return fmt.Sprintf("%s/%%%02X%s", owner, name[0], name[1:])
}

// capitalised is id with the first letter of each part in upper case: a
// string §1.5 does not admit, whose lower-cased form is --agent.
func capitalised(id string) string {
	owner, name, _ := strings.Cut(id, "/")
	up := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	return up(owner) + "/" + up(name)
}

// underscored is id with its - turned to _ (or an _ added): invalid, with
// an obvious corrected form.
func underscored(id string) string {
	if strings.Contains(id, "-") {
		return strings.ReplaceAll(id, "-", "_")
	}
	return id + "_"
}

var section5_3_1 = []*Rule{
	{
		ID: "5.3.1/encoded-slash", Section: "5.3.1", Level: 1, Keyword: MustNot,
		Title: "%2F is never decoded into the separator: owner%2Fname addresses no agent, on either endpoint",
		Probe: func(t *T) {
			owner, name, _ := strings.Cut(t.Env.Agent, "/")
			exs := spell(t, "--agent with its separator percent-encoded", owner+"%2F"+name, owner+"%2f"+name)
			notAnsweredFor(t, exs, "the %2F was decoded into the separator, which §5.3.1 forbids (one segment matches no route: 404)")
		},
	},
	{
		ID: "5.3.1/encoded-octet", Section: "5.3.1", Level: 1, Keyword: MustNot,
		Title: "an encoded octet is never another spelling of an identifier, on either endpoint",
		Probe: func(t *T) {
			exs := spell(t, "--agent with one octet percent-encoded", encodeOne(t.Env.Agent))
			notAnsweredFor(t, exs, "an encoded form was taken as another spelling of --agent, which §5.3.1 forbids (it fails §1.5's grammar: 400 bad_request)")
		},
	},
	{
		ID: "5.3.1/segment-count", Section: "5.3.1", Level: 1, Keyword: Must, Binding: Inferred,
		Title: "one segment, or three, after the route answers 404 (inferred: §5.3.1 calls 404 the right answer, without a keyword)",
		Probe: func(t *T) {
			owner, _, _ := strings.Cut(t.Env.Agent, "/")
			exs := spell(t, "not two segments", owner, t.Env.Agent+"/bundle", t.Env.Agent+"/")
			for _, ex := range exs {
				if ex.Answered() && ex.Status != http.StatusNotFound {
					t.Warn(ex, "%s answered %s: a path with other than two segments matches no route, and §5.3.1 calls 404 the right answer (inferred: no bold keyword)", ex.RequestLine(), ex.Brief())
				}
			}
			undecidedBy(t, unanswered(exs))
		},
	},
	{
		ID: "5.3.1/bad-id-400", Section: "5.3.1", Level: 1, Keyword: Must, Binding: Chain, Chain: "§5.3.1's bold not 404",
		Title: "two segments outside §1.5's grammar answer 400 bad_request, not 404, on either endpoint",
		Probe: func(t *T) {
			exs := spell(t, "two segments outside §1.5's grammar", "zz_postern_conformance/agent", "-zz-postern-conformance/agent", "zz-postern-conformance/agent-")
			for _, ex := range exs {
				if ex.Answered() && !ex.Is(http.StatusBadRequest, "bad_request") {
					t.Fail(ex, "%s answered %s: an identifier that fills two segments and fails §1.5's grammar is answered 400 bad_request, not 404 (§5.3.1)", ex.RequestLine(), ex.Brief())
				}
			}
			// The same 400 with no token: it is computed from the request
			// string alone, so a 404 here would tell a dead token from a
			// live one (§5.5).
			reqs := []wire.Request{}
			for _, route := range bothRoutes {
				reqs = append(reqs, get(route, "zz_postern_conformance/agent", "", "outside §1.5's grammar, with no token"))
			}
			tokenless := t.SideBySide(len(reqs), func(i int, s *engine.Session, ctx context.Context) *wire.Exchange { return s.Do(ctx, reqs[i]) })
			for _, ex := range tokenless {
				if ex.Answered() && !ex.Is(http.StatusBadRequest, "bad_request") {
					t.Fail(ex, "%s with no token answered %s, where the buyer's token gets 400: the 400 for an identifier outside §1.5's grammar is computed from the request string alone (§5.3.1), and answering a dead token otherwise tells it from a live one (§5.5)", ex.RequestLine(), ex.Brief())
				}
			}
			undecidedBy(t, unanswered(append(exs, tokenless...)))
		},
	},
	{
		ID: "5.3.1/bad-id-invariant", Section: "5.3.1", Level: 1, Keyword: MustNot,
		Title: "the 400 for a malformed identifier is the same whether or not a corrected form exists (--agent with _ for -, and capitalised, against an agent nobody has spelt alike)",
		Probe: func(t *T) {
			_, name, _ := strings.Cut(underscored(t.Env.Agent), "/")
			far := "zz-postern-conformance/" + name
			// Each malformed spelling of --agent, beside the same spelling of
			// an identifier no catalogue holds; the first of these is asked
			// twice: a 400 that varies by itself (a request id in detail) is
			// compared without what varies.
			pairs := [][2]string{{underscored(t.Env.Agent), far}, {capitalised(t.Env.Agent), capitalised(t.Env.missing)}}
			raws := []string{far}
			for _, p := range pairs {
				raws = append(raws, p[0], p[1])
			}
			exs, reqs := spelled(t, "a malformed identifier, with and without a corrected form in the catalogue", raws...)
			n := len(raws)
			for r := 0; r < len(exs); r += n {
				again := exs[r]
				for i, p := range pairs {
					a, b := exs[r+1+2*i], exs[r+2+2*i]
					if !a.Answered() || !b.Answered() || i == 1 && a.Status >= 200 && a.Status < 300 {
						continue // --agent capitalised and answered for is 5.3.1/bad-id-not-corrected's
					}
					like := learn(b, again)
					if i == 0 {
						like.explain(t, "the 400 for "+rawPathOf(b))
					}
					if d := confirmedApart(t, like, a, b, p[0], p[1], reqs[r+1+2*i], reqs[r+2+2*i]); d != "" {
						t.Fail(a, "%s answered otherwise than %s (%s): §5.3.1 forbids a 400 that varies with whether a corrected form of the identifier exists", a.RequestLine(), rawPathOf(b), d)
					}
				}
			}
			undecidedBy(t, unanswered(exs))
		},
	},
	{
		ID: "5.3.1/bad-id-not-corrected", Section: "5.3.1", Level: 1, Keyword: MustNot,
		Title: "a malformed identifier is never corrected and answered for (Acme/X is not acme/x)",
		Probe: func(t *T) {
			exs := spell(t, "--agent capitalised", capitalised(t.Env.Agent))
			notAnsweredFor(t, exs, fmt.Sprintf("the identifier was corrected to %s and answered for, which §5.3.1 and §1.5 forbid", t.Env.Agent))
		},
	},
}
