package distributor

import (
	"context"
	"github.com/sigrix-io/postern-conformance/wire"
	"net/http"
	"sync/atomic"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// burst is the most bundle requests --rate-limit sends.
const burst = 300

// limited reports whether an answer is a rate limit's refusal.
func limited(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// §5.6's rate limit, with --rate-limit: a burst of bundle requests with the
// buyer's token, from this one address. It runs after every other probe
// (as the timed rules do), so no other rule meets the limit it provokes.
var sectionRateLimit = []*Rule{
	{
		ID: "5.6/rate-limited", Section: "5.6", Level: 1, Keyword: Should, Agent: true,
		Title: "bundle retrieval is rate-limited: a burst of a few hundred is refused before its end",
		Needs: []engine.Need[*Env]{needRateLimit},
		Probe: func(t *T) {
			var stop atomic.Bool
			sent, unanswered := 0, 0
			for sent < burst && !stop.Load() && t.Ctx.Err() == nil {
				n := min(engine.DefaultInFlight, burst-sent)
				exs := t.SideBySide(n, func(i int, s *engine.Session, ctx context.Context) *wire.Exchange {
					return s.Do(ctx, get(protocol.BundlesRoute, t.Env.Agent, bearer(t.Env.Token), "a burst of bundle requests"))
				})
				sent += n
				for _, ex := range exs {
					if !engine.Whole(ex) {
						unanswered++
					}
					if limited(ex.Status) && !stop.Load() {
						t.Note("refused after %d requests at most: %s", sent, ex.Brief())
						stop.Store(true)
					}
				}
			}
			if !stop.Load() && unanswered > 0 {
				t.Undecided("%d of the %d bundle requests brought no whole answer, and none was refused: whether a limit holds is not decided", unanswered, sent)
			}
			if !stop.Load() {
				t.Fail(nil, "%d bundle requests with one token from one address were all served: §5.6 asks for a rate limit per token and per source address", sent)
			}
		},
	},
}
