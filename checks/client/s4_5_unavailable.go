package client

import (
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
)

// §4.5: a client MUST be prepared for 503 on run or stream whatever status
// last told it: a ready it read a moment ago is no admission ticket.

var section4_5 = []*Rule{
	observed(&Rule{ID: "4.5/client-ready-for-503", Section: "4.5", Level: 2, Keyword: Must,
		Title: "a client is ready for 503 on run whatever status said: it reports the failure, in time, and does not retry without end",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.Unavailable)
			served(t, tr)
			runs := tr.runs()
			p := tr.Process
			switch {
			case p.Killed:
				fail(t, tr, nil, "status said ready, every run was refused 503 unavailable, and the client had not finished after --client-timeout (%s), having sent %d run requests: it kept retrying or waiting (§4.5: a client is prepared for 503 whatever status said)", t.Env.ClientTimeout, len(runs)+tr.Dropped)
			case len(runs) == 0:
				t.NotApplicable("the client sent no run, so it never met the 503 (it sent %s)", tr.brief())
			case p.Crashed:
				fail(t, tr, nil, "status said ready and run was refused 503 unavailable, and the client died (%s)", p.ending())
			case p.Exit == 0 && p.Signal == "":
				fail(t, tr, nil, "status said ready, every run was refused 503 unavailable, and the client exited 0, reporting a success (§4.5)")
			}
			if len(runs) > 1 {
				t.Note("the client sent %d run requests before it gave up", len(runs)+tr.Dropped)
			}
		}}, scripted.Unavailable),
}
