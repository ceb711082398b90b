package posterntest_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/posterntest"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire/clock"
	"gotest.tools/v3/assert"
)

// The bundled reference runner, checked as a Go runner author checks
// theirs: the handler itself, served by the API.
func TestReferenceRunner(t *testing.T) {
	rn, err := fixtures.New(fixtures.Config{})
	assert.NilError(t, err)
	posterntest.Run(t, rn, posterntest.Origin(fixtures.AllowedOrigin))
	assert.Equal(t, rn.Executions(), int64(0), "nothing executes the agent without Execute")
}

// The same runner by its URL, one section.
func TestReferenceRunnerByURL(t *testing.T) {
	srv, err := fixtures.Start(fixtures.Config{Posture: "inbound-auth"}, 0)
	assert.NilError(t, err)
	t.Cleanup(srv.Close)
	posterntest.Run(t, srv.URL, posterntest.Rules("4.4", "7"),
		posterntest.Header("Authorization", "Bearer "+fixtures.AuthToken), posterntest.Timeout(5*time.Second))
}

// The reference runner's entitlement client, walked through §5 with one
// in-process runner per step, on a clock shared with the walk.
func TestReferenceRunnerEntitlement(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	launch := posterntest.LaunchHandler(func(_ context.Context, v entitlement.Vars) (http.Handler, error) {
		return fixtures.New(fixtures.Config{Distributor: v.Distributor, Token: v.Token,
			Cache: filepath.Join(v.State, "cache.json"), Clock: c, DistributorTimeout: 200 * time.Millisecond})
	})
	posterntest.RunEntitlement(t, launch, posterntest.Clock(c), posterntest.Timeout(2*time.Second))
}

// Check runs the rules Run runs, outside a test, and returns the report
// the command writes; in a test, Run reports each rule as a subtest.
func Example() {
	runner, err := fixtures.New(fixtures.Config{}) // an http.Handler: the bundled reference runner
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := posterntest.Check(context.Background(), runner, posterntest.Origin(fixtures.AllowedOrigin))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rep.Counts()
	code, why := rep.Exit(report.Strictness{})
	fmt.Println(rep.Verdict.Text)
	fmt.Printf("%d fail, %d error, %d agent runs: exit %d, %s\n", c.Fail, c.Error, runner.Executions(), code, why)
	// Output:
	// Conformant at Level 3.
	// 0 fail, 0 error, 0 agent runs: exit 0, no rule FAILs
}

// A test in the runner's own package checks its handler (or its URL) with
// one subtest per rule; `go test -run 'TestConformance/4.2/run-id-unique'`
// checks one rule.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		runner, err := fixtures.New(fixtures.Config{}) // the runner's http.Handler
		if err != nil {
			t.Fatal(err)
		}
		posterntest.Run(t, runner, posterntest.Origin(fixtures.AllowedOrigin), posterntest.Rules("2.1/wrong-method", "4.4/content-type"))
	}
	_ = testConformance // in the runner's package: func TestConformance(t *testing.T)

	// Run names a subtest per rule, under its section's, and decides each
	// as Check does outside a test: here, what TestConformance shows.
	runner, err := fixtures.New(fixtures.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := posterntest.Check(context.Background(), runner, posterntest.Origin(fixtures.AllowedOrigin), posterntest.Rules("2.1/wrong-method", "4.4/content-type"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Results {
		fmt.Printf("TestConformance/%s/%s: %s\n", r.Rule.Section, strings.TrimPrefix(r.Rule.ID, r.Rule.Section+"/"), r.Outcome)
	}
	// Output:
	// TestConformance/2.1/wrong-method: PASS
	// TestConformance/4.4/content-type: PASS
}
