package entitlement

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// §4.6 across the walk: stream is refused as run is. Wherever a step sends
// the two verbs the same body, its situation judges the answer run gave
// (failEach); where stream answered otherwise, that is one behaviour of the
// runner's stream handler, whatever the situation, and this sweep reports
// it once.
var section4_6 = []*Rule{
	{
		ID: "4.6/walk-stream-as-run", Section: "4.6", Level: 3, Keyword: Must, Evidence: true,
		Title: "stream is refused as run is, in every situation of the walk: one order of refusals for both verbs (§5.7.4's table)",
		Probe: func(t *T) {
			pairs := 0
			for _, p := range runStreamPairs(t.Evidence()) {
				pairs++
				run, stream := p[0], p[1]
				if run.Brief() != stream.Brief() {
					t.Fail(stream, "sent the same body in the same situation (%s), POST run answered %s and POST stream %s: §4.6 orders the refusals of both verbs alike, and §5.7.4's table gives run and stream one answer",
						situationOf(run), run.Brief(), stream.Brief())
				}
			}
			if pairs == 0 {
				t.NotApplicable("no step had both run and stream answer the same body (a Level 2 runner answers stream 501)")
			}
			t.Note("compared %d pairs", pairs)
		},
	},
}

// runStreamPairs pairs each POST run a step sent (through served) with the
// POST stream sent right after it, to the same runner with the same note.
// A pair answered differently is followed by run asked again; where that
// answer is stream's, the entitlement moved between the two requests, and
// the pair is dropped.
func runStreamPairs(exs []*wire.Exchange) [][2]*wire.Exchange {
	var pairs [][2]*wire.Exchange
	dropped := map[int]bool{}
	open := map[string]*wire.Exchange{} // runner and note → its run
	differing := map[string]int{}       // runner and note → the pair awaiting run again
	for _, ex := range exs {
		if ex.Method != http.MethodPost {
			continue
		}
		key := hostOf(ex) + "\x00" + ex.Note
		switch verbOf(ex) {
		case "run":
			if i, ok := differing[key]; ok {
				delete(differing, key)
				dropped[i] = ex.Brief() == pairs[i][1].Brief()
				continue
			}
			open[key] = ex
		case "stream":
			if ex.Is(http.StatusNotImplemented, "not_implemented") {
				continue // above a Level 2 runner's level: §3, not the entitlement
			}
			if run := open[key]; run != nil {
				delete(open, key)
				pairs = append(pairs, [2]*wire.Exchange{run, ex})
				if run.Brief() != ex.Brief() {
					differing[key] = len(pairs) - 1
				}
			}
		}
	}
	var out [][2]*wire.Exchange
	for i, p := range pairs {
		if !dropped[i] {
			out = append(out, p)
		}
	}
	return out
}

func hostOf(ex *wire.Exchange) string {
	if u, err := url.Parse(ex.URL); err == nil {
		return u.Host
	}
	return ex.URL
}

// situationOf is the why a served note carries.
func situationOf(ex *wire.Exchange) string {
	if _, why, ok := strings.Cut(ex.Note, "; "); ok {
		return why
	}
	return ex.Note
}

// asRun keeps, of a served pair whose stream answered otherwise than its
// run, the run alone: the difference is 4.6/walk-stream-as-run's.
func asRun(exs []*wire.Exchange) []*wire.Exchange {
	if len(exs) == 2 && verbOf(exs[0]) == "run" && verbOf(exs[1]) == "stream" && exs[0].Brief() != exs[1].Brief() {
		return exs[:1]
	}
	return exs
}
