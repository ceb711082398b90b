package distributor

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §5.3 The check: what every 200 answer carries. These rules judge every
// check answer of the run (the timed rules' polls included), each once.
var section5_3 = []*Rule{
	{
		ID: "5.3/answer-schema", Section: "5.3", Level: 1, Keyword: Required,
		Title:    "every check answer carries postern, state, agent_id, checked_at, stale_after_seconds and grace_seconds, each of its type",
		Evidence: true,
		Probe: func(t *T) {
			each(t, false, func(a checkAnswer) {
				for _, m := range []string{"postern", "state", "agent_id", "checked_at"} {
					v, ok := a.obj[m]
					if _, str := v.(string); !ok || !str {
						t.Fail(a.ex, "%s: %s is %s, not a string: every member of §5.3's answer is REQUIRED", a.ex.RequestLine(), m, shown(v, ok))
					}
				}
				for _, m := range []string{"stale_after_seconds", "grace_seconds"} {
					v, ok := a.obj[m]
					if n, num := wire.Number(v); !ok || !num || n < 0 || n != math.Trunc(n) {
						t.Fail(a.ex, "%s: %s is %s, not a whole number of seconds: §5.3 requires it whether or not there is a cache (§5.7.1: 0 is a declaration too)", a.ex.RequestLine(), m, shown(v, ok))
					}
				}
				if v, ok := a.obj["access_ends_at"]; ok {
					if _, str := v.(string); !str {
						t.Fail(a.ex, "%s: access_ends_at is %s, not a timestamp string (§5.3)", a.ex.RequestLine(), shown(v, ok))
					}
				}
				if v, _ := a.obj["postern"].(string); v != "" && v != protocol.Version {
					t.Warn(a.ex, "%s: postern is %q where this checker speaks %s (inferred: only the schema fixes the value)", a.ex.RequestLine(), v, protocol.Version)
				}
			})
		},
	},
	{
		ID: "5.3/agent-id-echo", Section: "5.3", Level: 1, Keyword: Must,
		Title:    "agent_id is the identifier the request addressed, octet for octet",
		Evidence: true,
		Probe: func(t *T) {
			each(t, false, func(a checkAnswer) {
				if got, ok := a.obj["agent_id"].(string); ok && got != a.id {
					t.Fail(a.ex, "%s answered agent_id %q for the identifier %q: §5.3 has it echo the question octet for octet", a.ex.RequestLine(), got, a.id)
				}
			})
		},
	},
	{
		ID: "5.3/state-values", Section: "5.3", Level: 1, Keyword: Must, Binding: Chain, Chain: "no third state",
		Title:    "state is active or revoked, nothing else",
		Evidence: true,
		Probe: func(t *T) {
			each(t, false, func(a checkAnswer) {
				if s, ok := a.obj["state"].(string); ok && s != protocol.StateActive && s != protocol.StateRevoked {
					t.Fail(a.ex, "%s answered state %q: §5.3 knows active and revoked, and a check that answers for no buyer answers 404", a.ex.RequestLine(), s)
				}
			})
		},
	},
	{
		ID: "5.3/checked-at-rfc3339", Section: "5.3", Level: 1, Keyword: Required,
		Title:    "checked_at (and access_ends_at, where sent) is an RFC 3339 timestamp",
		Evidence: true,
		Probe: func(t *T) {
			each(t, false, func(a checkAnswer) {
				for _, m := range []string{"checked_at", "access_ends_at"} {
					if s, ok := a.obj[m].(string); ok {
						if _, ok := protocol.ParseStamp(s); !ok {
							t.Fail(a.ex, "%s: %s is %q, not an RFC 3339 timestamp (a date, T, a time and an offset or Z) (§5.3)", a.ex.RequestLine(), m, s)
						}
					}
				}
			})
		},
	},
	{
		ID: "5.3/checked-at-not-future", Section: "5.3", Level: 1, Keyword: Must, Binding: Chain, Chain: "a read time is never ahead of the reply",
		Title:    "checked_at is never later than the answer: it is when the authority was read, measured on the distributor's own clock (from Date)",
		Evidence: true,
		Probe: func(t *T) {
			off, dated := clockOffset(t.Evidence())
			eachRead(t, func(a checkAnswer, s string, at time.Time) {
				// A stamp written to the second may have been rounded up.
				latest := a.ex.Sent.Add(a.ex.Elapsed).Add(off.hi).Add(stampSlack(s))
				if at.After(latest) {
					t.Fail(a.ex, "%s: checked_at %s is %s later than the distributor's clock can have read when it answered (%s): §5.3 makes it the moment the authority was read", a.ex.RequestLine(), s, at.Sub(latest).Round(time.Millisecond), clockWords(off, dated))
				}
			})
		},
	},
	{
		ID: "5.3/access-ended-revoked", Section: "5.3", Level: 1, Keyword: Should,
		Title: "once a withdrawn agent's access has ended, its check answers revoked with the date, not 404",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(roleChecks),
		Probe: func(t *T) {
			ex := roleChecks.Of(t)[t.Env.Withdrawn]
			obj, err := answerOf(ex)
			switch {
			case ex.Status == http.StatusNotFound:
				t.Fail(ex, "the check of --withdrawn-agent answered 404: §5.3 has a buyer whose access ran out told revoked, with the date, since the token still resolves to a buyer who was entitled")
			case err != nil:
				t.SkipFor(ex, "the check of --withdrawn-agent %s", err)
			case obj["state"] == protocol.StateActive:
				t.NotApplicable("--withdrawn-agent still answers active (its access has not ended yet): nothing to judge")
			case obj["access_ends_at"] == nil:
				t.Fail(ex, "the check of --withdrawn-agent answered revoked without access_ends_at: §5.3 has it carry the date access ended")
			}
		},
	},
	{
		ID: "5.3/no-widening", Section: "5.3", Level: 1, Keyword: MustNot,
		Title: "no query parameter, header or cookie widens an answer beyond the token's buyer, in the spellings frameworks use: the stranger's token stays a stranger's",
		Needs: []engine.Need[*Env]{needStranger}, Requires: deps(refusals),
		Probe: func(t *T) {
			plain := refusals.Of(t).check["the stranger's token, for --agent"]
			if plain.Status == http.StatusOK {
				t.NotApplicable("the stranger's own check of --agent answered 200: --stranger-token is entitled to --agent, so it cannot show a widening")
			}
			probes := widenings(t.Env)
			exs := t.SideBySide(len(probes), func(i int, s *engine.Session, ctx context.Context) *wire.Exchange { return s.Do(ctx, probes[i]) })
			for _, ex := range exs {
				if ex.Status >= 200 && ex.Status < 300 {
					t.Fail(ex, "%s (%s) answered %s where the stranger alone gets %s: the request widened the answer beyond the token's buyer (§5.3)", ex.RequestLine(), ex.Note, ex.Brief(), plain.Brief())
				}
			}
		},
	},
}

// The names a framework's flag that widens an answer goes by, the values
// it takes for yes, and the names a buyer is named by.
var (
	wideningNames  = []string{"all", "admin", "debug", "include", "scope", "as", "on_behalf_of", "buyer", "user"}
	wideningValues = []string{"1", "true", "yes"}
	buyerNames     = []string{"access_token", "token", "buyer", "as", "user", "on_behalf_of"}
	buyerHeaders   = []string{"X-Postern-Token", "X-Access-Token", "X-On-Behalf-Of", "X-Buyer", "X-Forwarded-User", "X-User-Id"}
)

// widenings are the stranger's checks of --agent, each with something that
// might widen the answer: every flag name with every value for yes, as a
// query parameter, and scope and include "all"; the buyer's token under the
// names a buyer goes by; a JSON-ish ?filter=; the same flags as headers
// (X-Admin: true, Admin: true), a request for each value; the buyer's
// token in headers and a session cookie. Each is a request of its own (a
// flag read after another parameter has already refused would hide), sent
// side by side: 47 in all.
func widenings(e *Env) []wire.Request {
	var out []wire.Request
	note := "the stranger's token, with %s"
	query := func(q string) {
		out = append(out, e.checkRequest(e.Agent+"?"+q, bearer(e.Stranger), fmt.Sprintf(note, "a query that might widen it")))
	}
	for _, n := range wideningNames {
		for _, v := range wideningValues {
			query(n + "=" + v)
		}
	}
	query("scope=all")
	query("include=all")
	for _, n := range buyerNames {
		query(n + "=" + e.Token)
	}
	for _, f := range []string{`{"all":true}`, `{"buyer":"*"}`} {
		query("filter=" + url.QueryEscape(f))
	}
	for _, v := range wideningValues {
		r := e.checkRequest(e.Agent, bearer(e.Stranger), fmt.Sprintf(note, "X-Admin, Admin, X-All, X-Debug and the other flag headers set to "+v))
		for _, n := range wideningNames {
			h := strings.ReplaceAll(n, "_", "-")
			r.Header.Set("X-"+h, v)
			r.Header.Set(h, v)
		}
		out = append(out, r)
	}
	for _, h := range buyerHeaders {
		r := e.checkRequest(e.Agent, bearer(e.Stranger), fmt.Sprintf(note, h+" set to the buyer's token"))
		r.Header.Set(h, e.Token)
		out = append(out, r)
	}
	// A storefront's session cookie, where a web app's middleware may look
	// first.
	r := e.checkRequest(e.Agent, bearer(e.Stranger), fmt.Sprintf(note, "the buyer's token as a session cookie"))
	r.Header.Set("Cookie", "session="+e.Token+"; token="+e.Token)
	return append(out, r)
}

// each calls judge for the check answers of the run: every one where
// every is set (a rule about time), otherwise the first to each URL (a
// rule about shape, which the polls of the timed rules would repeat).
func each(t *T, every bool, judge func(checkAnswer)) {
	as := checkAnswers(t.Evidence())
	if len(as) == 0 {
		t.Undecided("no check of the run was answered 200")
	}
	first := firstTime()
	for _, a := range as {
		if every || first(a.ex.URL) {
			judge(a)
		}
	}
}

// eachRead calls judge on every check answer of the run whose checked_at
// is an RFC 3339 timestamp, with the text and the instant it names (one
// that is not is 5.3/checked-at-rfc3339's).
func eachRead(t *T, judge func(a checkAnswer, stamp string, at time.Time)) {
	each(t, true, func(a checkAnswer) {
		s, _ := a.obj["checked_at"].(string)
		if at, ok := protocol.ParseStamp(s); ok {
			judge(a, s, at)
		}
	})
}

func shown(v any, present bool) string {
	if !present {
		return "missing"
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

func clockWords(o offset, dated bool) string {
	if !dated {
		return fmt.Sprintf("no Date header came, so %s is allowed for the clocks' difference", noDate)
	}
	return o.String()
}

func deps(ds ...engine.Dep[*Env]) []engine.Dep[*Env] { return ds }
