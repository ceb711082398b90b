package entitlement_test

// Verdicts repeat: the reference runner walked several times in a row, in
// each conformant posture and with the faults of the walk's timed rules,
// comes to the same FAIL and WARN rules every time. The walks are in real
// time at the default window and grace, since a fake clock would hide the
// very timing that made verdicts flip (a runner asking again early, an
// answer straddling a second, attempts spaced by the runner's own clock),
// and side by side, as many at once as the processors carry.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/wire/clock"
)

// repeats is how many times each configuration is walked.
const repeats = 3

// walkSlots bounds the real-time walks run at once. A walk mostly waits
// out windows and grace: as measured on the loaded 2-core machine, under
// the race detector, a whole in-process walk at the default window and
// grace took 9.7 s and 0.7 s of processor time, and this test's thirty
// walks 6.8 s of it in all, sixteen at a time. Thirty at a time, its
// runners answered status too slowly for the walk's timeout. So each
// processor carries eight walks under the race detector, and three times
// that without it.
func walkSlots() int {
	per := 24
	if raceOn {
		per = 8
	}
	return per * runtime.NumCPU()
}

// walkDeadline is one walk's deadline, derived from what its steps wait
// for: the longest, 5.7.1/keeps-attempting with a runner that never comes
// back, waits out the window and the grace it declares, and every step
// launches a runner and sends a few requests, each bounded by the
// timeout, with the launch and the requests of the steps queued behind it.
func walkDeadline(o entitlement.Options) time.Duration {
	window, grace := entitlement.DefaultWindow, entitlement.DefaultGrace
	if o.Window > 0 {
		window = o.Window
	}
	if o.Grace > 0 {
		grace = o.Grace
	}
	longest := window + max(grace, entitlement.AttemptGrace)
	return 2*longest + 10*o.Timeout
}

type repeatCase struct {
	name   string
	v      variant
	faults []string
	grace  time.Duration // the walk's --grace; 0: the default
	rules  []string      // the steps walked; none: all of them
	fails  []string      // exactly the rules that FAIL, every time
	warns  []string      // exactly the rules that WARN, every time
}

// repeatCases are the configurations walked, the longest walks first: a
// runner that never attempts again within grace waits out the grace
// 5.7.1/keeps-attempting declares.
func repeatCases() []repeatCase {
	cases := []repeatCase{
		{name: "ent-gives-up-in-grace", faults: []string{"ent-gives-up-in-grace"}, rules: []string{"5.7.1/keeps-attempting"},
			warns: []string{"5.7.1/keeps-attempting"}},
		{name: "as shipped"},
	}
	for _, v := range entitlementPostures() {
		cases = append(cases, repeatCase{name: v.posture, v: v})
	}
	return append(cases,
		repeatCase{name: "ent-restamp-checked-at", faults: []string{"ent-restamp-checked-at"}, rules: []string{"4.4"},
			fails: []string{"4.4/checked-at-unchanged"}},
		// Its late check planted with a margin no loaded machine hides:
		// at the end of a grace of 20 s, which none of these steps waits
		// out.
		repeatCase{name: "ent-cache-through-grace", faults: []string{"ent-cache-through-grace"}, rules: []string{"5.4"}, grace: 20 * time.Second,
			fails: []string{"5.4/re-check-after-window", "5.4/no-answer-past-window", "5.4/revoked-re-checked"}},
		repeatCase{name: "ent-failure-unknown", faults: []string{"ent-failure-unknown"}, rules: []string{"5.7.4"},
			fails: []string{"5.7.4/unreachable-within-window-active"}},
		repeatCase{name: "ent-404-own-cadence", faults: []string{"ent-404-own-cadence"}, rules: []string{"5.7.4"},
			warns: []string{"5.7.4/404-reuses-last-window"}},
	)
}

// walked is one walk's FAIL and WARN rules, or why it came to no verdict.
type walked struct {
	fails, warns []string
	findings     []string
	missed       string // the walk missed its deadline, or could not start
	took         time.Duration
}

func TestVerdictsRepeatInRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time walks; -short leaves them out")
	}
	t.Parallel()
	cases := repeatCases()
	got := make([][repeats]walked, len(cases))
	type job struct{ i, n int }
	jobs := make(chan job, len(cases)*repeats)
	for i := range cases { // the longest first
		for n := range repeats {
			jobs <- job{i, n}
		}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(walkSlots(), len(cases)*repeats) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				got[j.i][j.n] = walkInRealTime(cases[j.i])
			}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for n, w := range got[i] {
				if w.missed != "" {
					t.Errorf("walk %d of %d came to no verdict (a test error, not one of the runner's: the machine was too loaded for the walk's timing): %s", n+1, repeats, w.missed)
					continue
				}
				t.Logf("walk %d: %s", n+1, w.took.Round(100*time.Millisecond))
				if !slices.Equal(w.fails, sorted(c.fails)) || !slices.Equal(w.warns, sorted(c.warns)) {
					t.Errorf("walk %d of %d: FAIL %v and WARN %v, want FAIL %v and WARN %v:\n%s", n+1, repeats, w.fails, w.warns, sorted(c.fails), sorted(c.warns),
						strings.Join(w.findings, "\n"))
				}
			}
		})
	}
}

// walkInRealTime walks c once on the real clock.
func walkInRealTime(c repeatCase) walked {
	// The runner's own check timeout is twice its default, so that a
	// loaded machine's slow loopback is not taken for an unreachable
	// distributor, and the walk's timeout more than twice that again, so
	// that a status held on a check that times out is still read.
	o := entitlement.Options{Launcher: inProcessWith(clock.Real{}, 2*fixtures.DefaultDistributorTimeout, c.v, c.faults...),
		Timeout: 5 * fixtures.DefaultDistributorTimeout, Rules: c.rules, Grace: c.grace}
	o.Deadline = walkDeadline(o)
	start := time.Now()
	_, results, err := entitlement.Walk(context.Background(), o)
	w := walked{took: time.Since(start)}
	if err != nil {
		w.missed = err.Error()
		return w
	}
	var undecided []string
	broken := map[string]bool{}
	for _, id := range append(slices.Clone(c.fails), c.warns...) {
		broken[id] = true
	}
	for _, r := range results {
		switch {
		case r.Outcome == engine.Skip && broken[r.Rule.ID]:
			// The proof (TestEachEntitlementFaultIsCaughtByItsRule) decides
			// the rule on a fake clock: skipped here, it was not decided.
			undecided = append(undecided, fmt.Sprintf("%s, which the fault breaks (%s)", r.Rule.ID, r.Reason))
		case r.Outcome == engine.Fail:
			w.fails = append(w.fails, r.Rule.ID)
			w.findings = append(w.findings, describe(r))
		case r.Outcome == engine.Warn:
			w.warns = append(w.warns, r.Rule.ID)
			w.findings = append(w.findings, describe(r))
		case r.Outcome == engine.Skip && r.Kind == engine.Undecided:
			undecided = append(undecided, fmt.Sprintf("%s (%s)", r.Rule.ID, r.Reason))
		}
	}
	if len(undecided) > 0 {
		w.missed = fmt.Sprintf("%d steps undecided after %s: %s", len(undecided), w.took.Round(time.Second), strings.Join(undecided, "; "))
	}
	slices.Sort(w.fails)
	slices.Sort(w.warns)
	return w
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
