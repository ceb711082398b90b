package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/fixtures"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/urfave/cli/v3"
)

// walkFlags are the flags of an entitlement walk (the entitlement command
// and demo entitlement).
func walkFlags() []cli.Flag {
	const walk = "Walk:"
	return append([]cli.Flag{
		&cli.FloatFlag{Category: walk, Local: true, Name: "window", Value: entitlement.DefaultWindow.Seconds(), Usage: "the stale_after_seconds the checker's distributor declares, in whole `SECONDS`: how long the runner may rely on an answer (§5.4)"},
		&cli.FloatFlag{Category: walk, Local: true, Name: "grace", Value: entitlement.DefaultGrace.Seconds(), Usage: "the grace_seconds it declares, in whole `SECONDS`: how long past the window an unreachable distributor is ridden out (§5.7.1)"},
		&cli.StringSliceFlag{Category: walk, Local: true, Name: "header", Aliases: []string{"H"}, Usage: "send `LINE` ('Name: value') on every request to the runner, for one that requires inbound authentication (§7); repeatable; values never appear in reports"},
		&cli.FloatFlag{Category: walk, Local: true, Name: "timeout", Value: entitlement.DefaultTimeout.Seconds(), Usage: "per-request deadline in `SECONDS`, to the runner"},
		&cli.FloatFlag{Category: walk, Local: true, Name: "launch-timeout", Value: entitlement.DefaultLaunchTimeout.Seconds(), Usage: "how long, in `SECONDS`, a launched runner has to print POSTERN_PORT"},
		&cli.FloatFlag{Category: walk, Local: true, Name: "deadline", Value: entitlement.DefaultDeadline.Seconds(), Usage: "end the whole walk after `SECONDS`: the steps not yet decided SKIP"},
	}, reportFlags()...)
}

func entitlementCommand() *cli.Command {
	return &cli.Command{
		Name:      "entitlement",
		Usage:     "walk a launched runner through §5: the checker plays its distributor",
		UsageText: "postern-conformance entitlement --launch COMMAND [options]",
		Description: `Starts a scripted distributor of its own on a loopback port, then launches
the runner with COMMAND (sh -c, in its own process group) once per step,
each time with two more variables in its environment:

  POSTERN_CONFORMANCE_DISTRIBUTOR  the distributor's base URL (plain HTTP
                                   on loopback, which §7 allows)
  POSTERN_CONFORMANCE_TOKEN        a fresh token of 256 bits
  POSTERN_CONFORMANCE_STATE        a directory of the step's own, the same
                                   across a restart, for a runner that
                                   persists its answer

Map them onto the runner's own settings in COMMAND. One step launches it
with the first two unset, so the runner must read an empty distributor
setting as none configured (§5.1). The runner prints POSTERN_PORT=<port>
first (§2). For a runner that requires its own credential (§7), --header
sends it on every request. Each step changes what the distributor
answers (active, revoked, 404, a 5xx, an answer for another agent) and
waits out the declared window and grace in real time, side by side with
the others. Nothing runs the agent: the entitlement is read from status,
and from the refusal of a run body no runner can execute.

Example, the bundled reference runner (demo entitlement does the same in
process):
  postern-conformance entitlement --launch \
    'postern-conformance serve --port 0 --cache "$POSTERN_CONFORMANCE_STATE/cache.json"'`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Category: "Runner under test:", Local: true, Name: "launch", Usage: "start the runner with `COMMAND` (sh -c) for each step; it reads the variables above"},
		}, walkFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return exitError{exitCannotRun, fmt.Sprintf("unexpected arguments %q: the runner is given with --launch", cmd.Args().Slice())}
			}
			if cmd.String("launch") == "" {
				return exitError{exitCannotRun, "no runner to walk: give --launch COMMAND (or `postern-conformance demo entitlement` to see it work)"}
			}
			return runWalk(ctx, cmd, nil)
		},
	}
}

// demoEntitlementCommand walks the reference runner, started in process.
func demoEntitlementCommand() *cli.Command {
	return &cli.Command{
		Name:      "entitlement",
		Usage:     "walk the bundled reference runner through §5, in process",
		UsageText: "postern-conformance demo entitlement [--fault NAME] [options]",
		Description: `Starts the reference runner with its real entitlement client once per step,
in this process, against the checker's scripted distributor. It handles
entitlement as §5 requires as shipped; --fault NAME plants one of its
client's faults (serve --list-faults names them, ent-*).`,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Category: "Runner under test:", Local: true, Name: "fault", Usage: "plant the entitlement fault `NAME` (ent-*); repeatable"},
			&cli.BoolFlag{Category: "Runner under test:", Local: true, Name: "cautious", Usage: "the runner refuses runs within grace, which §5.7.1 allows"},
		}, walkFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			faults := cmd.StringSlice("fault")
			posture := ""
			for _, name := range faults {
				f, err := fixtures.LookupFault(name)
				if err != nil {
					return exitError{exitCannotRun, err.Error()}
				}
				if f.Posture != "" {
					posture = f.Posture
				}
			}
			if p, err := fixtures.LookupPosture(posture); err == nil && p.Auth && !cmd.IsSet("header") {
				// The posture requires its credential: the walk sends it.
				_ = cmd.Set("header", "Authorization: Bearer "+fixtures.AuthToken)
			}
			if !cmd.Bool("json") {
				fmt.Fprintf(os.Stderr, "demo: the bundled reference runner with its entitlement client (faults %v)\n", faults)
			}
			return runWalk(ctx, cmd, entitlement.Func(func(_ context.Context, v entitlement.Vars) (entitlement.Instance, error) {
				srv, err := fixtures.Start(fixtures.Config{Posture: posture, Faults: faults, Distributor: v.Distributor, Token: v.Token,
					Cache: filepath.Join(v.State, "cache.json"), Cautious: cmd.Bool("cautious")}, 0)
				if err != nil {
					return nil, err
				}
				return entitlement.Started{Addr: srv.URL, Halt: srv.Close}, nil
			}))
		},
	}
}

// runWalk walks with the flags of cmd, writes the reports and exits as
// report.Exit decides.
func runWalk(ctx context.Context, cmd *cli.Command, l entitlement.Launcher) error {
	o := entitlement.Options{Launch: cmd.String("launch"), Launcher: l, Rules: cmd.StringSlice("rule"), Stderr: os.Stderr}
	h, err := parseHeaders(cmd.StringSlice("header"))
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	if len(h) > 0 {
		o.Headers = h
	}
	for _, f := range []struct {
		name string
		to   *time.Duration
	}{{"window", &o.Window}, {"grace", &o.Grace}, {"timeout", &o.Timeout}, {"launch-timeout", &o.LaunchTimeout}, {"deadline", &o.Deadline}} {
		if *f.to, err = secondsFlag(cmd, f.name, f.name == "grace"); err != nil {
			return exitError{exitCannotRun, err.Error()}
		}
	}
	for _, p := range o.Rules {
		if len(engine.Select(entitlement.All(), []string{p})) == 0 {
			return exitError{exitCannotRun, fmt.Sprintf("--rule %q matches no step of the walk; `postern-conformance list --entitlement` shows the IDs", p)}
		}
	}
	bl, err := readBaseline(cmd)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	line, progress := progressLine(cmd, "steps decided")
	o.Progress = progress
	started := time.Now()
	env, results, err := entitlement.Walk(ctx, o)
	line.Stop()
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	recs := engine.Records(results)
	rep := report.New(report.Header{Mode: entitlement.Mode, Target: entitlement.Target(o),
		Options: report.Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline}},
		recs, entitlement.Decide(recs, bl.Set()), bl, report.Run{
			ToolVersion: version, Started: started, Elapsed: time.Since(started), AllEvidence: cmd.Bool("verbose"),
		})
	rep.Timelines = env.Timelines()
	return finish(cmd, rep)
}
