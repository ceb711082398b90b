package entitlement

import (
	"bytes"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
)

// §5.2 Tokens: how the runner presents its token, and where it never shows.
var section5_2 = []*Rule{
	{
		ID: "5.2/bearer-token", Section: "5.2", Level: 1, Keyword: Must, Binding: Contract, Chain: "§5.2",
		Title: "every check carries the token as Authorization: Bearer <token>",
		Probe: func(t *T) {
			before := len(t.Env.Dist.Log(""))
			s := begin(t, active(t.Env))
			defer s.finish()
			if _, ok := s.awaitCheck(); !ok {
				// Nothing came with the token: what came without it?
				if stray := t.Env.Dist.Log(""); len(stray) > before {
					c := stray[len(stray)-1]
					t.Fail(nil, "the runner's check %s carried Authorization %q, not Bearer and the token it was given (§5.2)",
						c.Target, strings.Join(c.Authorization, ", "))
					return
				}
				t.Undecided("the runner sent no check to the distributor at all (see the other rules' reasons)")
			}
			for _, c := range s.checks() {
				if tok, ok := c.Bearer(); !ok || tok != s.token {
					t.Fail(nil, "the check %s carried Authorization %q, not Bearer and the token it was given (§5.2)",
						c.Target, strings.Join(c.Authorization, ", "))
					return
				}
			}
		},
	},
	{
		ID: "5.2/token-never-answered", Section: "5.2", Level: 1, Keyword: MustNot, Binding: Contract, Chain: "§5.2",
		Title: "the token appears in nothing the runner answers: documents, refusals, headers",
		Probe: func(t *T) {
			// A distributor that never answers, so that the runner has a
			// refusal to explain as well as its documents.
			s := begin(t, scripted.Answer{Kind: scripted.ServerError})
			defer s.finish()
			s.firstCheck()
			var seen []*wire.Exchange
			for _, verb := range []string{"status", "describe"} {
				r := wire.Get(verb)
				r.Note = "looking for the token in the answer"
				seen = append(seen, s.do(r))
			}
			seen = append(seen, s.served("looking for the token in the answer")...)
			for _, ex := range seen {
				if holds(ex, s.token) {
					t.Fail(ex, "%s answered with the entitlement token in its body or headers; §5.2 has tokens never reach a client", ex.RequestLine())
				}
			}
		},
	},
}

// holds reports whether ex's response carries secret anywhere.
func holds(ex *wire.Exchange, secret string) bool {
	if bytes.Contains(ex.Body, []byte(secret)) {
		return true
	}
	for _, vs := range ex.Header {
		for _, v := range vs {
			if strings.Contains(v, secret) {
				return true
			}
		}
	}
	return false
}
