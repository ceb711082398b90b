package engine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"gotest.tools/v3/assert"
)

type env struct{}

type (
	rule = engine.Rule[*env]
	tt   = engine.T[*env]
)

func session(t *testing.T, h http.Handler, timeout time.Duration) *engine.Session {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return engine.NewSession(wire.New(u, wire.Options{Timeout: timeout}), timeout, 0)
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func TestFactsAreComputedOnceAndCited(t *testing.T) {
	var computed atomic.Int32
	fact := &engine.Fact[*env, *wire.Exchange]{Name: "shared", Compute: func(t *tt) (*wire.Exchange, string) {
		computed.Add(1)
		return t.Do(wire.Get("status")), ""
	}}
	var rules []*rule
	for _, id := range []string{"1/a", "1/b", "1/c"} {
		rules = append(rules, &rule{ID: id, Section: "1", Level: 1, Keyword: engine.Must, Title: id,
			Requires: []engine.Dep[*env]{fact},
			Probe:    func(t *tt) { fact.Of(t) }})
	}
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules}, session(t, http.HandlerFunc(ok), time.Second), &env{}, rules)
	assert.Equal(t, computed.Load(), int32(1))
	for _, r := range res {
		assert.Equal(t, r.Outcome, engine.Pass)
		assert.Equal(t, len(r.Exchanges), 1, "the fact's exchange is cited by %s", r.Rule.ID)
	}
}

// TestAWantedFactIsStartedOnceAndNeverSkips: a rule wanting a fact nobody
// requires starts it, one wanting a fact another rule requires shares its
// computation, and one wanting an unavailable fact is told why and goes on.
func TestAWantedFactIsStartedOnceAndNeverSkips(t *testing.T) {
	var computed atomic.Int32
	fact := &engine.Fact[*env, *wire.Exchange]{Name: "shared", Compute: func(t *tt) (*wire.Exchange, string) {
		computed.Add(1)
		return t.Do(wire.Get("status")), ""
	}}
	absent := &engine.Fact[*env, bool]{Name: "absent", Compute: func(*tt) (bool, string) { return false, "the runner declares no such thing" }}
	var said string
	wants := &rule{ID: "1/wants", Section: "1", Level: 1, Keyword: engine.Must, Title: "wants", Agent: true, Probe: func(t *tt) {
		if ex, why := fact.Want(t); ex == nil || why != "" {
			t.Fail(nil, "no value: %s", why)
		}
		_, said = absent.Want(t)
	}}
	needs := &rule{ID: "1/needs", Section: "1", Level: 1, Keyword: engine.Must, Title: "needs", Agent: true,
		Requires: []engine.Dep[*env]{fact}, Probe: func(t *tt) { fact.Of(t) }}
	for _, rules := range [][]*rule{{wants}, {needs, wants}, {wants, needs}} {
		computed.Store(0)
		res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules}, session(t, http.HandlerFunc(ok), time.Second), &env{}, rules)
		assert.Equal(t, computed.Load(), int32(1))
		for _, r := range res {
			assert.Equal(t, r.Outcome, engine.Pass, "%+v", r)
			assert.Equal(t, len(r.Exchanges), 1, "the fact's exchange is cited by %s", r.Rule.ID)
		}
		assert.Equal(t, said, "the runner declares no such thing")
	}
}

func TestSkipStopsTheProbeButFindingsStand(t *testing.T) {
	reached := false
	skipper := &rule{ID: "1/skip", Section: "1", Level: 1, Keyword: engine.Must, Title: "skips", Probe: func(t *tt) {
		t.NotApplicable("nothing to judge")
		reached = true
	}}
	failer := &rule{ID: "1/fail", Section: "1", Level: 1, Keyword: engine.Must, Title: "fails then skips", Probe: func(t *tt) {
		t.Fail(nil, "broken")
		t.Undecided("and then nothing more to judge")
	}}
	inferred := &rule{ID: "1/inferred", Section: "1", Level: 1, Keyword: engine.Must, Title: "warns", Probe: func(t *tt) {
		t.Warn(nil, "only a schema says so")
	}}
	rules := []*rule{skipper, failer, inferred}
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules}, session(t, http.HandlerFunc(ok), time.Second), &env{}, rules)
	assert.Assert(t, !reached)
	assert.Equal(t, res[0].Outcome, engine.Skip)
	assert.Equal(t, res[1].Outcome, engine.Fail)
	assert.Equal(t, res[2].Outcome, engine.Warn)
}

func TestAnUnansweredRouteIsGivenUpAndItsRulesSkip(t *testing.T) {
	h, release := hangsOnPost()
	defer release() // before the server closes: it waits for its handlers
	var rules []*rule
	for i := range 10 {
		rules = append(rules, &rule{ID: "1/post" + string(rune('a'+i)), Section: "1", Level: 1, Keyword: engine.Must, Title: "posts",
			Probe: func(t *tt) {
				if ex := t.Do(wire.PostJSON("run", "{}")); !ex.Answered() {
					t.Fail(ex, "no answer")
				}
			}})
	}
	start := time.Now()
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules, Workers: 2}, session(t, h, 200*time.Millisecond), &env{}, rules)
	// Two workers: the first requests wait out their timeout, and once two
	// in a row have gone unanswered no later one is sent.
	assert.Assert(t, time.Since(start) < 5*time.Second, "took %s", time.Since(start))
	fails, skips := 0, 0
	for _, r := range res {
		switch r.Outcome {
		case engine.Fail:
			fails++
		case engine.Skip:
			skips++
		}
	}
	assert.Equal(t, fails+skips, 10)
	assert.Assert(t, fails >= 2 && fails <= 4, "%d requests were sent and went unanswered", fails)
}

func TestTheRunDeadlineSkipsWhatIsUndecided(t *testing.T) {
	slow := &rule{ID: "1/slow", Section: "1", Level: 1, Keyword: engine.Must, Title: "waits", Probe: func(t *tt) {
		if ex := t.Do(wire.Get("status")); !ex.Answered() {
			t.Fail(ex, "no answer")
		}
	}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rules := []*rule{slow}
	res := engine.Run(ctx, engine.Suite[*env]{Rules: rules}, session(t, h, 5*time.Second), &env{}, rules)
	assert.Equal(t, res[0].Outcome, engine.Skip, "%+v", res[0])
	assert.Equal(t, res[0].Kind, engine.Undecided, "a rule the deadline cut short is undecided")
}

// TestTheThreeKindsOfSkip: a posture the rule does not apply to, an option
// the user did not give, and an answer that never came are three SKIPs of
// three kinds, whichever way the rule reaches them: a need, a fact, the
// probe itself, or the run's deadline of the user's own choosing.
func TestTheThreeKindsOfSkip(t *testing.T) {
	type want struct {
		kind engine.SkipKind
		says string
	}
	silent := &engine.Fact[*env, *wire.Exchange]{Name: "silent", Compute: func(t *tt) (*wire.Exchange, string) {
		ex := t.Do(wire.Get("describe"))
		if !ex.Answered() {
			t.Undecided("describe did not answer")
		}
		return ex, ""
	}}
	absent := &engine.Fact[*env, bool]{Name: "absent", Compute: func(*tt) (bool, string) { return false, "the runner declares no such thing" }}
	mk := func(id string, f func(r *rule)) *rule {
		r := &rule{ID: "1/" + id, Section: "1", Level: 1, Keyword: engine.Must, Title: id, Probe: func(*tt) {}}
		f(r)
		return r
	}
	cases := map[*rule]want{
		mk("posture", func(r *rule) { r.Probe = func(t *tt) { t.NotApplicable("a posture this rule does not apply to") } }): {engine.NotApplicable, "posture"},
		mk("need-posture", func(r *rule) {
			r.Needs = []engine.Need[*env]{{Name: "posture", Check: func(*env) string { return "not this posture" }}}
		}): {engine.NotApplicable, "not this posture"},
		mk("need-option", func(r *rule) {
			r.Needs = []engine.Need[*env]{{Name: "execute", Kind: engine.NeedsOption, Check: func(*env) string { return "needs --execute" }}}
		}): {engine.NeedsOption, "--execute"},
		mk("option", func(r *rule) { r.Probe = func(t *tt) { t.NeedsOption("needs --origin") } }): {engine.NeedsOption, "--origin"},
		mk("fact-absent", func(r *rule) { r.Requires = []engine.Dep[*env]{absent} }):              {engine.NotApplicable, "no such thing"},
		mk("fact-silent", func(r *rule) { r.Requires = []engine.Dep[*env]{silent} }):              {engine.Undecided, "did not answer"},
		mk("unanswered", func(r *rule) {
			r.Probe = func(t *tt) { t.SkipFor(t.Do(wire.Get("status")), "no status to judge") }
		}): {engine.Undecided, "no status"},
		mk("answered", func(r *rule) {
			r.Probe = func(t *tt) { t.SkipFor(t.Do(wire.Get("ok")), "another rule judges it") }
		}): {engine.NotApplicable, "another rule"},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/ok") {
			return
		}
		select { // silent until the client gives up
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	var rules []*rule
	for r := range cases {
		rules = append(rules, r)
	}
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules}, session(t, h, 100*time.Millisecond), &env{}, rules)
	for _, r := range res {
		w := cases[r.Rule]
		assert.Check(t, r.Outcome == engine.Skip && r.Kind == w.kind, "%s: %s %s (%s), want a %s SKIP", r.Rule.ID, r.Outcome, r.Kind, r.Reason, w.kind)
		assert.Check(t, strings.Contains(r.Reason, w.says), "%s: %q", r.Rule.ID, r.Reason)
	}

	// A deadline the user chose says so: a longer one may decide the rule.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wait := mk("waits", func(r *rule) { r.Probe = func(t *tt) { t.Do(wire.Get("status")) } })
	res = engine.Run(ctx, engine.Suite[*env]{Rules: []*rule{wait}, OwnDeadline: 50 * time.Millisecond},
		session(t, h, 5*time.Second), &env{}, []*rule{wait})
	assert.Equal(t, res[0].Kind, engine.Undecided, "%+v", res[0])
	assert.Check(t, strings.Contains(res[0].Reason, "which --deadline set"), res[0].Reason)

	// A SKIP of no kind is taken for undecided by the reports, never for decided.
	assert.Equal(t, engine.Result[*env]{Rule: wait, Outcome: engine.Skip}.Record().Kind, engine.Undecided)
}

func TestAgentRulesRunOneAtATimeAndEvidenceSeesEveryProbe(t *testing.T) {
	var inFlight, most atomic.Int32
	agent := func(id string) *rule {
		return &rule{ID: id, Section: "1", Level: 1, Keyword: engine.Must, Title: id, Agent: true, Probe: func(t *tt) {
			n := inFlight.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			time.Sleep(10 * time.Millisecond)
			t.Do(wire.Get("run-" + id[2:]))
			inFlight.Add(-1)
		}}
	}
	sweep := &rule{ID: "1/sweep", Section: "1", Level: 1, Keyword: engine.Must, Title: "sweeps", Evidence: true, Probe: func(t *tt) {
		t.Note("%d", len(t.Evidence()))
		if len(t.Evidence()) != 3 {
			t.Fail(nil, "saw %d exchanges", len(t.Evidence()))
		}
	}}
	all := []*rule{agent("1/x"), agent("1/y"), agent("1/z"), sweep}
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: all}, session(t, http.HandlerFunc(ok), time.Second), &env{}, []*rule{sweep})
	assert.Equal(t, len(res), 1)
	assert.Equal(t, res[0].Outcome, engine.Pass, "%+v", res[0])
	assert.Equal(t, most.Load(), int32(1))
}

func TestAMethodThatNeverAnswersIsGivenUpOnEveryPath(t *testing.T) {
	h, release := hangsOnPost()
	defer release() // before the server closes: it waits for its handlers
	var rules []*rule
	for i := range 12 {
		path := "verb-" + string(rune('a'+i))
		rules = append(rules, &rule{ID: "1/" + path, Section: "1", Level: 1, Keyword: engine.Must, Title: "posts",
			Probe: func(t *tt) {
				t.Do(wire.Get("status")) // answered: GETs are fine
				if ex := t.Do(wire.PostJSON(path, "{}")); !ex.Answered() {
					t.Fail(ex, "no answer")
				}
			}})
	}
	start := time.Now()
	sess := session(t, h, 300*time.Millisecond)
	sess.Patience = 50 * time.Millisecond
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: rules}, sess, &env{}, rules)
	took := time.Since(start)
	sent := 0
	for _, r := range res {
		if r.Outcome == engine.Fail {
			sent++
		}
	}
	// Every POST has its own path, so no route is given up twice; the
	// method is, once three have gone unanswered, and the rest are held,
	// not sent. No wave goes while one still waits, so at most two waves
	// go: on a loaded machine the rules' GETs are answered slowly, the
	// first wave may hold fewer than three POSTs, and a second of up to
	// DefaultInFlight follows it.
	assert.Assert(t, sent <= 2+engine.DefaultInFlight, "%d POSTs were sent and went unanswered", sent)
	assert.Assert(t, sent < len(rules), "every POST was sent: none was held once the method had gone unanswered")
	assert.Assert(t, took < 5*time.Second, "took %s", took)
}

// hangsOnPost answers every request but a POST, which it holds until the
// client gives up or release is called.
func hangsOnPost() (h http.Handler, release func()) {
	hang := make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}), func() { close(hang) }
}

func TestProgressCountsEveryRuleOnceAndNamesARunningOne(t *testing.T) {
	var rules []*rule
	for i := range 20 {
		id := "1/r" + string(rune('a'+i))
		rules = append(rules, &rule{ID: id, Section: "1", Level: 1, Keyword: engine.Must, Title: id, Probe: func(t *tt) {
			t.Do(wire.Get("status"))
		}})
	}
	sweep := &rule{ID: "1/sweep", Section: "1", Level: 1, Keyword: engine.Must, Title: "sweeps", Evidence: true, Probe: func(t *tt) {}}
	all := append(rules, sweep)
	// The calls come one at a time: these plain variables are written by
	// the callback with no lock of its own (the race detector holds it).
	var calls, last, most int
	var final string
	progress := func(decided, total int, current string) {
		calls++
		assert.Check(t, decided >= last, "decided went back from %d to %d", last, decided)
		assert.Check(t, total == len(all), "total %d", total)
		if decided == last { // a rule starting: it is being decided
			assert.Check(t, current != "", "no rule named as one starts at %d/%d", decided, total)
		}
		last, most, final = decided, max(most, decided), current
	}
	// Only the sweep is selected: the rules it draws on are run, and counted.
	res := engine.Run(context.Background(), engine.Suite[*env]{Rules: all, Progress: progress},
		session(t, http.HandlerFunc(ok), time.Second), &env{}, []*rule{sweep})
	assert.Equal(t, len(res), 1)
	assert.Equal(t, most, len(all))
	assert.Equal(t, calls, 2*len(all), "one call as each rule starts, one as it is decided")
	assert.Equal(t, final, "", "nothing is being decided at the end")
}
