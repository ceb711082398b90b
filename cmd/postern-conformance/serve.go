package main

import (
	"context"
	"fmt"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"os"
	"slices"
	"strings"

	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/urfave/cli/v3"
)

// runnerFlags pick a reference runner: level, posture, faults.
func runnerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "level", Value: 3, Usage: "the conformance `LEVEL` the runner declares (1, 2 or 3); a --fault picks its own"},
		&cli.StringFlag{Name: "posture", Usage: "how the runner is deployed: `NAME` from --list-postures; a --fault picks its own"},
		&cli.StringSliceFlag{Name: "fault", Usage: "plant the fault `NAME` (from --list-faults); repeatable"},
		&cli.BoolFlag{Name: "list-postures", Usage: "list the postures and exit"},
		&cli.BoolFlag{Name: "list-faults", Usage: "list the planted faults and exit"},
	}
}

// runnerConfig reads the runner flags. A single fault brings the posture
// and level it is planted in, unless the flags say otherwise.
func runnerConfig(cmd *cli.Command) (fixtures.Config, error) {
	cfg := fixtures.Config{Level: int(cmd.Int("level")), Posture: cmd.String("posture"), Faults: cmd.StringSlice("fault")}
	for _, name := range cfg.Faults {
		f, err := fixtures.LookupFault(name)
		if err != nil {
			return cfg, err
		}
		if cmd.IsSet("posture") && f.Posture != "" && f.Posture != cfg.Posture {
			fmt.Fprintf(cmd.Root().ErrWriter, "note: fault %s is planted in posture %s; under --posture %s its rule (%s) may find nothing to judge (leave --posture out to use %s)\n",
				f.Name, f.Posture, cfg.Posture, f.Rule, f.Posture)
		}
		if !cmd.IsSet("posture") {
			if cfg.Posture != "" && f.Posture != "" && cfg.Posture != f.Posture {
				return cfg, fmt.Errorf("faults %v are planted in different postures; pick one with --posture", cfg.Faults)
			}
			if f.Posture != "" {
				cfg.Posture = f.Posture
			}
		}
		if !cmd.IsSet("level") && f.Level != 0 {
			cfg.Level = f.Level
		}
	}
	if cmd.IsSet("level") && (cfg.Level < 1 || cfg.Level > 3) {
		return cfg, fmt.Errorf("--level %d: a runner is Level 1, 2 or 3", cfg.Level)
	}
	if _, err := fixtures.LookupPosture(cfg.Posture); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// listRunnerThings handles --list-postures and --list-faults.
func listRunnerThings(cmd *cli.Command) bool {
	w := cmd.Root().Writer
	switch {
	case cmd.Bool("list-postures"):
		for _, p := range append(fixtures.Postures(), fixtures.EntitlementPostures()...) {
			fmt.Fprintf(w, "%-26s %s\n", p.Name, p.Summary)
		}
		return true
	case cmd.Bool("list-faults"):
		for _, f := range fixtures.AllFaults() {
			where := "default posture"
			if f.Posture != "" {
				where = "posture " + f.Posture
			}
			if isEntitlementFault(f.Name) {
				where = "with --distributor; seen by a walk through time"
			}
			if f.Level != 0 {
				where += fmt.Sprintf(", Level %d", f.Level)
			}
			fmt.Fprintf(w, "%-34s %-38s %s (%s)\n", f.Name, f.Rule, f.What, where)
			if len(f.Also) > 0 {
				// The same breach breaks these rules as well, and why.
				fmt.Fprintf(w, "%-34s %-38s also breaks %s: %s\n", "", "", strings.Join(f.Also, ", "), f.AlsoWhy)
			}
		}
		return true
	}
	return false
}

// Environment variables serve reads its distributor from: the ones the
// entitlement harness sets for the runner it launches.
const (
	envDistributor = "POSTERN_CONFORMANCE_DISTRIBUTOR"
	envToken       = "POSTERN_CONFORMANCE_TOKEN"
)

// distributorFlags point serve's entitlement client at a distributor.
func distributorFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "distributor", Sources: cli.EnvVars(envDistributor),
			Usage: "check the entitlement with the distributor at base `URL` (§5.3), in place of the posture's fixed one"},
		&cli.StringFlag{Name: "token", Sources: cli.EnvVars(envToken),
			Usage: "the entitlement token `T` presented to the distributor as Authorization: Bearer T (§5.2)"},
		&cli.StringFlag{Name: "cache", TakesFile: true,
			Usage: "keep the last entitlement answer in `FILE` and load it on start: a restart is no fresh window (§5.7.2)"},
		&cli.BoolFlag{Name: "cautious",
			Usage: "with a distributor that cannot be reached, refuse runs 503 within the grace period too, which §5.7.1 allows (the default runs on through it)"},
	}
}

// isEntitlementFault reports whether name is one of the entitlement
// client's faults, which act only with a distributor.
func isEntitlementFault(name string) bool {
	for _, f := range fixtures.EntitlementFaults() {
		if f.Name == name {
			return true
		}
	}
	return false
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve the bundled reference runner until interrupted",
		UsageText: "postern-conformance serve [--level N] [--posture NAME] [--fault NAME] [--port P] [--distributor URL --token T [--cache FILE] [--cautious]]",
		Description: `Serves the reference runner on 127.0.0.1 and prints POSTERN_PORT=<port>
as its first stdout line (§2), so a client author can test against it.
With --fault it breaks one rule, to show what that breach looks like:

  postern-conformance serve --fault bare-405
  postern-conformance http://127.0.0.1:<port>          # exits 1, FAIL on 2.1/wrong-method

Every posture is conformant at every level; --list-postures and
--list-faults show what there is.

With a distributor, the runner checks its entitlement for real (§5.3–§5.7)
rather than standing in its posture's fixed one (the posture's other
aspects stay). It asks
  GET <URL>/postern/v0/entitlements/fixture/reference-agent
  Authorization: Bearer <T>
on the first status, run or stream, and again on the first after each
answer's checked_at + stale_after_seconds. A 404 revokes at once. While the
distributor cannot be reached it runs on through the declared grace (or,
with --cautious, refuses within it too), asking on every request, and
refuses 503 unavailable after it; never having been
answered, it refuses 503 from the start. --cache keeps the last answer with
its checked_at, so a restart resumes the same window rather than a new one.
The two environment variables are the ones the entitlement harness sets for
the runner it launches; the flags win over them:

  POSTERN_CONFORMANCE_DISTRIBUTOR=http://127.0.0.1:8700 \
  POSTERN_CONFORMANCE_TOKEN=0f3a... postern-conformance serve --port 0 --cache ent.json

The entitlement client's own faults (ent-*, in --list-faults) act only with
a distributor.`,
		Commands: []*cli.Command{serveDistributorCommand(), serveScenarioCommand()},
		Flags: append(append(runnerFlags(), distributorFlags()...),
			&cli.IntFlag{Name: "port", Usage: "listen on `PORT` (0 picks a free one)"},
			&cli.BoolFlag{Name: "no-color", Usage: "accepted for symmetry: serve writes no colour"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			srv, err := startRunner(cmd, int(cmd.Int("port")))
			if srv == nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.Root().Writer, "POSTERN_PORT=%d\n", srv.Port)
			p := srv.Runner.Posture()
			fmt.Fprintf(os.Stderr, "reference runner: %s, at %s\n", describeRunner(srv), srv.URL)
			if d := cmd.String("distributor"); d != "" {
				cache := ""
				if f := cmd.String("cache"); f != "" {
					cache = ", its last answer kept in " + f
				}
				fmt.Fprintf(os.Stderr, "entitlement:      checked with the distributor at %s%s\n", d, cache)
			}
			fmt.Fprintf(os.Stderr, "check it with:    postern-conformance %s %s\n", srv.URL, strings.Join(p.CheckArgs(), " "))
			<-ctx.Done()
			fmt.Fprintf(os.Stderr, "reference runner: stopped after %d agent executions\n", srv.Runner.Executions())
			return nil
		},
	}
}

// startRunner starts the reference runner the flags of cmd describe. A nil
// server with a nil error means a --list-* flag was answered instead.
func startRunner(cmd *cli.Command, port int) (*fixtures.Server, error) {
	if listRunnerThings(cmd) {
		return nil, nil
	}
	cfg, err := runnerConfig(cmd)
	if err != nil {
		return nil, exitError{exitCannotRun, err.Error()}
	}
	// Only serve has the distributor flags; demo's runner keeps its posture.
	if slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "distributor") }) {
		cfg.Distributor, cfg.Token, cfg.Cache = cmd.String("distributor"), cmd.String("token"), cmd.String("cache")
		cfg.Cautious = cmd.Bool("cautious")
		if cfg.Distributor != "" && cfg.Token == "" {
			return nil, exitError{exitCannotRun, "--distributor needs the token to present to it as Authorization: Bearer (§5.2): give --token T (or " + envToken + ")"}
		}
		// With no distributor there is no answer to keep, and --cache is
		// left unused: the entitlement walk launches its one command with
		// no distributor too (§5.1).
	}
	if cfg.Distributor == "" {
		for _, name := range cfg.Faults {
			if isEntitlementFault(name) {
				fmt.Fprintf(os.Stderr, "note: fault %s lives in the entitlement client, which acts only with a distributor (serve --distributor URL --token T)\n", name)
			}
		}
	}
	// demo checks what it starts: a fault only a run shows needs --execute.
	if slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "execute") }) && !cmd.Bool("execute") {
		for _, name := range cfg.Faults {
			if f, _ := fixtures.LookupFault(name); f.Execute {
				fmt.Fprintf(cmd.Root().ErrWriter, "note: fault %s shows only in a run of the agent: add --execute\n", name)
			}
		}
	}
	srv, err := fixtures.Start(cfg, port)
	if err != nil {
		return nil, exitError{exitCannotRun, err.Error()}
	}
	return srv, nil
}

// describeRunner is "Level 3, posture default, faults none".
func describeRunner(srv *fixtures.Server) string {
	faults := srv.Runner.FaultNames()
	if len(faults) == 0 {
		faults = []string{"none"}
	}
	return fmt.Sprintf("Level %d, posture %s, faults %s", srv.Runner.Level(), srv.Runner.Posture().Name, strings.Join(faults, ", "))
}

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "check the bundled reference runner, started in-process",
		UsageText: "postern-conformance demo [--level N] [--posture NAME] [--fault NAME] [report options]",
		Description: `Starts the reference runner on a loopback port and checks it, so the whole
report can be seen with no setup. It is conformant at Level 3 as shipped;
--fault NAME plants one breach and shows how the suite reports it.`,
		Flags:    append(runnerFlags(), checkFlags()...),
		Commands: []*cli.Command{demoEntitlementCommand(), demoDistributorCommand(), demoClientCommand()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			srv, err := startRunner(cmd, 0)
			if srv == nil {
				return err
			}
			defer srv.Close()
			p := srv.Runner.Posture()
			// The demo knows its runner, so it supplies what a user would
			// have to: the allowed origin and the inbound credential.
			if len(p.Origins) > 0 && !cmd.IsSet("origin") {
				_ = cmd.Set("origin", p.Origins[0])
			}
			if p.Auth && !cmd.IsSet("header") {
				_ = cmd.Set("header", "Authorization: Bearer "+fixtures.AuthToken)
			}
			if !cmd.Bool("json") {
				fmt.Fprintf(os.Stderr, "demo: the bundled reference runner (%s)\n", describeRunner(srv))
			}
			err = runCheck(ctx, cmd, srv.URL)
			if n := srv.Runner.Executions(); n > 0 || cmd.Bool("execute") {
				fmt.Fprintf(os.Stderr, "demo: the agent was executed %s\n", engine.Count(int(n), "time", "times"))
			}
			return err
		},
	}
}
