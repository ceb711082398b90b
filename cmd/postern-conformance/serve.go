package main

import (
	"context"
	"fmt"
	"os"
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
		for _, p := range fixtures.Postures() {
			fmt.Fprintf(w, "%-26s %s\n", p.Name, p.Summary)
		}
		return true
	case cmd.Bool("list-faults"):
		for _, f := range fixtures.Faults() {
			where := "default posture"
			if f.Posture != "" {
				where = "posture " + f.Posture
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

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve the bundled reference runner until interrupted",
		UsageText: "postern-conformance serve [--level N] [--posture NAME] [--fault NAME] [--port P]",
		Description: `Serves the reference runner on 127.0.0.1 and prints POSTERN_PORT=<port>
as its first stdout line (§2), so a client author can test against it.
With --fault it breaks one rule, to show what that breach looks like:

  postern-conformance serve --fault bare-405
  postern-conformance http://127.0.0.1:<port>          # exits 1, FAIL on 2.1/wrong-method

Every posture is conformant at every level; --list-postures and
--list-faults show what there is.`,
		Flags: append(runnerFlags(), &cli.IntFlag{Name: "port", Usage: "listen on `PORT` (0 picks a free one)"},
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
		Flags: append(runnerFlags(), checkFlags()...),
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
				fmt.Fprintf(os.Stderr, "demo: the agent was executed %d time(s)\n", n)
			}
			return err
		},
	}
}
