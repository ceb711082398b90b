package entitlement

import (
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/checks/envelope"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §2.1 and §2.3 across the walk: every refusal a step drew is judged as the
// check judges a refusal, once, by a sweep over the walk's log; and the
// preflight is answered the same whatever the entitlement.
var section2 = []*Rule{
	{
		ID: "2.1/walk-envelope-closed", Section: "2.1", Level: 1, Keyword: MustNot, Evidence: true,
		Title: "every refusal the walk drew carries the error envelope, with nothing beside error at its root",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange) {
				m := ex.Object()
				e, _ := m["error"].(map[string]any)
				if _, ok := e["code"].(string); !ok {
					t.Fail(ex, "%s answered %s with no error envelope (an object holding error.code): §2.1 gives every refusal under the prefix one", ex.RequestLine(), ex.Brief())
					return
				}
				if extra := envelope.Extras(m); len(extra) > 0 {
					t.Fail(ex, "%s answered %s carrying %s beside error: §2.1 closes the envelope's root", ex.RequestLine(), ex.Brief(), strings.Join(extra, ", "))
				}
			})
		},
	},
	{
		ID: "2.1/walk-code-status", Section: "2.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.1", Evidence: true,
		Title: "every code a walk's refusal carries travels on the status §2.1's table gives it",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange) {
				if want := protocol.StatusOf(ex.ErrorCode()); want != 0 && want != ex.Status {
					t.Fail(ex, "%s: code %s rides %d, and §2.1's table gives it %d", ex.RequestLine(), ex.ErrorCode(), ex.Status, want)
				}
			})
		},
	},
	{
		ID: "2.3/preflight-whatever-entitlement", Section: "2.3", Level: 1, Keyword: MustNot,
		Title: "the preflight of run and stream is answered as it was in force, past grace and revoked alike",
		Probe: func(t *T) {
			s := begin(t, active(t.Env))
			defer s.finish()
			c := s.firstCheck()
			before := s.preflights("the entitlement in force, for comparison")
			s.script(scripted.Answer{Kind: scripted.ServerError})
			c = s.anchor(c)
			s.waitUntil(graceEnds(c).Add(s.slack()))
			s.served("past the window and grace, the distributor failing: the entitlement not in force")
			judge := func(situation string, after map[string]*wire.Exchange) {
				for _, verb := range []string{"run", "stream"} {
					b, a := before[verb], after[verb]
					if a.Status != b.Status {
						t.Fail(a, "OPTIONS %s answered %s with the entitlement in force and %s %s: §2.3 answers a preflight without requiring an entitlement", verb, b.Brief(), a.Brief(), situation)
					}
				}
			}
			judge("past the window and grace", s.preflights("past the window and grace, the distributor failing"))
			s.script(scripted.Answer{Kind: scripted.Revoked, StaleAfterSeconds: int(t.Env.Window.Seconds()), GraceSeconds: int(t.Env.Grace.Seconds())})
			s.status("the distributor now answering revoked")
			s.served("revoked: the entitlement not in force")
			judge("revoked", s.preflights("revoked"))
		},
	},
}

// sweep calls judge on every refusal of run and stream the walk drew (a
// preflight is §2.3's, status and describe answer 200 throughout).
func sweep(t *T, judge func(ex *wire.Exchange)) {
	n := 0
	for _, ex := range t.Evidence() {
		if ex.Method != http.MethodPost || ex.Status < http.StatusBadRequest {
			continue
		}
		n++
		judge(ex)
	}
	if n == 0 {
		t.Undecided("no refusal was drawn to judge")
	}
	t.Note("judged %d refusals", n)
}
