package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"gotest.tools/v3/assert"
)

// indieLaunch maps the walk's launch contract onto the settings of
// testdata/entrunner.py, an independent runner with an entitlement client
// of its own, written from SPEC.md without reading the harness; env adds
// the posture or the planted mistake.
func indieLaunch(python, env string) string {
	return `exec env ENTRUNNER_DISTRIBUTOR="$POSTERN_CONFORMANCE_DISTRIBUTOR" ENTRUNNER_TOKEN="$POSTERN_CONFORMANCE_TOKEN" ` +
		`ENTRUNNER_STATE="$POSTERN_CONFORMANCE_STATE" ` + env + ` ` + python + ` testdata/entrunner.py --port 0`
}

// TestEntitlementWalkOfAnIndependentRunner walks entrunner.py through §5
// in real time, at the default window and grace: clean as shipped, clean
// in its cautious posture (it refuses within grace, which §5.7.1 allows,
// and requires an inbound credential of its own, §7), and each planted
// mistake caught by the rules it breaks and no other. The walks run side
// by side, as many as the machine carries (pace.Cases), each within a
// deadline of its own derived from its window and grace; a mistake's walk
// takes only the steps its rules need.
func TestEntitlementWalkOfAnIndependentRunner(t *testing.T) {
	python := needPython(t)
	t.Parallel()
	const inbound = "indie-inbound-7c1d"
	// Every walk but one is at the default window and grace, as a user's
	// would be: the step judging 5.7.1/keeps-attempting declares a grace of
	// its own, long enough for spaced attempts, and asks run as well as
	// status.
	cases := []struct {
		name, env string
		args      []string // --rule patterns, --header
		fails     []string // exactly the rules that FAIL
		warns     []string // exactly the rules that WARN
	}{
		{name: "clean", env: ""},
		// Cautious at Level 3, so that stream is compared with run.
		{name: "cautious", env: "ENTRUNNER_LEVEL=3 ENTRUNNER_CAUTIOUS=1 ENTRUNNER_INBOUND_TOKEN=" + inbound,
			args: []string{"--header", "Authorization: Bearer " + inbound}},
		// The whole walk, to show each breaks nothing else (indieBreaks).
		{name: "grace-drops-checked-at", env: "ENTRUNNER_FAULT=grace-drops-checked-at", fails: indieBreaks["grace-drops-checked-at"].fails},
		{name: "workers-forget", env: "ENTRUNNER_FAULT=workers-forget",
			fails: indieBreaks["workers-forget"].fails, warns: indieBreaks["workers-forget"].warns},
		{name: "404-own-cadence", env: "ENTRUNNER_FAULT=404-own-cadence",
			args: []string{"--rule", "5.7.4"}, warns: indieBreaks["404-own-cadence"].warns},
		{name: "unconfigured-refuses", env: "ENTRUNNER_FAULT=unconfigured-refuses",
			args: []string{"--rule", "5.1"}, fails: []string{"5.1/not-required-unconfigured"}},
		// stream without the gate run has: one verdict, from the sweep that
		// compares the two verbs across the whole walk.
		{name: "stream-ungated", env: "ENTRUNNER_LEVEL=3 ENTRUNNER_FAULT=stream-ungated",
			fails: []string{"4.6/walk-stream-as-run"}},
		{name: "preflight-gated", env: "ENTRUNNER_FAULT=preflight-gated",
			args: []string{"--rule", "2.3"}, fails: []string{"2.3/preflight-whatever-entitlement"}},
		{name: "nonjson-revoked", env: "ENTRUNNER_FAULT=nonjson-revoked",
			args: []string{"--rule", "5.7/not-json-unreachable"}, fails: []string{"5.7/not-json-unreachable"}},
		{name: "grace-default", env: "ENTRUNNER_FAULT=grace-default",
			args: []string{"--rule", "5.7/missing-member-unreachable"}, fails: []string{"5.7/missing-member-unreachable"}},
		{name: "404-old-checked-at", env: "ENTRUNNER_FAULT=404-old-checked-at",
			args: []string{"--rule", "5.7.4"}, fails: []string{"5.7.4/404-receipt-time"}},
		{name: "restart-restamp", env: "ENTRUNNER_FAULT=restart-restamp",
			args: []string{"--rule", "5.7.2"}, fails: []string{"5.7.2/restart-no-fresh-window"}},
		// A grace longer than any slack the walk can earn (at most --timeout),
		// so the late re-check, at the grace's end, comes after the first
		// request past the window however loaded the machine. None of these
		// steps waits the grace out.
		{name: "cache-past-window", env: "ENTRUNNER_FAULT=cache-past-window",
			args: []string{"--grace", "20", "--rule", "5.4", "--rule", "5.7.1/unknown-within-grace", "--rule", "5.7.2",
				"--rule", "5.7.4/404-revokes-at-once"},
			fails: []string{"5.4/no-answer-past-window", "5.4/re-check-after-window", "5.4/revoked-re-checked"}},
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	got := make([]reported, len(cases))
	problems := make([]string, len(cases))
	took := make([]time.Duration, len(cases))
	// A walk launches its runner afresh for each step, a few steps at a
	// time, and mostly waits out the window and grace.
	pace.Cases(t, names, 3, func(i int) {
		c := cases[i]
		walk, whole := walkBudget(c.args)
		pc, cancel := pace.Begin(context.Background(), whole)
		defer cancel()
		pc.Step("walk")
		start := time.Now()
		args := append([]string{"entitlement", "--launch", indieLaunch(python, c.env),
			"--launch-timeout", seconds(pace.Launch), "--deadline", seconds(walk), "--timeout", walkTimeout()}, c.args...)
		got[i] = runReport(pc.Ctx, args...)
		took[i] = time.Since(start)
		problems[i] = got[i].unjudged(pc, nil)
	}, func(t *testing.T, i int) {
		c := cases[i]
		t.Logf("walked in %s", took[i].Round(100*time.Millisecond))
		if problems[i] != "" {
			t.Fatal(problems[i])
		}
		var failed, warned []string
		for id, o := range got[i].outcomes {
			switch o {
			case "FAIL":
				failed = append(failed, id)
			case "WARN":
				warned = append(warned, id)
			case "ERROR":
				t.Errorf("%s: %s (%s), want no ERROR", id, o, got[i].reasons[id])
			}
		}
		want, wantWarns := slices.Clone(c.fails), slices.Clone(c.warns)
		slices.Sort(failed)
		slices.Sort(want)
		slices.Sort(warned)
		slices.Sort(wantWarns)
		assert.DeepEqual(t, failed, want)
		assert.DeepEqual(t, warned, wantWarns)
		wantCode := 0
		if len(want) > 0 {
			wantCode = 1
		}
		assert.Equal(t, got[i].code, wantCode, "%s; stderr: %s", strings.Join(failed, ", "), got[i].stderr)
	})
}
