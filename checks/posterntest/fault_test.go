package posterntest_test

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/posterntest"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// showFault is the variable that lets TestPlantedFault fail.
const showFault = "POSTERNTEST_SHOW_FAULT"

// plantedFault is a breach whose rule FAILs: describe names another agent
// than status does (§2.2).
const plantedFault = "describe-other-agent"

// TestPlantedFault is what a Go developer sees when their runner breaks a
// MUST: the reference runner with a fault planted, checked through the
// API. It fails, so it is skipped unless POSTERNTEST_SHOW_FAULT is set:
//
//	POSTERNTEST_SHOW_FAULT=1 go test ./checks/posterntest/ -run 'TestPlantedFault$'
func TestPlantedFault(t *testing.T) {
	if os.Getenv(showFault) == "" {
		t.Skip("fails on purpose: set " + showFault + "=1 to see it (TestPlantedFaultFailsItsRule runs it so)")
	}
	rn, err := fixtures.New(fixtures.Config{Faults: []string{plantedFault}})
	assert.NilError(t, err)
	posterntest.Run(t, rn, posterntest.Origin(fixtures.AllowedOrigin))
}

// TestPlantedFaultFailsItsRule runs TestPlantedFault in a test binary of
// its own and reads what go test printed: the rule's subtest fails, with
// the finding and the exchange that shows it, and no other rule's does.
func TestPlantedFaultFailsItsRule(t *testing.T) {
	f, err := fixtures.LookupFault(plantedFault)
	assert.NilError(t, err)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestPlantedFault$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), showFault+"=1")
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	var ee *exec.ExitError
	assert.Assert(t, errors.As(err, &ee) && ee.ExitCode() == 1, "want a failing test binary, got %v:\n%s", err, out)

	section, name, _ := strings.Cut(f.Rule, "/")
	assert.Check(t, is.Contains(out, "--- FAIL: TestPlantedFault/"+section+"/"+name+" ("), out)
	// The finding, and the evidence as the text report draws it, at the
	// line of the test that called Run.
	assert.Check(t, is.Regexp(`fault_test\.go:\d+: FAIL  .*\[`+regexp.QuoteMeta(f.Rule)+`\]`, out))
	assert.Check(t, is.Contains(out, `describe.agent.id is "fixture/another-agent" but status.agent.id is "`+fixtures.AgentID+`"`))
	assert.Check(t, is.Regexp(`> GET http://127\.0\.0\.1:\d+/postern/v0/describe`, out))
	assert.Check(t, is.Contains(out, `| {"agent":{"id":"fixture/another-agent"`))
	// The command's exit message, on the test itself.
	assert.Check(t, is.Contains(out, "posterntest: 1 rule FAILs not excused by a baseline: "+f.Rule))
	// Only that rule's subtest, its section's and the test fail.
	for _, m := range regexp.MustCompile(`--- FAIL: (\S+)`).FindAllStringSubmatch(out, -1) {
		switch m[1] {
		case "TestPlantedFault", "TestPlantedFault/" + section, "TestPlantedFault/" + f.Rule:
		default:
			t.Errorf("another subtest failed: %s", m[1])
		}
	}
}
