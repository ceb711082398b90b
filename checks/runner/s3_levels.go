package runner

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// truncatedJSON is a body no conforming runner could execute: it is not
// JSON. Level probes send it so that nothing runs even on a runner that
// ignores its own level.
const truncatedJSON = `{"inputs": {"prompt": "conformance probe`

// §3 Conformance levels.
var section3 = []*Rule{
	{
		ID: "3/level-declared", Section: "3", Level: 1, Keyword: Must,
		Title:  "status reports a conformance level of 1, 2 or 3",
		Needs:  []Need{NeedStatus},
		Claims: []Claim{{Doc: "status", Path: "/level"}},
		Probe: func(t *T) {
			schemaFindings(t, "status", t.Env.Status.Ex, t.Env.Status.Obj)
			if n, ok := AsInt(t.Env.Status.Obj["level"]); !t.Failed() && (!ok || n < 1 || n > 3) {
				t.Fail(t.Env.Status.Ex, "status.level is %v, not 1, 2 or 3", show(t.Env.Status.Obj["level"]))
			}
			if t.Env.Level != 0 {
				t.Note("declares Level %d", t.Env.Level)
			}
		},
	},
	aboveLevel("run", 2),
	aboveLevel("stream", 3),
	atLevel("run", 2),
	atLevel("stream", 3),
}

// aboveLevel: a verb above the declared level answers 501 not_implemented.
func aboveLevel(verb string, need int) *Rule {
	return &Rule{
		ID: "3/" + verb + "-above-level", Section: "3", Level: 1, Keyword: Must,
		Title: fmt.Sprintf("%s answers 501 not_implemented on a runner below Level %d", verb, need),
		Needs: []Need{NeedStatus},
		Probe: func(t *T) {
			if t.Env.Level == 0 {
				t.NotApplicable("status declares no level to hold the runner to")
				return
			}
			if t.Env.Level >= need {
				t.NotApplicable("the runner declares Level %d, where %s is implemented", t.Env.Level, verb)
				return
			}
			ex := t.Do(levelProbe(verb))
			if !ex.Is(http.StatusNotImplemented, "not_implemented") {
				t.Fail(ex, "a Level %d runner answered POST %s with %s, not 501 not_implemented", t.Env.Level, verb, ex.Brief())
			}
		},
	}
}

// atLevel: a verb at or below the declared level is implemented: it does
// not answer 501 or 404.
func atLevel(verb string, need int) *Rule {
	return &Rule{
		ID: "3/" + verb + "-implemented", Section: "3", Level: need, Keyword: Must, Binding: Chain, Chain: "the level it reports is the level it implements",
		Title: fmt.Sprintf("%s is implemented at Level %d and above: a body nobody could run is refused, whole (no 501, no 404, no 2xx)", verb, need),
		Needs: []Need{NeedStatus},
		// Not answering is itself the breach here: a runner that never
		// completes a refusal of a body nobody could run has not
		// implemented the verb, whatever else it does.
		Probe: func(t *T) {
			ex := t.Do(levelProbe(verb))
			if errors.Is(ex.Err, engine.ErrGaveUp) {
				if prior := t.Session().Unanswered(ex); prior != nil {
					t.Cite(prior)
					t.Fail(prior, "POST %s was not sent again: the runner had left refusable requests to it without a whole answer within --timeout (this one: %s), so a Level %d runner never completes a refusal of %s",
						verb, prior.Brief(), t.Env.Level, verb)
					return
				}
			}
			switch {
			case !ex.Answered():
				t.Fail(ex, "POST %s got no answer (%v): a Level %d runner that answers nothing to a body nobody could run has not implemented %s (§3)", verb, ex.Err, t.Env.Level, verb)
			case ex.Status == http.StatusNotImplemented || ex.Status == http.StatusNotFound:
				t.Fail(ex, "a Level %d runner answered POST %s with %s, as if it did not implement it (§3)", t.Env.Level, verb, ex.Brief())
			case ex.Status >= 200 && ex.Status < 300:
				t.Fail(ex, "a Level %d runner answered POST %s with %s to a body that is not JSON: implementing %s (§3) means refusing it 400 bad_request (§4.2), and nothing could run on it", t.Env.Level, verb, ex.Brief(), verb)
			case !engine.Whole(ex):
				t.Fail(ex, "a Level %d runner answered POST %s with %s and never finished the answer (%v): a refusal of a body nobody could run comes whole at once, so %s is not implemented (§3)", t.Env.Level, verb, ex.Brief(), ex.Err, verb)
			default:
				t.Note("answered %s to a body nobody could run", ex.Brief())
			}
		},
	}
}

func levelProbe(verb string) wire.Request {
	r := wire.PostJSON(verb, truncatedJSON)
	r.Note = "truncated JSON: refusable by every runner, executable by none"
	return r
}
