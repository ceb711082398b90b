package client

import (
	"net/http"

	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §3: a client MUST NOT assume a level it has not read from status or
// inferred from a successful call. Asked for a stream by a Level 2 runner
// whose describe still carries the withdrawn capabilities.streaming (which
// §4.1 says a client acting on breaks §3 "in those words"), a client may
// fall back to run, or decline; it may not call stream on an assumption:
// after status said level 2, or with no status read at all. (The other
// reading, that a client trying the verb and acting on its 501 assumed
// nothing, rests on §3 stating the 501 "including a client that read
// level and called above it anyway": that sentence says why the runner's
// duty covers every verb, and gives a client no leave. README.md and
// traceability.tsv record the decision.)

var section3 = []*Rule{
	observed(&Rule{ID: "3/client-level-from-status", Section: "3", Level: 3, Keyword: MustNot,
		Title: "a client calls no verb above the level status declares: asked for a stream by a Level 2 runner, it falls back to run or declines",
		Probe: func(t *T) {
			tr := trialOf(t, scripted.LevelTwoStream)
			finished(t, tr)
			streams := tr.sent(protocol.Stream)
			if len(streams) == 0 {
				t.Note("asked for a stream by a Level 2 runner, the client %s", fellBack(tr))
				return
			}
			first := streams[0]
			for _, q := range tr.Requests {
				if q.Seq < first.Seq && q.Verb == protocol.Status && q.Ex.Method == http.MethodGet && q.Ex.Status == http.StatusOK {
					fail(t, tr, first.Ex, "status answered level 2, and the client then sent POST stream: it called a verb above the level it read (§3: a client MUST NOT assume a level it has not read from status; §4.1: reading capabilities.streaming and calling stream is exactly that)")
					return
				}
			}
			fail(t, tr, first.Ex, "the client sent POST stream having read no status: it called a verb on a level it had neither read from status nor inferred from a successful call (§3). The 501 that answers it is the runner's duty toward such a client, not leave to be one")
		}}, scripted.LevelTwoStream),
}

// fellBack says what a client did instead of calling stream.
func fellBack(tr *Trial) string {
	if len(tr.sent(protocol.Run)) > 0 {
		return "fell back to run (" + tr.Process.ending() + ")"
	}
	return "declined without calling stream (" + tr.Process.ending() + ")"
}
