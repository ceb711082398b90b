package posterntest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"github.com/sigrix-io/postern-conformance/wire/clock"
)

// Option is one choice of a run, as the command's flags make it.
type Option func(*config)

// config is the options of a run, gathered.
type config struct {
	origin            string
	execute           bool
	maxRuns           int
	headers           http.Header
	rules             []string
	baselineIDs       []string
	baselineFile      string
	strict            report.Strictness
	timeout, deadline time.Duration
	patience          time.Duration
	window, grace     time.Duration
	clock             clock.Clock
	// given names each option used, in order, for the options one mode
	// does not take (Run refuses Window, RunEntitlement refuses Origin).
	given []string
	errs  []string
}

func (c *config) note(name string) { c.given = append(c.given, name) }

func (c *config) fail(format string, a ...any) { c.errs = append(c.errs, fmt.Sprintf(format, a...)) }

// Origin is an origin the runner is configured to allow, as --origin
// gives it: it enables the CORS header rules of §2.3.
func Origin(origin string) Option {
	return func(c *config) {
		c.note("Origin")
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			c.fail("posterntest.Origin(%q) is not an origin: give scheme://host[:port], e.g. https://app.example.com", origin)
		}
		c.origin = origin
	}
}

// Execute also checks the rules that need a real run, as --execute does:
// it starts the agent (it may spend money and call write tools).
func Execute() Option { return func(c *config) { c.note("Execute"); c.execute = true } }

// MaxRuns caps how many times an Execute check starts the agent, as
// --max-runs does (checks.DefaultMaxRuns where it is not given): a rule
// needing more starts than remain skips, saying how many it needs.
func MaxRuns(n int) Option {
	return func(c *config) {
		c.note("MaxRuns")
		if n < 1 {
			c.fail("posterntest.MaxRuns(%d): the budget is at least one start", n)
		}
		c.maxRuns = n
	}
}

// Header sends name: value on every request, as --header does, for a
// runner that requires inbound authentication (§7). Its value never
// appears in what the test prints. Repeatable.
func Header(name, value string) Option {
	return func(c *config) {
		c.note("Header")
		if name == "" || strings.ContainsAny(name, " \t:") {
			c.fail("posterntest.Header(%q, …): not a header name", name)
			return
		}
		if c.headers == nil {
			c.headers = http.Header{}
		}
		c.headers.Add(name, value)
	}
}

// Rules checks only the rules matching any of the patterns, as --rule
// does: a rule ID ("4.2/run-id-unique"), a section ("4.2", which includes
// 4.2.x), or an ID prefix ending in "*". Repeatable; go test's -run
// narrows the selection further (see the package documentation).
func Rules(patterns ...string) Option {
	return func(c *config) { c.note("Rules"); c.rules = append(c.rules, patterns...) }
}

// Baseline excuses the FAILs of the rules listed by ID: each is logged as
// a known failure rather than failing its subtest, as a --baseline file's
// entries are. Repeatable; not with BaselineFile.
func Baseline(ids ...string) Option {
	return func(c *config) { c.note("Baseline"); c.baselineIDs = append(c.baselineIDs, ids...) }
}

// BaselineFile excuses the FAILs of the rule IDs listed in a baseline
// file (one per line, # comments), the file --baseline reads and
// --write-baseline writes.
func BaselineFile(path string) Option {
	return func(c *config) { c.note("BaselineFile"); c.baselineFile = path }
}

// Strict fails the test on a WARN too (a SHOULD broken), as --strict
// does: the WARN's subtest reports it with t.Error instead of t.Log.
func Strict() Option { return func(c *config) { c.note("Strict"); c.strict.Warn = true } }

// StrictBaseline fails the test where the baseline lists a rule that was
// checked and no longer fails, as --strict-baseline does.
func StrictBaseline() Option {
	return func(c *config) { c.note("StrictBaseline"); c.strict.Baseline = true }
}

// Timeout bounds each request to the runner (the command's --timeout;
// 10 s by default, 5 s in a walk).
func Timeout(d time.Duration) Option {
	return func(c *config) { c.note("Timeout"); c.timeout = positive(c, "Timeout", d) }
}

// Deadline bounds the whole run (--deadline): past it, the rules not yet
// decided SKIP. The default is the command's.
func Deadline(d time.Duration) Option {
	return func(c *config) { c.note("Deadline"); c.deadline = positive(c, "Deadline", d) }
}

// Patience is how long a probe waits for an answer a conforming runner
// gives at once before it reports that none came (--patience; one second
// by default). A conforming runner never pays it.
func Patience(d time.Duration) Option {
	return func(c *config) { c.note("Patience"); c.patience = positive(c, "Patience", d) }
}

// Window is the stale_after_seconds the walk's distributor declares, in
// whole seconds (RunEntitlement only; the command's --window).
func Window(d time.Duration) Option {
	return func(c *config) { c.note("Window"); c.window = positive(c, "Window", d) }
}

// Grace is the grace_seconds the walk's distributor declares, in whole
// seconds (RunEntitlement only; the command's --grace).
func Grace(d time.Duration) Option {
	return func(c *config) { c.note("Grace"); c.grace = positive(c, "Grace", d) }
}

// Clock is the walk's time (RunEntitlement only). A *clock.Fake shared
// with a runner started in process is moved forward where the walk would
// wait, so its windows pass at once.
func Clock(cl clock.Clock) Option {
	return func(c *config) { c.note("Clock"); c.clock = cl }
}

func positive(c *config, name string, d time.Duration) time.Duration {
	if d <= 0 {
		c.fail("posterntest.%s(%v): give a positive duration", name, d)
	}
	return d
}

// The options each mode refuses.
var (
	walkOnly  = []string{"Window", "Grace", "Clock"}
	checkOnly = []string{"Origin", "Execute", "MaxRuns", "Header", "Patience"}
)

// gather applies opts; refuse names the options the mode does not take.
func gather(mode string, refuse []string, opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	for _, name := range c.given {
		for _, r := range refuse {
			if name == r {
				c.fail("posterntest.%s does not apply to %s", name, mode)
			}
		}
	}
	if len(c.baselineIDs) > 0 && c.baselineFile != "" {
		c.fail("give posterntest.Baseline or posterntest.BaselineFile, not both")
	}
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(dedupe(c.errs), "; "))
	}
	return c, nil
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// baseline reads the baseline the options give, or nil. Each ID is checked
// to name a rule as a baseline file's entries are.
func (c *config) baseline() (*baseline.Baseline, error) {
	switch {
	case c.baselineFile != "":
		b, err := baseline.Read(c.baselineFile)
		if err != nil {
			return nil, fmt.Errorf("posterntest.BaselineFile: %w", err)
		}
		return b, nil
	case len(c.baselineIDs) > 0:
		return baseline.Parse(strings.NewReader(strings.Join(c.baselineIDs, "\n")), "posterntest.Baseline")
	}
	return nil, nil
}
