package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	"gotest.tools/v3/assert"
)

// repeatIndie is how many times in a row each configuration of
// entrunner.py is walked.
const repeatIndie = 3

// indieSlots bounds the walks of entrunner.py run at once. A walk's cost to
// the processor is its launches (a Python interpreter per step, eight
// steps at once): as measured on the loaded 2-core machine, a whole walk
// took 9.8 s of processor time, and its launches came slowly once more
// than a few walks ran together. So each processor carries one walk.
func indieSlots() int { return runtime.NumCPU() }

// indieLaunchTimeout bounds one launch: twice the default, since a loaded
// machine starts an interpreter slowly, and a launch that misses it is a
// test error, not a verdict.
const indieLaunchTimeout = 2 * entitlement.DefaultLaunchTimeout

// indieDeadline is one walk's --deadline, derived from what its steps wait
// for: the longest, 5.7.1/keeps-attempting with a runner that never comes
// back, waits out the window and the grace it declares; every step
// launches a runner, eight steps at once, so the thirty-odd launches of a
// whole walk come in five rounds.
func indieDeadline() time.Duration {
	longest := entitlement.DefaultWindow + max(entitlement.DefaultGrace, entitlement.AttemptGrace)
	return 2*longest + 5*indieLaunchTimeout
}

// TestEntitlementVerdictsRepeatForAnIndependentRunner walks entrunner.py
// several times in a row, at the default window and grace, as a user's CI
// would: clean every time, with no WARN, and each planted mistake caught by
// the same rules every time, nothing else. The clean walks take the steps
// whose verdict rests on the answers the runner was given and when (§4.4,
// §5.4, §5.7.1, §5.7.2, §5.7.4), each launch being the costly part, the
// whole walk being TestEntitlementWalkOfAnIndependentRunner's; the mistakes are the two the
// walk's anchors must keep catching (a runner holding nothing reports
// unknown without checked_at within the window of an active answer; its
// own cadence after a 404) and the unknown within grace without
// checked_at.
func TestEntitlementVerdictsRepeatForAnIndependentRunner(t *testing.T) {
	python := needPython(t)
	t.Parallel()
	cases := []indieRepeat{{name: "clean", args: []string{"--rule", "4.4", "--rule", "5.4", "--rule", "5.7.1", "--rule", "5.7.2", "--rule", "5.7.4"}}}
	for _, m := range []string{"workers-forget", "404-own-cadence", "grace-drops-checked-at"} {
		b := indieBreaks[m]
		c := indieRepeat{name: m, env: "ENTRUNNER_FAULT=" + m, fails: b.fails, warns: b.warns}
		for _, id := range append(slices.Clone(b.fails), b.warns...) {
			c.args = append(c.args, "--rule", id) // only the steps of the rules it breaks
		}
		cases = append(cases, c)
	}
	type walk struct {
		fails, warns, undecided []string
		code                    int
		err                     string
		took                    time.Duration
	}
	got := make([][repeatIndie]walk, len(cases))
	type job struct{ i, n int }
	jobs := make(chan job, len(cases)*repeatIndie)
	for i := range cases { // the whole walks first, the narrowed ones after
		for n := range repeatIndie {
			jobs <- job{i, n}
		}
	}
	close(jobs)
	deadline := indieDeadline()
	var wg sync.WaitGroup
	for range min(indieSlots(), cap(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				release := pace.Acquire(1) // the whole binary's walks within what the machine carries
				c := cases[j.i]
				args := append([]string{"postern-conformance", "entitlement", "--json", "--deadline", fmt.Sprint(deadline.Seconds()),
					"--launch-timeout", fmt.Sprint(indieLaunchTimeout.Seconds()), "--launch", indieLaunch(python, c.env)}, c.args...)
				var out, errOut bytes.Buffer
				a := app()
				a.Writer, a.ErrWriter = &out, &errOut
				start := time.Now()
				w := walk{code: exitCode(a.Run(context.Background(), args)), took: time.Since(start)}
				var rep struct {
					Results []struct{ ID, Outcome, Skip, Reason string }
				}
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					w.err = fmt.Sprintf("no JSON report (exit %d): %s", w.code, errOut.String())
				}
				for _, r := range rep.Results {
					switch {
					case r.Outcome == "FAIL":
						w.fails = append(w.fails, r.ID)
					case r.Outcome == "WARN":
						w.warns = append(w.warns, r.ID)
					case r.Outcome == "SKIP" && r.Skip == "undecided":
						w.undecided = append(w.undecided, r.ID+" ("+r.Reason+")")
					case r.Outcome == "SKIP" && (slices.Contains(c.fails, r.ID) || slices.Contains(c.warns, r.ID)):
						// A rule the mistake breaks, not decided (the
						// whole walk of TestEntitlementWalkOfAnIndependentRunner
						// decides it): a test error, not a verdict.
						w.undecided = append(w.undecided, r.ID+", which the mistake breaks ("+r.Reason+")")
					}
				}
				slices.Sort(w.fails)
				slices.Sort(w.warns)
				got[j.i][j.n] = w
				release()
			}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, wantWarns := slices.Sorted(slices.Values(c.fails)), slices.Sorted(slices.Values(c.warns))
			for n, w := range got[i] {
				switch {
				case w.err != "":
					t.Errorf("walk %d of %d: %s", n+1, repeatIndie, w.err)
				case len(w.undecided) > 0:
					t.Errorf("walk %d of %d came to no verdict in %s (a test error, not the runner's: a launch or a step missed its deadline on a loaded machine): %s",
						n+1, repeatIndie, w.took.Round(time.Second), strings.Join(w.undecided, "; "))
				default:
					t.Logf("walk %d: %s", n+1, w.took.Round(100*time.Millisecond))
					assert.Check(t, slices.Equal(w.fails, want) && slices.Equal(w.warns, wantWarns),
						"walk %d of %d: FAIL %v and WARN %v, want FAIL %v and WARN %v", n+1, repeatIndie, w.fails, w.warns, want, wantWarns)
				}
			}
		})
	}
}

// indieRepeat is a configuration of entrunner.py walked again and again.
type indieRepeat struct {
	name, env    string
	args         []string // --rule patterns
	fails, warns []string // exactly the rules that FAIL, and WARN, every time
}

// indieBreaks are the rules some of entrunner.py's mistakes break, and
// nothing else in the whole walk: the tests that walk them share them.
var indieBreaks = map[string]struct{ fails, warns []string }{
	// Holding nothing at the start of every request: unknown without
	// checked_at within the window of an active answer breaks §5.7.4's
	// table, and within grace §4.4; with no last window kept, a 404's is
	// its own cadence (§5.7.4's SHOULD).
	"workers-forget":  {fails: []string{"5.7.4/unreachable-within-window-active", "5.7.1/unknown-within-grace"}, warns: []string{"5.7.4/404-reuses-last-window"}},
	"404-own-cadence": {warns: []string{"5.7.4/404-reuses-last-window"}},
	// Refusing within grace, and dropping checked_at there, as if never
	// checked: one behaviour, one verdict, over the whole walk.
	"grace-drops-checked-at": {fails: []string{"5.7.1/unknown-within-grace"}},
}
