package entitlement

import (
	"net/http"

	"github.com/sigrix-io/postern-conformance/checks/entitlement/scripted"
	"github.com/sigrix-io/postern-conformance/wire"
)

// §7 Inbound authentication: a runner that requires its own credential
// (--header gives it) answers a request without it 401, whatever the
// entitlement: the entitlement is not told to a caller who failed it.
var section7 = []*Rule{
	{
		ID: "7/unauthorized-whatever-entitlement", Section: "7", Level: 2, Keyword: Must,
		Title: "a runner requiring its own credential answers run and stream without it 401 unauthorized, revoked or not",
		Probe: func(t *T) {
			if len(t.Env.Headers) == 0 {
				t.NeedsOption("no --header was given: the walk speaks to the runner with no inbound credential, so there is none to withhold")
			}
			s := begin(t, scripted.Answer{Kind: scripted.Revoked, StaleAfterSeconds: int(t.Env.Window.Seconds()), GraceSeconds: int(t.Env.Grace.Seconds())})
			defer s.finish()
			s.firstCheck()
			if ex := s.refusals("revoked, with the credential")[0]; !refusedAs(ex, "not_entitled") {
				t.NotApplicable("revoked, run answered %s with the credential rather than 403 not_entitled; 5.4/no-answer-past-window judges that refusal", ex.Brief())
			}
			r := wire.Get("status")
			r.OmitExtra, r.Note = true, "without the --header credential: does this runner require one?"
			if ex := s.do(r); !ex.Is(http.StatusUnauthorized, "") {
				t.NotApplicable("status answered %s without the --header credential: this runner does not show that it requires one", ex.Brief())
			}
			for _, verb := range []string{"run", "stream"} {
				r := wire.PostJSON(verb, `{"inputs": "refusable by any runner"}`)
				r.OmitExtra, r.Note = true, "revoked, and without the --header credential"
				ex := s.do(r)
				if ex.Is(http.StatusNotImplemented, "not_implemented") {
					continue
				}
				if !refusedAs(ex, "unauthorized") {
					t.Fail(ex, "the runner requires its own credential (status without it answered 401), yet POST %s without it answered %s: §7 answers a request failing its authentication 401 unauthorized, so a caller without the credential learns nothing of the entitlement", verb, ex.Brief())
				}
			}
		},
	},
}
