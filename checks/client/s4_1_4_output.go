package client

import (
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
)

// §4.1.4: an unrecognised output.type is the one unknown a client may not
// ignore: it MUST NOT present value as text, MUST NOT report the run as
// failed, and SHOULD say which type it was given. A bytes output's
// media_type is compared without regard to case, and a client knowing
// bytes but not the media type does not present the value as text.

var section4_1_4 = []*Rule{
	observed(&Rule{ID: "4.1.4/client-unknown-type-not-text", Section: "4.1.4", Level: 2, Keyword: MustNot,
		Title: "a client does not present the value of an output type it does not know as text",
		Probe: func(t *T) {
			tr := outputTrial(t, scripted.UnknownOutputType)
			if tr.shows(tr.Scenario.Hidden) {
				fail(t, tr, nil, "run answered an output of type %s, and the client printed its value as text (§4.1.4: type says how to read value, and a client that does not know it has not read it)", tr.Scenario.Type)
			}
		}}, scripted.UnknownOutputType),
	observed(&Rule{ID: "4.1.4/client-unknown-type-not-failed", Section: "4.1.4", Level: 2, Keyword: MustNot,
		Title: "a client does not report a run failed because its output type is unknown",
		Probe: func(t *T) {
			tr := outputTrial(t, scripted.UnknownOutputType)
			if p := tr.Process; p.Exit != 0 || p.Signal != "" {
				fail(t, tr, nil, "run answered 200 with an output of type %s, and the client reported a failure (%s): the run succeeded, beside a client that cannot render it (§4.1.4)", tr.Scenario.Type, p.ending())
			}
		}}, scripted.UnknownOutputType),
	observed(&Rule{ID: "4.1.4/client-names-unknown-type", Section: "4.1.4", Level: 2, Keyword: Should,
		Title: "a client says which output type it could not render",
		Probe: func(t *T) {
			tr := outputTrial(t, scripted.UnknownOutputType)
			if !tr.said(tr.Scenario.Type) {
				fail(t, tr, nil, "run answered an output of type %s, and the client did not name the type, on stderr or stdout (§4.1.4: the one thing that tells a user to reach for another client)", tr.Scenario.Type)
			}
		}}, scripted.UnknownOutputType),
	observed(&Rule{ID: "4.1.4/client-media-type-case", Section: "4.1.4", Level: 2, Keyword: MustNot,
		Title: "a client does not refuse a bytes output over the case of its media_type",
		Probe: func(t *T) {
			tr := outputTrial(t, scripted.BytesUpperCase)
			p := tr.Process
			if p.Exit == 0 && p.Signal == "" {
				return
			}
			ctrl := t.Env.Trial(scripted.BytesPNG)
			if ctrl != nil && ctrl.Err == nil && !ctrl.Process.Killed && ctrl.servedOne() {
				cite(t, ctrl)
				if ctrl.Process.Exit != 0 || ctrl.Process.Signal != "" {
					t.NotApplicable("the client reports a bytes output as failed whatever the case of its media_type (%s: %s too), so the case is not what it refused", scripted.BytesPNG, ctrl.Process.ending())
				}
			}
			fail(t, tr, nil, "run answered 200 with a bytes output whose media_type is %s, and the client reported a failure (%s)%s: media types compare without regard to case (§4.1.4)", tr.Scenario.Type, p.ending(), ctrlWords(ctrl, "takes the same output labelled "+strings.ToLower(tr.Scenario.Type)))
		}}, scripted.BytesUpperCase, scripted.BytesPNG),
	observed(&Rule{ID: "4.1.4/client-bytes-not-text", Section: "4.1.4", Level: 2, Keyword: MustNot,
		Title: "a client knowing bytes but not the media type does not present the value as text",
		Probe: func(t *T) {
			tr := outputTrial(t, scripted.BytesUnknownMedia)
			if tr.shows(tr.Scenario.Hidden) {
				fail(t, tr, nil, "run answered a bytes output of media type %s, and the client printed its base64 value as text (§4.1.4: it may offer to save the artifact, never present it as text)", tr.Scenario.Type)
			}
		}}, scripted.BytesUnknownMedia),
}

// outputTrial is the trial of an output scenario, once the client has
// finished it, and its run was answered.
func outputTrial(t *T, scenario string) *Trial {
	tr := trialOf(t, scenario)
	finished(t, tr)
	served(t, tr)
	if len(tr.runs()) == 0 {
		t.NotApplicable("the client sent no run, so no output reached it (it sent %s)", tr.brief())
	}
	return tr
}
