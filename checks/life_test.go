package checks_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// The proof for the life of a run, against the postures whose agent is
// slow enough to show one: every such posture, at Levels 2 and 3, gives
// zero FAIL with --execute, and every fault in the life of a run is
// caught by its rule alone (fixtures.LifeFaults).
//
// A slow agent's check takes its runs' time, so these checks run side by
// side on goroutines (t.Parallel would queue them behind the package's
// other parallel tests, two at a time on a 2-core machine), and a fault's
// check selects the rules of the life of a run: its faults touch nothing
// else, and the family is compared with the same selection unfaulted.

// lifeAgentTime shortens the slow-agent posture's 1.5 s runs for the test:
// still over the 500 ms a stream must last for its timing to be judged.
// The overrun posture keeps its own: its runs are stopped at one second.
const lifeAgentTime = 800 * time.Millisecond

func lifeConfig(level int, posture string, faults ...string) fixtures.Config {
	cfg := fixtures.Config{Level: level, Posture: posture, Faults: faults}
	if posture == "slow-agent" {
		cfg.AgentTime = lifeAgentTime
	}
	return cfg
}

// lifeFamily is every rule a life fault names: the rules of the life of a
// run.
func lifeFamily() []string {
	seen := map[string]bool{}
	for _, f := range fixtures.LifeFaults() {
		for _, id := range append(append([]string{f.Rule}, f.Also...), f.Starves...) {
			seen[id] = true
		}
	}
	var ids []string
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func TestLifeOfARun(t *testing.T) {
	t.Parallel()
	family := lifeFamily()
	var slow []string
	for _, p := range fixtures.Postures() {
		if p.AgentTime > 0 {
			slow = append(slow, p.Name)
		}
	}
	type job struct {
		name string
		run  func() []string
	}
	var jobs []job
	// Every slow posture, every rule: zero FAIL, and the family decided.
	for _, posture := range slow {
		for level := 2; level <= 3; level++ {
			jobs = append(jobs, job{fmt.Sprintf("%s/L%d", posture, level), func() []string {
				got := checkRunner(t, lifeConfig(level, posture), true)
				var out []string
				for _, r := range got.results {
					if r.Outcome == checks.Fail || r.Outcome == checks.Error {
						out = append(out, "conformant posture, --execute: "+describe(r))
					}
				}
				return out
			}})
		}
	}
	// Every life fault beside its posture's unfaulted check of the family.
	var mu sync.Mutex
	bases := map[string]*baselineEntry{}
	base := func(posture string) outcome {
		mu.Lock()
		e := bases[posture]
		if e == nil {
			e = &baselineEntry{}
			bases[posture] = e
		}
		mu.Unlock()
		e.once.Do(func() { e.out = checkRunner(t, lifeConfig(3, posture), true, family...) })
		return e.out
	}
	for _, f := range fixtures.LifeFaults() {
		jobs = append(jobs, job{f.Name, func() []string {
			if err := faultDeclaration(f); err != nil {
				return []string{err.Error()}
			}
			got := checkRunner(t, lifeConfig(3, f.Posture, f.Name), true, family...)
			return faultProblems(f, base(f.Posture), got)
		}})
	}
	results := make([][]string, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = j.run()
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		for _, problem := range results[i] {
			t.Errorf("%s: %s", j.name, problem)
		}
	}
}
