package runner

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/schemas"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Options is one checking run as a user asks for it.
type Options struct {
	Target   string        // the runner's origin
	Origin   string        // --origin
	Execute  bool          // --execute
	Timeout  time.Duration // per request
	Patience time.Duration // see Config.Patience
	MaxRuns  int           // --max-runs: agent starts allowed; zero means DefaultMaxRuns
	// Deadline bounds the whole run; past it, the rules not yet decided
	// SKIP. Zero means DefaultDeadline(Timeout, Execute).
	Deadline time.Duration
	Headers  http.Header  // --header
	Rules    []string     // selection patterns; none selects all
	Schemas  *schemas.Set // nil: the embedded set
	// Progress, where set, is told how far the run has come (see
	// engine.Suite.Progress): a progress line on a terminal, say.
	Progress engine.Progress
}

// Check runs the selected rules against a runner. An error means the runner
// could not be checked at all.
func Check(ctx context.Context, o Options) (*Env, []Result, error) {
	base, err := wire.ParseTarget(o.Target)
	if err != nil {
		return nil, nil, err
	}
	if o.Schemas == nil {
		if o.Schemas, err = schemas.Embedded(); err != nil {
			return nil, nil, fmt.Errorf("the embedded schemas do not compile: %w", err)
		}
	}
	rules := Select(All(), o.Rules)
	if len(rules) == 0 {
		return nil, nil, fmt.Errorf("no rule matches %v; `postern-conformance list` shows the IDs", o.Rules)
	}
	deadline := o.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline(o.Timeout, o.Execute)
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	client := wire.New(base, wire.Options{Timeout: o.Timeout, Headers: o.Headers})
	cfg := Config{Client: client, Schemas: o.Schemas, Origin: o.Origin, Execute: o.Execute, Patience: o.Patience, MaxRuns: o.MaxRuns}
	sess := engine.NewSession(client, o.Patience, 0)
	env, err := NewEnv(ctx, cfg, sess)
	if err != nil {
		return nil, nil, err
	}
	sess.Patience = patienceFor(cfg, env.Status, env.Describe)
	s := suite()
	s.Progress = o.Progress
	if o.Deadline > 0 {
		s.OwnDeadline = o.Deadline
	}
	return env, engine.Run(ctx, s, sess, env, rules), nil
}

// DefaultDeadline is the whole-run deadline used where none is given: two
// request timeouts and five seconds, which a conforming runner never comes
// near, or ten minutes with --execute, where each rule may wait on a real run.
func DefaultDeadline(timeout time.Duration, execute bool) time.Duration {
	if execute {
		return 10 * time.Minute
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return 2*timeout + 5*time.Second
}
