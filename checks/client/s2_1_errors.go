package client

import (
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
)

// §2.1: a client treats an error code it does not recognise as a generic
// failure of its HTTP status class, SHOULD show the message, and does not
// reject an envelope for a member beside error.

var section2_1 = []*Rule{
	observed(&Rule{ID: "2.1/client-unknown-code", Section: "2.1", Level: 2, Keyword: Must,
		Title: "a client treats an unknown error code as a failure of its status class (a 4xx, a 5xx): it reports a failure, and does not crash",
		Probe: func(t *T) {
			judged := 0
			for _, name := range []string{scripted.UnknownCode4xx, scripted.UnknownCode5xx} {
				if tr := t.Env.Trial(name); tr != nil {
					judged += unknownCode(t, tr)
				}
			}
			if judged == 0 {
				t.NotApplicable("the client sent no run in either scenario, so it never met an unknown code")
			}
		}}, scripted.UnknownCode4xx, scripted.UnknownCode5xx),
	observed(&Rule{ID: "2.1/client-shows-message", Section: "2.1", Level: 2, Keyword: Should,
		Title: "a client shows a refusal's error.message to the user",
		Probe: func(t *T) {
			judged := 0
			for _, name := range []string{scripted.AgentError, scripted.UnknownCode4xx, scripted.UnknownCode5xx, scripted.Unavailable} {
				tr := t.Env.Trial(name)
				if tr == nil || tr.Err != nil || len(tr.runs()) == 0 || !tr.servedOne() || tr.Process.Exit == 0 || tr.Process.Killed {
					continue // not run, or the refusal never reached it, or another rule judges how it ended
				}
				judged++
				cite(t, tr)
				if !tr.said(tr.Scenario.Message) {
					fail(t, tr, nil, "run was refused with error.message %q, and the client showed it neither on stderr nor on stdout (§2.1: message is written to be shown to a user verbatim)", tr.Scenario.Message)
				}
			}
			if judged == 0 {
				t.NotApplicable("no scenario run had the client report a refusal it was sent")
			}
		}}, scripted.AgentError, scripted.UnknownCode4xx, scripted.UnknownCode5xx, scripted.Unavailable),
	observed(&Rule{ID: "2.1/client-error-sibling", Section: "2.1", Level: 2, Keyword: MustNot,
		Title: "a client reads an error envelope with a member beside error as that error",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.ErrorSibling)
			finished(t, tr)
			served(t, tr)
			if len(tr.runs()) == 0 {
				t.NotApplicable("the client sent no run, so it never met the envelope (it sent %s)", tr.brief())
			}
			ctrl := t.Env.Trial(scripted.AgentError)
			if ctrl != nil && (ctrl.Err != nil || ctrl.Process.Killed || !ctrl.servedOne()) {
				ctrl = nil
			}
			if ctrl != nil {
				cite(t, ctrl)
			}
			p := tr.Process
			switch {
			case p.Crashed:
				fail(t, tr, nil, "with request_id beside error in a 500 agent_error, the client died (%s)", p.ending())
			case p.Exit == 0 && p.Signal == "" && (ctrl == nil || ctrl.Process.Exit != 0):
				fail(t, tr, nil, "with request_id beside error in a 500 agent_error, the client reported success (exit 0)%s", ctrlWords(ctrl, "reports the same envelope without it as a failure"))
			case ctrl != nil && ctrl.said(ctrl.Scenario.Message) && !tr.said(tr.Scenario.Message):
				fail(t, tr, nil, "with request_id beside error, the client did not show error.message %q, which it shows for the same 500 agent_error without it (%s): it rejected the envelope for the member beside error (§2.1: a client MUST NOT)", tr.Scenario.Message, scripted.AgentError)
			case ctrl != nil && uncaught(p.Stderr) != "" && uncaught(ctrl.Process.Stderr) == "":
				fail(t, tr, nil, "with request_id beside error, the client's stderr shows %s, which the same envelope without it does not: it failed reading the envelope, rather than reading it as that error", uncaught(p.Stderr))
			case ctrl == nil:
				t.NotApplicable("the control scenario %s (the same refusal without the member) was not run or never reached the client, so what the member changed cannot be seen", scripted.AgentError)
			case !ctrl.said(ctrl.Scenario.Message):
				t.NotApplicable("the client shows no error message even for the plain envelope (%s), so whether it read this one as that error cannot be seen (2.1/client-shows-message judges that)", scripted.AgentError)
			}
		}}, scripted.ErrorSibling, scripted.AgentError),
}

func ctrlWords(ctrl *Trial, what string) string {
	if ctrl == nil {
		return ""
	}
	return ", where it " + what + " (" + ctrl.Scenario.Name + ")"
}

// unknownCode judges one scenario of 2.1/client-unknown-code: a refusal
// whose code no client knows yet is a failure (non-zero exit), reported,
// not a crash. It returns 1 where the scenario could be judged.
func unknownCode(t *T, tr *Trial) int {
	if tr.Err != nil || len(tr.runs()) == 0 || !tr.servedOne() {
		return 0
	}
	cite(t, tr)
	p, ex := tr.Process, tr.key()
	switch {
	case p.Killed:
		fail(t, tr, ex, "refused %s, the client had not finished after --client-timeout (%s): a conforming client had reported the failure", ex.Brief(), t.Env.ClientTimeout)
	case p.Crashed:
		fail(t, tr, ex, "refused %s, the client died (%s) rather than report a failure (§2.1: an unknown code is a generic failure of its status class)", ex.Brief(), p.ending())
	case p.Exit == 0 && p.Signal == "":
		fail(t, tr, ex, "refused %s, the client exited 0, reporting a success: an unknown code is a generic failure of its status class (§2.1)", ex.Brief())
	case uncaught(p.Stderr) != "":
		fail(t, tr, ex, "refused %s, the client exited %d with %s on stderr: its own error, not a failure it reported. A client that cannot handle a code it does not know has rejected it, which §2.1 says turns every new code into a breaking change", ex.Brief(), p.Exit, uncaught(p.Stderr))
	}
	return 1
}
