package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"os"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/urfave/cli/v3"
)

// distributorCheckFlags are the flags of a distributor check (the
// distributor command and demo distributor).
func distributorCheckFlags() []cli.Flag {
	const probe = "Checking:"
	return append([]cli.Flag{
		&cli.BoolFlag{Category: probe, Local: true, Name: "rate-limit", Usage: "also send §5.6's burst: a few hundred bundle requests, to see a rate limit refuse them (on loopback, from 127.0.0.2 too, to see a refusal count against both buckets)"},
		&cli.StringFlag{Category: probe, Local: true, Name: "profile", Usage: "also check `NAME`'s profile: sigrix (§8)"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "timeout", Value: distributor.DefaultTimeout.Seconds(), Usage: "per-request deadline in `SECONDS`"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "deadline", Usage: "end the whole check after `SECONDS` (default 2 × --timeout + 5, plus the declared window twice with the hooks): the rules not yet decided SKIP"},
		&cli.StringSliceFlag{Category: probe, Local: true, Name: "header", Aliases: []string{"H"}, Usage: "send `LINE` ('Name: value') on every request; repeatable; values never appear in reports"},
	}, reportFlags()...)
}

// reportFlags are the report and rule-selection flags every mode's run
// shares (a check, an entitlement walk, a distributor check).
func reportFlags() []cli.Flag {
	const out, sel = "Reports:", "Rules:"
	return append([]cli.Flag{
		&cli.BoolFlag{Category: out, Local: true, Name: "json", Usage: "write the JSON report to stdout instead of the text report"},
		&cli.StringFlag{Category: out, Local: true, Name: "json-file", Usage: "also write the JSON report to `FILE`"},
		&cli.StringFlag{Category: out, Local: true, Name: "junit", Usage: "also write a JUnit XML report to `FILE`"},
		&cli.StringFlag{Category: out, Local: true, Name: "html", TakesFile: true, Usage: "also write the report as one HTML page to `FILE`: the verdict, a map of the sections, every finding with its evidence and a curl line that reproduces it, timelines of the timed rules; it opens offline, from disk"},
		&cli.BoolFlag{Category: out, Local: true, Name: "verbose", Aliases: []string{"v"}, Usage: "show every request header and body in the evidence; in the JSON report, keep the exchanges of every rule, PASS included"},
		&cli.BoolFlag{Category: out, Local: true, Name: "no-color", Usage: "never colour the text report (NO_COLOR is honoured too)"},
		&cli.StringSliceFlag{Category: sel, Local: true, Name: "rule", Usage: "check only the rules (or steps) matching `PATTERN` (an ID, a section like 4.4, or an ID prefix ending in *); repeatable"},
		&cli.StringFlag{Category: sel, Local: true, Name: "baseline", Usage: "excuse the FAILs of the rule IDs listed in `FILE` (one per line, # comments); a listed rule that was checked and no longer fails is named on stderr"},
		&cli.BoolFlag{Category: sel, Local: true, Name: "strict-baseline", Usage: "exit 1 when --baseline lists a rule that was checked and no longer fails, so the baseline cannot go stale"},
		&cli.StringFlag{Category: sel, Local: true, Name: "write-baseline", Usage: "write the IDs of the rules that FAIL to `FILE`, for --baseline"},
		&cli.BoolFlag{Category: sel, Local: true, Name: "strict", Usage: "exit 1 on a WARN too (a SHOULD broken)"},
	}, githubFlags()...)
}

// buyerFlags are the inputs that describe the test buyer's catalogue.
func buyerFlags() []cli.Flag {
	const buyer = "The test buyer:"
	return []cli.Flag{
		&cli.StringFlag{Category: buyer, Local: true, Name: "token", Sources: cli.EnvVars(envToken), Usage: "the test buyer's `TOKEN` (required; prefer " + envToken + ": a token on the command line can end up in shell history); never shown in a report"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "agent", Usage: "an agent `ID` the buyer is entitled to: its check answers active (required)"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "stranger-token", Usage: "a second buyer's `TOKEN`, entitled to none of the agents given"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "rotated-token", Usage: "a predecessor of --token, rotated away (§7): `TOKEN`"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "revoked-agent", Usage: "an agent `ID` the buyer bought and whose purchase was reversed (§5.4)"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "withdrawn-agent", Usage: "an agent `ID` the buyer owned that was withdrawn from sale (§5.3, §5.6)"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "unowned-agent", Usage: "a listed agent `ID` the buyer does not own"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "revoke", Usage: "a `COMMAND` (sh -c) that reverses the buyer's purchase of --agent, returning once the authority has it; enables the timed rules"},
		&cli.StringFlag{Category: buyer, Local: true, Name: "restore", Usage: "a `COMMAND` (sh -c) that undoes --revoke's reversal"},
	}
}

func distributorCommand() *cli.Command {
	return &cli.Command{
		Name:      "distributor",
		Usage:     "check a distributor: the check, bundles, §5.5's refusals, addressing, tokens",
		UsageText: "postern-conformance distributor URL --agent OWNER/NAME [--token TOKEN | " + envToken + "=…] [options]",
		Description: `Checks a distributor (§5.2–§5.7, with §2.1, §6 and §7) as a test buyer's
client sees it, against staging. URL is its origin. The inputs describe the
test buyer's catalogue; only the token and one agent it is entitled to are
required, and each rule that needs another input SKIPs, naming it.

The token is a secret: give it in ` + envToken + ` rather than with --token,
which can end up in shell history. Every presented token is blotted out of
every report.

With --revoke and --restore (both, sh -c), the timed rules reverse the
buyer's purchase of --agent and undo it, each within stale_after_seconds and
an earned slack; the hooks are never run without being given.

Examples:
  postern-conformance serve distributor          # prints what to pass here
  ` + envToken + `=… postern-conformance distributor https://staging.example.com \
      --agent acme/market-research-crew --stranger-token "$STRANGER" \
      --revoke './refund.sh' --restore './unrefund.sh'
  postern-conformance demo distributor           # the bundled reference distributor`,
		Flags: append(append(buyerFlags(),
			&cli.StringFlag{Category: "Distributor under test:", Local: true, Name: "launch", Usage: "start the distributor with `COMMAND` (sh -c); it prints POSTERN_PORT=<port> first"},
			&cli.FloatFlag{Category: "Distributor under test:", Local: true, Name: "launch-timeout", Value: 30, Usage: "how long, in `SECONDS`, a launched distributor has to print POSTERN_PORT"},
		), distributorCheckFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			target := cmd.Args().First()
			switch {
			case cmd.Args().Len() > 1:
				return exitError{exitCannotRun, fmt.Sprintf("unexpected arguments %q: give one distributor URL", cmd.Args().Tail())}
			case target == "" && cmd.String("launch") == "":
				return exitError{exitCannotRun, "no distributor to check: give its URL, or --launch COMMAND (or `postern-conformance demo distributor` to see it work)"}
			case target != "" && cmd.String("launch") != "":
				return exitError{exitCannotRun, "give the distributor's URL or --launch, not both"}
			}
			if cmd.String("launch") != "" {
				r, err := launchRunner(ctx, cmd)
				if err != nil {
					return err
				}
				defer r.Stop()
				target = r.URL
			}
			o := distributor.Options{Target: target, Token: cmd.String("token"), Agent: cmd.String("agent"),
				Stranger: cmd.String("stranger-token"), Rotated: cmd.String("rotated-token"),
				Revoked: cmd.String("revoked-agent"), Withdrawn: cmd.String("withdrawn-agent"), Unowned: cmd.String("unowned-agent")}
			if c := cmd.String("revoke"); c != "" {
				o.Revoke = distributor.Command(c)
			}
			if c := cmd.String("restore"); c != "" {
				o.Restore = distributor.Command(c)
			}
			if o.Token == "" {
				return exitError{exitCannotRun, "no token: give the test buyer's token in " + envToken + " (or --token)"}
			}
			if o.Agent == "" {
				return exitError{exitCannotRun, "no agent: give --agent OWNER/NAME, an agent the test buyer is entitled to"}
			}
			return runDistributor(ctx, cmd, o)
		},
	}
}

// runDistributor checks with the flags of cmd, writes the reports and
// exits as report.Exit decides.
func runDistributor(ctx context.Context, cmd *cli.Command, o distributor.Options) error {
	o.RateLimit, o.Rules = o.RateLimit || cmd.Bool("rate-limit"), cmd.StringSlice("rule")
	if p := cmd.String("profile"); p != "" {
		o.Profile = p
	}
	var err error
	if o.Timeout, err = secondsFlag(cmd, "timeout", false); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	if cmd.IsSet("deadline") {
		if o.Deadline, err = secondsFlag(cmd, "deadline", false); err != nil {
			return exitError{exitCannotRun, err.Error()}
		}
	}
	if o.Headers, err = parseHeaders(cmd.StringSlice("header")); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	for _, p := range o.Rules {
		if len(engine.Select(distributor.All(), []string{p})) == 0 {
			return exitError{exitCannotRun, fmt.Sprintf("--rule %q matches no rule of the distributor check; `postern-conformance list --distributor` shows the IDs", p)}
		}
	}
	bl, err := readBaseline(cmd)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	line, progress := progressLine(cmd, "rules decided")
	o.Progress = progress
	started := time.Now()
	env, results, err := distributor.Check(ctx, o)
	line.Stop()
	if err != nil {
		return exitError{exitCannotRun, oneLine(err)}
	}
	if env != nil {
		o = env.Options
	}
	rep := distributorReport(results, o, bl, report.Run{
		ToolVersion: version, Started: started, Elapsed: time.Since(started), AllEvidence: cmd.Bool("verbose"),
	})
	rep.Timelines = env.Timelines()
	return finish(cmd, rep)
}

// finish writes a mode's reports and baseline, and exits as report.Exit
// decides; a run that decided nothing cannot have checked anything.
func finish(cmd *cli.Command, rep *report.Report) error {
	if err := writeReports(cmd, rep); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	if err := writeBaseline(cmd, rep.Results); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	reportStale(cmd.Root().ErrWriter, rep)
	code, msg := rep.Exit(report.Strictness{Warn: cmd.Bool("strict"), Baseline: cmd.Bool("strict-baseline")})
	if code == report.ExitOK && !rep.Verdict.Conformant {
		return exitError{exitCannotRun, rep.Verdict.Text}
	}
	if code == report.ExitOK {
		return nil
	}
	return exitError{code, msg}
}

// oneLine is an error as one line, the bad input's marker dropped.
func oneLine(err error) string {
	s := err.Error()
	if errors.Is(err, distributor.ErrBadInput) {
		s = strings.TrimPrefix(s, distributor.ErrBadInput.Error()+": ")
	}
	return strings.Join(strings.Fields(s), " ")
}

// refdistFlags describe the reference distributor (serve and demo).
func refdistFlags() []cli.Flag {
	const ref = "Reference distributor:"
	return []cli.Flag{
		&cli.StringFlag{Category: ref, Local: true, Name: "posture", Value: refdist.PostureDefault, Usage: "`NAME`: default (a 2 s window), sigrix (§8's profile: 60 s, org.sigrix, a version answer, the withdrawn agent in its tail) or gone-early (its bundle 410 through the tail)"},
		&cli.StringSliceFlag{Category: ref, Local: true, Name: "fault", Usage: "plant the fault `NAME` (--list-faults); repeatable"},
		&cli.FloatFlag{Category: ref, Local: true, Name: "stale", Usage: "the cache's bound, declared as stale_after_seconds, in whole `SECONDS`"},
		&cli.BoolFlag{Category: ref, Local: true, Name: "list-faults", Usage: "list the planted faults and the rule each breaks"},
	}
}

// startRefdist starts the reference distributor as the flags say; nil
// with a nil error means --list-faults was answered.
func startRefdist(cmd *cli.Command, port int) (*refdist.Server, error) {
	if cmd.Bool("list-faults") {
		for _, f := range refdist.Faults() {
			fmt.Fprintf(cmd.Root().Writer, "%-24s %-28s %s\n", f.Name, f.Rule, f.What)
		}
		return nil, nil
	}
	cfg := refdist.Config{Posture: cmd.String("posture"), Faults: cmd.StringSlice("fault")}
	if cmd.IsSet("stale") {
		d, err := secondsFlag(cmd, "stale", false)
		if err != nil {
			return nil, exitError{exitCannotRun, err.Error()}
		}
		cfg.Stale = d
	}
	srv, err := refdist.Start(cfg, port)
	if err != nil {
		return nil, exitError{exitCannotRun, err.Error()}
	}
	return srv, nil
}

func serveDistributorCommand() *cli.Command {
	return &cli.Command{
		Name:      "distributor",
		Usage:     "serve the bundled reference distributor until interrupted",
		UsageText: "postern-conformance serve distributor [--posture NAME] [--fault NAME] [--port P]",
		Description: `Serves the reference distributor on 127.0.0.1, prints POSTERN_PORT=<port>
first, then (on stderr) its URL and the test buyer's inputs: the command
that checks it, hooks included (they call its admin endpoints with curl).`,
		Flags: append(refdistFlags(), &cli.IntFlag{Name: "port", Usage: "listen on `PORT` (0 picks a free one)"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			srv, err := startRefdist(cmd, int(cmd.Int("port")))
			if srv == nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.Root().Writer, "POSTERN_PORT=%d\n", srv.Port)
			in := srv.Inputs()
			revoke, restore := srv.HookCommands()
			fmt.Fprintf(os.Stderr, "reference distributor: posture %s, faults %v, at %s\n", cmd.String("posture"), cmd.StringSlice("fault"), srv.URL)
			fmt.Fprintf(os.Stderr, "check it with:\n  %s=%s postern-conformance distributor %s \\\n    --agent %s --stranger-token %s --rotated-token %s \\\n    --revoked-agent %s --withdrawn-agent %s --unowned-agent %s \\\n    --revoke %q \\\n    --restore %q",
				envToken, in.Token, srv.URL, in.Agent, in.Stranger, in.Rotated, in.Revoked, in.Withdrawn, in.Unowned, revoke, restore)
			if in.Sigrix {
				fmt.Fprint(os.Stderr, " \\\n    --profile sigrix")
			}
			fmt.Fprintln(os.Stderr)
			<-ctx.Done()
			return nil
		},
	}
}

func demoDistributorCommand() *cli.Command {
	return &cli.Command{
		Name:      "distributor",
		Usage:     "check the bundled reference distributor, in process, hooks and rate limit included",
		UsageText: "postern-conformance demo distributor [--posture NAME] [--fault NAME] [options]",
		Description: `Starts the reference distributor in this process and checks it with every
input given, its reversal hooks called in process, and --rate-limit. It is
conformant as shipped; --fault NAME plants one of its mistakes
(--list-faults). Posture sigrix declares a 60 s window, so there the hooks
are left out unless --stale shortens it.`,
		Flags: append(refdistFlags(), distributorCheckFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			srv, err := startRefdist(cmd, 0)
			if srv == nil {
				return err
			}
			defer srv.Close()
			hooks := srv.Inputs().StaleSeconds <= 5
			o := srv.Options(hooks)
			o.RateLimit = !cmd.IsSet("rate-limit") || cmd.Bool("rate-limit")
			if !cmd.Bool("json") {
				fmt.Fprintf(os.Stderr, "demo: the bundled reference distributor (posture %s, faults %v)\n", cmd.String("posture"), cmd.StringSlice("fault"))
			}
			return runDistributor(ctx, cmd, o)
		},
	}
}

// distributorReport is the report of a distributor check, with the mode's
// own verdict.
func distributorReport(results []distributor.Result, o distributor.Options, bl *baseline.Baseline, run report.Run) *report.Report {
	recs := engine.Records(results)
	h := report.Header{Mode: distributor.Mode, Target: o.Target,
		Options: report.Options{Rules: o.Rules, Timeout: o.Timeout, Deadline: o.Deadline, Headers: report.HeaderNames(o.Headers)}}
	return report.New(h, recs, distributor.Decide(recs, bl.Set()), bl, run)
}
