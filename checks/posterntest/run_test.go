package posterntest

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const top = "TestRunner"

// checked runs Run over the recorder against the reference runner with
// faults planted.
func checked(t *testing.T, faults []string, opts ...Option) *record {
	t.Helper()
	rn, err := fixtures.New(fixtures.Config{Faults: faults})
	assert.NilError(t, err)
	opts = append([]Option{Origin(fixtures.AllowedOrigin)}, opts...)
	return recordRun(t, top, nil, func(rt tester) { runCheck(rt, rn, opts) })
}

func texts(es []event) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Text + "\n")
	}
	return b.String()
}

func TestAFailIsAnErrorWithItsEvidence(t *testing.T) {
	r := checked(t, []string{"describe-other-agent"}, Rules("2.2", "4.4/json"))
	sub := top + "/2.2/same-agent-id"
	assert.DeepEqual(t, r.failed(), []string{sub, top})
	errs := texts(r.of(sub, "error"))
	assert.Check(t, is.Contains(errs, "FAIL  "))
	assert.Check(t, is.Contains(errs, "[2.2/same-agent-id]"))
	assert.Check(t, is.Contains(errs, `describe.agent.id is "fixture/another-agent"`))
	assert.Check(t, is.Contains(errs, "> GET http://127.0.0.1:"))
	assert.Check(t, is.Contains(errs, "< HTTP/1.1 200"))
	assert.Check(t, is.Contains(texts(r.of(top, "error")), "1 rule FAILs not excused by a baseline: 2.2/same-agent-id"))
	assert.Check(t, is.Contains(texts(r.of(top+"/4.4/json", "log")), "PASS  "))
}

func TestAKnownFailureIsLogged(t *testing.T) {
	r := checked(t, []string{"describe-other-agent"}, Rules("2.2"), Baseline("2.2/same-agent-id"))
	assert.Check(t, is.Len(r.failed(), 0), r.String())
	logs := texts(r.of(top+"/2.2/same-agent-id", "log"))
	assert.Check(t, is.Contains(logs, "KNOWN "))
	assert.Check(t, is.Contains(logs, "known failure, excused by the baseline"))
	assert.Check(t, is.Contains(texts(r.of(top, "log")), "1 known"))
}

func TestABaselineFileExcusesAsTheCommandsDoes(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".postern-baseline")
	assert.NilError(t, writeFile(file, "# known\n2.2/same-agent-id  # describe-other-agent\n"))
	r := checked(t, []string{"describe-other-agent"}, Rules("2.2"), BaselineFile(file))
	assert.Check(t, is.Len(r.failed(), 0), r.String())
}

func TestAWarnIsLoggedAndFailsOnlyAStrictRun(t *testing.T) {
	sub := top + "/4.1/withdrawn-capabilities"
	r := checked(t, []string{"describe-streaming-flag"}, Rules("4.1/withdrawn-capabilities"))
	assert.Check(t, is.Len(r.failed(), 0), r.String())
	assert.Check(t, is.Contains(texts(r.of(sub, "log")), "WARN  "))

	r = checked(t, []string{"describe-streaming-flag"}, Rules("4.1/withdrawn-capabilities"), Strict())
	assert.DeepEqual(t, r.failed(), []string{sub, top})
	assert.Check(t, is.Contains(texts(r.of(sub, "error")), "a WARN fails a strict run"))
}

func TestASkipSkipsWithItsReason(t *testing.T) {
	r := checked(t, nil, Rules("4.2/run-id-unique"))
	skips := r.of(top+"/4.2/run-id-unique", "skip")
	assert.Assert(t, is.Len(skips, 1), r.String())
	assert.Check(t, is.Contains(skips[0].Text, "needs --execute"))
	assert.Check(t, is.Len(r.failed(), 0))
}

func TestAStaleBaselineEntryIsNamed(t *testing.T) {
	r := checked(t, nil, Rules("4.4/json"), Baseline("4.4/json"))
	assert.Check(t, is.Len(r.failed(), 0), r.String())
	assert.Check(t, is.Contains(texts(r.of(top, "log")), "4.4/json is in the baseline but now PASS"))

	r = checked(t, nil, Rules("4.4/json"), Baseline("4.4/json"), StrictBaseline())
	assert.DeepEqual(t, r.failed(), []string{top})
	assert.Check(t, is.Contains(texts(r.of(top, "error")), "the baseline is stale"))
}

// What Run cannot use ends the test at once, saying why.
func TestWhatCannotBeCheckedIsFatal(t *testing.T) {
	for _, c := range []struct {
		name   string
		target any
		opts   []Option
		want   string
	}{
		{"target type", 42, nil, "not int"},
		{"nil target", nil, nil, "not <nil>"},
		{"walk option", "http://127.0.0.1:1", []Option{Window(time.Second)}, "posterntest.Window does not apply to Run"},
		{"bad origin", "http://127.0.0.1:1", []Option{Origin("https://app.example.test/")}, "is not an origin"},
		{"no rule", "http://127.0.0.1:1", []Option{Rules("9.9")}, `posterntest.Rules("9.9") matches no rule`},
		{"baseline pattern", "http://127.0.0.1:1", []Option{Baseline("4.4")}, "is a pattern, not a rule ID"},
		{"both baselines", "http://127.0.0.1:1", []Option{Baseline("4.4/json"), BaselineFile("x")}, "not both"},
		{"unreachable", "http://127.0.0.1:1", []Option{Timeout(time.Second)}, "cannot reach"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := recordRun(t, top, nil, func(rt tester) { runCheck(rt, c.target, c.opts) })
			fatal := r.of(top, "fatal")
			assert.Assert(t, is.Len(fatal, 1), r.String())
			assert.Check(t, is.Contains(fatal[0].Text, c.want))
			assert.Check(t, is.Len(r.tests, 0), "no subtest")
		})
	}
	r := recordRun(t, top, nil, func(rt tester) { runWalk(rt, entitlement.Func(nil), []Option{Origin(fixtures.AllowedOrigin)}) })
	assert.Check(t, is.Contains(texts(r.of(top, "fatal")), "posterntest.Origin does not apply to RunEntitlement"))
}

// go test -run selects the rules checked, not only the subtests shown.
func TestGoTestRunNarrowsTheCheck(t *testing.T) {
	withRun(t, top+"/4.4/content-type")
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	r := recordRun(t, top, goTestSelects, func(rt tester) { runCheck(rt, rn, nil) })
	assert.DeepEqual(t, r.tests, []string{top + "/4.4", top + "/4.4/content-type"})
	assert.Check(t, is.Contains(texts(r.of(top, "log")), "1 pass  0 fail  0 warn  0 skip"), r.String())
}

// A subtest the testing package runs though goTestSelects said it would
// not is checked on its own when it starts.
func TestASubtestGoTestRunsIsCheckedAnyway(t *testing.T) {
	withRun(t, top+"/4.4/content-type")
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	r := recordRun(t, top, nil, func(rt tester) { runCheck(rt, rn, []Option{Rules("4.4/content-type", "4.4/json")}) })
	assert.Check(t, is.Len(r.failed(), 0), r.String())
	for _, sub := range []string{"/4.4/content-type", "/4.4/json"} {
		assert.Check(t, is.Contains(texts(r.of(top+sub, "log")), "PASS  "), r.String())
	}
	assert.Check(t, is.Contains(texts(r.of(top, "log")), "2 pass  0 fail"), r.String())
}

func TestGoTestSelects(t *testing.T) {
	for _, c := range []struct {
		run, skip string
		want      []string
	}{
		{"", "", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"}},
		{"T/4.2/run-id-unique", "", []string{"T/4.2/run-id-unique"}},
		{"T/4.2", "", []string{"T/4.2/run-id-unique", "T/4.2.1/x"}},
		{`T/^4\.2$`, "", []string{"T/4.2/run-id-unique"}},
		{"T/^2$|T/4.2.1", "", []string{"T/4.2.1/x", "T/2/http-1.1"}},
		{"T/[2/]", "", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"}},
		{"U", "", nil},
		{"T", "T/2", nil}, // "2" matches 4.2 too
		{"T", "T/^2$", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2.1/envelope"}},
		{"T", "T/4.2/run", []string{"T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"}},
		{"T", "envelope", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"}}, // a top-level name
		{"T", "T/2.1/envelope", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1"}},
		{"T/(", "", []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"}},
	} {
		t.Run(c.run+"|"+c.skip, func(t *testing.T) {
			withRun(t, c.run)
			withFlag(t, "test.skip", c.skip)
			var got []string
			for _, n := range []string{"T/4.2/run-id-unique", "T/4.2.1/x", "T/2/http-1.1", "T/2.1/envelope"} {
				if goTestSelects(n) {
					got = append(got, n)
				}
			}
			assert.DeepEqual(t, got, c.want)
		})
	}
}

func withFlag(t *testing.T, name, value string) {
	t.Helper()
	if name == "test.run" {
		withRun(t, value)
		return
	}
	f := lookupFlag(t, name)
	old := f.Value.String()
	assert.NilError(t, f.Value.Set(value))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// A walk's steps are subtests as a check's rules are.
func TestAWalkFaultFailsItsStep(t *testing.T) {
	const fault, rule = "ent-404-as-outage", "5.7.4/404-revokes-at-once"
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	launch := LaunchHandler(func(_ context.Context, v entitlement.Vars) (http.Handler, error) {
		return fixtures.New(fixtures.Config{Faults: []string{fault}, Distributor: v.Distributor, Token: v.Token,
			Cache: filepath.Join(v.State, "cache.json"), Clock: c, DistributorTimeout: 200 * time.Millisecond})
	})
	r := recordRun(t, top, nil, func(rt tester) { runWalk(rt, launch, []Option{Clock(c), Rules(rule), Timeout(2 * time.Second)}) })
	assert.DeepEqual(t, r.failed(), []string{top + "/" + rule, top})
	assert.Check(t, is.Contains(texts(r.of(top+"/"+rule, "error")), "["+rule+"]"))
	assert.Check(t, is.Contains(texts(r.of(top, "log")), "Entitlement mishandled"))
}

// A handler that outlives its request's cancellation does not hang the
// test's cleanup.
func TestAHungHandlerDoesNotHangTheCleanup(t *testing.T) {
	defer func(d time.Duration) { closeWait = d }(closeWait)
	closeWait = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == fixtures.Prefix+"describe" {
			<-release // ignores the request's context
			return
		}
		rn.ServeHTTP(w, r)
	})
	start := time.Now()
	r := recordRun(t, top, nil, func(rt tester) { runCheck(rt, hang, []Option{Rules("4.4/json"), Timeout(200 * time.Millisecond)}) })
	assert.Check(t, time.Since(start) < 5*time.Second)
	assert.Check(t, slices.ContainsFunc(r.of(top, "log"), func(e event) bool { return strings.Contains(e.Text, "still had requests in flight") }), r.String())
}

// A Header's value never reaches what the test prints, even under -v,
// where the evidence shows every request header.
func TestAHeaderValueIsNeverPrinted(t *testing.T) {
	withFlag(t, "test.v", "true")
	rn, err := fixtures.New(fixtures.Config{Posture: "inbound-auth", Faults: []string{"describe-other-agent"}})
	assert.NilError(t, err)
	r := recordRun(t, top, nil, func(rt tester) {
		runCheck(rt, rn, []Option{Rules("2.2"), Header("Authorization", "Bearer "+fixtures.AuthToken)})
	})
	out := texts(r.of(top+"/2.2/same-agent-id", "error"))
	assert.Check(t, is.Contains(out, "Authorization: [redacted]"), r.String())
	assert.Check(t, !strings.Contains(texts(r.events), fixtures.AuthToken))
}
