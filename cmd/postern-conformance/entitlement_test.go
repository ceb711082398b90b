package main

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The real-time walk of the reference runner, launched as a process with
// --launch, its cache in the directory the harness gives each step (a
// restart with a cache is one of the steps).
func TestEntitlementWalkOfALaunchedRunner(t *testing.T) {
	t.Parallel()
	defer pace.Acquire(3)()
	self, err := os.Executable()
	assert.NilError(t, err)
	launch := fmt.Sprintf(`POSTERN_CONFORMANCE_AS_COMMAND=1 exec %q serve --port 0 --cache "$POSTERN_CONFORMANCE_STATE/cache.json"`, self)
	code, out := run(t, append([]string{"entitlement", "--launch", launch, "--no-color"}, launchedWalkFlags()...)...)
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "Entitlement handled as §5 requires."))
	assert.Check(t, is.Contains(out, "0 fail"))
}

// serve --cautious, launched, walks clean too: refusing runs within grace
// is the other posture §5.7.1 allows, and the walk says it saw it.
func TestEntitlementWalkOfALaunchedCautiousRunner(t *testing.T) {
	t.Parallel()
	defer pace.Acquire(3)()
	self, err := os.Executable()
	assert.NilError(t, err)
	launch := fmt.Sprintf(`POSTERN_CONFORMANCE_AS_COMMAND=1 exec %q serve --port 0 --cautious --cache "$POSTERN_CONFORMANCE_STATE/cache.json"`, self)
	code, out := run(t, append([]string{"entitlement", "--launch", launch, "--no-color"}, launchedWalkFlags()...)...)
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "Entitlement handled as §5 requires."))
	assert.Check(t, is.Contains(out, "0 fail"))
	assert.Check(t, is.Contains(out, "within grace POST run answered 503 unavailable"), "the runner refused within grace")
}

// walkFlags give a launched walk at the default window and grace its
// own deadline (walkBudget) and each launch pace.Launch.
func launchedWalkFlags() []string {
	walk, _ := walkBudget(nil)
	return []string{"--launch-timeout", seconds(pace.Launch), "--deadline", seconds(walk), "--timeout", walkTimeout()}
}

func TestDemoEntitlement(t *testing.T) {
	t.Parallel()
	defer pace.Acquire(0)()
	walk, _ := walkBudget(nil)
	code, out := run(t, "demo", "entitlement", "--json", "--deadline", seconds(walk), "--timeout", walkTimeout())
	assert.Equal(t, code, 0, out)
	var rep struct {
		Counts struct{ Fail, Pass int }
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, rep.Counts.Fail, 0)
	assert.Check(t, rep.Counts.Pass > 10)

	code, out = run(t, "demo", "entitlement", "--fault", "ent-404-as-outage", "--rule", "5.7.4", "--no-color")
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(out, "5.7.4/404-revokes-at-once"))
}

func TestEntitlementNeedsALaunch(t *testing.T) {
	code, out := run(t, "entitlement")
	assert.Equal(t, code, 2, out)
	code, _ = run(t, "entitlement", "--launch", "true", "--rule", "9.9/none")
	assert.Equal(t, code, 2)
}

func TestEntitlementBaseline(t *testing.T) {
	file := t.TempDir() + "/baseline"
	code, out := run(t, "demo", "entitlement", "--fault", "ent-404-as-outage", "--rule", "5.7.4", "--write-baseline", file, "--no-color")
	assert.Equal(t, code, 1, out)
	code, out = run(t, "demo", "entitlement", "--fault", "ent-404-as-outage", "--rule", "5.7.4", "--baseline", file, "--no-color")
	assert.Equal(t, code, 0, out)
	assert.Check(t, is.Contains(out, "excused by the baseline"))
}
