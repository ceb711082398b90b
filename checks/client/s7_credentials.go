package client

import (
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
)

// §7: a describe carrying a credential value is nonconformant (§4.1.3),
// and a client meeting one SHOULD refuse to proceed.

var section7 = []*Rule{
	observed(&Rule{ID: "7/client-refuses-credential-value", Section: "7", Level: 2, Keyword: Should,
		Title: "a client refuses to proceed on a describe carrying a credential value: no run is sent",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.CredentialValue)
			finished(t, tr)
			if rs := tr.runs(); len(rs) > 0 {
				fail(t, tr, rs[0].Ex, "describe carried the value of SCRIPTED_API_KEY beside its env name, and the client went on to send POST %s (§7: a client meeting a credential value in describe refuses to proceed)", rs[0].Verb)
			}
		}}, scripted.CredentialValue),
}
