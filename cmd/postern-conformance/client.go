package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"github.com/urfave/cli/v3"
)

// clientCheckFlags are the flags of a client check (the client command
// and demo client).
func clientCheckFlags() []cli.Flag {
	const probe = "Checking:"
	return append([]cli.Flag{
		&cli.StringSliceFlag{Category: probe, Local: true, Name: "scenario", Usage: "run only the scenario `NAME` (--list-scenarios), beside the plain ones every check runs; repeatable"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "client-timeout", Value: client.DefaultClientTimeout.Seconds(), Usage: "how long, in `SECONDS`, the client has to finish each scenario; it is then killed, with its process group"},
		&cli.BoolFlag{Category: probe, Local: true, Name: "list-scenarios", Usage: "list the scenarios, what each runner does, and the rules observing it"},
	}, reportFlags()...)
}

func clientCommand() *cli.Command {
	return &cli.Command{
		Name:      "client",
		Usage:     "check a client: run its adapter once per scenario, each against a scripted runner of the checker's own",
		UsageText: "postern-conformance client --command 'CMD' [--scenario NAME]… [--client-timeout SECONDS] [report options]",
		Description: `Checks a Postern client, the third party beside the runner and the
distributor. For each scenario the checker starts a runner of its own on a
loopback port: conformant, or using one piece of the room SPEC gives a
runner (a comment line, a lone CR, an error code nobody knows yet, a 503
while status says ready…). It then runs CMD with sh -c, in a process group
of its own that ends with the scenario, and judges every request the
client sent, its exit status and its stdout.

Client authors write a thin adapter to this contract:

` + indent(client.Contract, "  ") + `

A CMD that cannot start, or an adapter that fails the plain scenario (a
text output, nothing unusual), is bad input: one line, exit 2. Exit status
otherwise: 0 no MUST broken and every rule decided, 1 at least one broken,
2 rules left undecided.

Examples:
  postern-conformance client --command 'node my-client/adapter.js'
  postern-conformance client --command './adapter.sh' --scenario lone-cr --scenario unknown-event
  postern-conformance client --command 'python3 adapter.py' --json > report.json
  postern-conformance client --list-scenarios
  postern-conformance demo client              # the bundled reference client, run as a command
  postern-conformance serve scenario lone-cr   # one scripted runner, to debug a client against`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Category: "Client under test:", Local: true, Name: "command", Usage: "the client's adapter: a `CMD` run with sh -c once per scenario (see the contract above)"},
		}, clientCheckFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Bool("list-scenarios") {
				listScenarios(cmd.Root().Writer)
				return nil
			}
			if cmd.Args().Len() > 0 {
				return exitError{exitCannotRun, fmt.Sprintf("unexpected arguments %q: the client is given with --command 'CMD'", cmd.Args().Slice())}
			}
			if strings.TrimSpace(cmd.String("command")) == "" {
				return exitError{exitCannotRun, "no client to check: give --command 'CMD', the adapter that runs it (or `postern-conformance demo client` to see it work)"}
			}
			o := client.Options{Command: cmd.String("command")}
			return runClient(ctx, cmd, o, client.Target(o))
		},
	}
}

// runClient checks with the flags of cmd, writes the reports and exits as
// report.Exit decides.
func runClient(ctx context.Context, cmd *cli.Command, o client.Options, target string) error {
	o.Scenarios, o.Rules = cmd.StringSlice("scenario"), cmd.StringSlice("rule")
	var err error
	if o.ClientTimeout, err = secondsFlag(cmd, "client-timeout", false); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	for _, p := range o.Rules {
		if len(engine.Select(client.All(), []string{p})) == 0 {
			return exitError{exitCannotRun, fmt.Sprintf("--rule %q matches no rule of the client check; `postern-conformance list --client` shows the IDs", p)}
		}
	}
	bl, err := readBaseline(cmd)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	line, progress := progressLine(cmd, "scenarios run")
	o.Progress = progress
	started := time.Now()
	_, results, err := client.Check(ctx, o)
	line.Stop()
	if err != nil {
		return exitError{exitCannotRun, clientLine(err)}
	}
	return finish(cmd, clientReport(results, o, target, bl, report.Run{
		ToolVersion: version, Started: started, Elapsed: time.Since(started), AllEvidence: cmd.Bool("verbose"),
	}))
}

// clientLine is a client check's error as one line, the bad input's
// marker dropped.
func clientLine(err error) string {
	s := err.Error()
	if errors.Is(err, client.ErrBadInput) {
		s = strings.TrimPrefix(s, client.ErrBadInput.Error()+": ")
	}
	return strings.Join(strings.Fields(s), " ")
}

// clientReport is the report of a client check, with the mode's own
// verdict.
func clientReport(results []client.Result, o client.Options, target string, bl *baseline.Baseline, run report.Run) *report.Report {
	recs := engine.Records(results)
	h := report.Header{Mode: client.Mode, Target: target,
		Options: report.Options{Rules: o.Rules, Timeout: o.ClientTimeout}}
	return report.New(h, recs, client.Decide(recs, bl.Set()), bl, run)
}

// listScenarios prints every scenario: its name, verb and kind, what its
// runner does, and the rules observing it.
func listScenarios(w io.Writer) {
	by := map[string][]string{}
	for _, r := range client.All() {
		for _, s := range client.Observes(r.ID) {
			by[s] = append(by[s], r.ID)
		}
	}
	for _, s := range scripted.Scenarios() {
		fmt.Fprintf(w, "%-20s %-6s %-8s %s (%s)\n", s.Name, s.Verb, s.Kind, s.What, s.Section)
		rules := by[s.Name]
		if len(rules) == 0 {
			rules = []string{"the request rules only (2/client-json-body, 4.2/client-inputs), and the adapter's own test"}
		}
		fmt.Fprintf(w, "%-37s judged by %s\n", "", strings.Join(rules, ", "))
	}
	fmt.Fprintf(w, "\n%d scenarios; 2/client-json-body and 4.2/client-inputs judge every request of every one.\n", len(scripted.Scenarios()))
}

// referenceClientCommand is the bundled reference client as a command: how
// demo client runs it through the adapter contract, as any client is run.
func referenceClientCommand() *cli.Command {
	return &cli.Command{
		Name:   "reference-client",
		Hidden: true,
		Usage:  "the bundled reference client, run as a client under test (POSTERN_URL, POSTERN_VERB)",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "fault", Usage: "plant the fault `NAME`; repeatable"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			for _, f := range cmd.StringSlice("fault") {
				if _, err := refclient.LookupFault(f); err != nil {
					return exitError{exitCannotRun, err.Error()}
				}
			}
			env := map[string]string{client.VarURL: os.Getenv(client.VarURL), client.VarVerb: os.Getenv(client.VarVerb)}
			if code := refclient.Main(ctx, env, os.Stdout, os.Stderr, cmd.StringSlice("fault")...); code != 0 {
				return exitError{code, ""}
			}
			return nil
		},
	}
}

func demoClientCommand() *cli.Command {
	return &cli.Command{
		Name:      "client",
		Usage:     "check the bundled reference client, run as a command through the adapter contract",
		UsageText: "postern-conformance demo client [--fault NAME] [options]",
		Description: `Checks the reference client (fixtures/client) as the client command checks
any client: this binary runs itself once per scenario, with sh -c, as the
hidden subcommand reference-client. It is conformant as shipped; --fault
NAME plants one of its mistakes (--list-faults).`,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Category: "Reference client:", Local: true, Name: "fault", Usage: "plant the fault `NAME` (--list-faults); repeatable"},
			&cli.BoolFlag{Category: "Reference client:", Local: true, Name: "list-faults", Usage: "list the planted faults and the rule each breaks"},
		}, clientCheckFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			w := cmd.Root().Writer
			switch {
			case cmd.Bool("list-faults"):
				for _, f := range refclient.Faults() {
					fmt.Fprintf(w, "%-26s %-36s %s\n", f.Name, f.Rule, f.What)
				}
				return nil
			case cmd.Bool("list-scenarios"):
				listScenarios(w)
				return nil
			}
			line, err := referenceCommand(cmd.StringSlice("fault"))
			if err != nil {
				return exitError{exitCannotRun, err.Error()}
			}
			if !cmd.Bool("json") {
				fmt.Fprintf(os.Stderr, "demo: the bundled reference client, run as %s\n", line)
			}
			faults := "none"
			if fs := cmd.StringSlice("fault"); len(fs) > 0 {
				faults = strings.Join(fs, ", ")
			}
			return runClient(ctx, cmd, client.Options{Command: line}, "the bundled reference client (faults "+faults+"), run as a command")
		},
	}
}

// referenceCommand is the command line that runs this binary as the
// reference client with faults planted.
func referenceCommand(faults []string) (string, error) {
	for _, f := range faults {
		if _, err := refclient.LookupFault(f); err != nil {
			return "", err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this binary to run it as the reference client: %v", err)
	}
	line := shellQuote(exe) + " reference-client"
	for _, f := range faults {
		line += " --fault " + shellQuote(f)
	}
	return line, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// indent indents every line of s.
func indent(s, by string) string { return by + strings.ReplaceAll(s, "\n", "\n"+by) }

func serveScenarioCommand() *cli.Command {
	return &cli.Command{
		Name:      "scenario",
		Usage:     "serve one scenario's scripted runner until interrupted, to debug a client against it",
		UsageText: "postern-conformance serve scenario NAME",
		Description: `Serves the scripted runner of one scenario of the client check on
127.0.0.1, prints POSTERN_PORT=<port> first, and (on stderr) the
environment a client is run with, so an adapter can be run by hand
against exactly what the check runs it against. It keeps no verdict:
the client command judges. --list-scenarios (on client) names them.`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name := cmd.Args().First()
			s, ok := scripted.Lookup(name)
			if !ok || cmd.Args().Len() != 1 {
				return exitError{exitCannotRun, fmt.Sprintf("give one scenario: %s", strings.Join(scripted.Names(), ", "))}
			}
			rn, err := scripted.Start(s.Script)
			if err != nil {
				return exitError{exitCannotRun, err.Error()}
			}
			defer rn.Close()
			port := rn.URL[strings.LastIndexByte(rn.URL, ':')+1:]
			fmt.Fprintf(cmd.Root().Writer, "POSTERN_PORT=%s\n", port)
			fmt.Fprintf(os.Stderr, "scenario %s (%s): %s\nrun a client against it with:\n  %s=%s %s=%s %s=%s <your adapter>\n",
				s.Name, s.Kind, s.What, client.VarURL, rn.URL, client.VarVerb, s.Verb, client.VarScenario, s.Name)
			<-ctx.Done()
			return nil
		},
	}
}
