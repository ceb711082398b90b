package runner_test

import (
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/fixtures"
)

// The proof for the life of a run, against the postures whose agent is
// slow enough to show one. Their conformant checks, with --execute at
// Levels 2 and 3, are TestConformantPostures' (zero FAIL, no unexpected
// SKIP), and each fault in the life of a run (fixtures.LifeFaults) gets
// the whole proof of every other fault: caught by its rule, every other
// rule unchanged against its posture's conformant check with every rule.
//
// A slow agent's check takes its runs' time, and mostly sleeps: these
// checks run side by side in the background (conformant's warm), as many
// as the machine carries (pace.Acquire), not in t.Parallel's slots, two
// at a time on a 2-core machine.

// lifeAgentTime shortens the slow postures' 1.5 s runs for the test:
// still over the 500 ms a stream must last for its timing to be judged.
// The overrun posture keeps its own: its runs are stopped at one second.
const lifeAgentTime = 800 * time.Millisecond

func lifeConfig(level int, posture string, faults ...string) fixtures.Config {
	cfg := fixtures.Config{Level: level, Posture: posture, Faults: faults}
	if p, err := fixtures.LookupPosture(posture); err == nil && p.AgentTime > 0 && p.AgentTime < 2*time.Second {
		cfg.AgentTime = lifeAgentTime
	}
	return cfg
}

func TestLifeOfARun(t *testing.T) {
	proveFaults(t, fixtures.LifeFaults())
}
