// Command postern-conformance checks a Postern runner over the wire and
// reports which conformance level it really meets and which MUST rules it
// breaks, with the request and response that prove each finding.
//
// Exit status: 0 no MUST rule broken; 1 at least one broken (with --strict,
// a SHOULD too; with --strict-baseline, a stale baseline entry); 2 the
// runner could not be checked at all (unreachable, not a Postern runner, bad
// arguments), a rule could not be evaluated, or nothing broke but rules at
// or below the declared level were left undecided (the verdict is not
// determined). report.Exit decides it.
//
// This package holds only the flags and their mapping onto the library:
// checks runs the rules, report assembles and renders the report and
// decides the exit status, report/baseline reads and applies baselines, and
// wire/launch starts a --launch runner.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sigrix-io/postern-conformance/report"
	"github.com/urfave/cli/v3"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes, as the incumbent checker defines them; report.Exit decides
// which a checking run ends with.
const (
	exitOK        = report.ExitOK
	exitBroken    = report.ExitBroken
	exitCannotRun = report.ExitCannotCheck
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := app().Run(ctx, os.Args)
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "postern-conformance: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "postern-conformance: "+err.Error())
	return exitCannotRun
}

func init() {
	cli.VersionPrinter = func(cmd *cli.Command) {
		fmt.Fprintf(cmd.Root().Writer, "postern-conformance %s (checks Postern 0.1)\n", cmd.Root().Version)
	}
}

func app() *cli.Command {
	return &cli.Command{
		Name:      "postern-conformance",
		Version:   version,
		Usage:     "check a Postern runner over the wire",
		UsageText: "postern-conformance [options] TARGET [TARGET…] | --targets FILE\npostern-conformance entitlement --launch COMMAND\npostern-conformance distributor URL --agent OWNER/NAME\npostern-conformance client --command 'CMD'\npostern-conformance demo [entitlement | distributor | client] | serve | list",
		Description: `Points at a running Postern runner (TARGET is its origin, e.g.
http://127.0.0.1:8787, optionally ending in /postern/v0) and reports the
level it declares, whether every MUST rule at or below that level holds, and
the request and response behind every finding.

It never runs the agent unless --execute is given: every default probe is a
request a conforming runner refuses before its agent starts. A SHOULD only
warns. Exit status: 0 no MUST broken and every rule decided, 1 at least one
broken, 2 could not check at all, or rules left undecided (not determined).

Examples:
  postern-conformance http://127.0.0.1:8787
  postern-conformance http://127.0.0.1:8787 --origin https://ui.example.org
  postern-conformance http://127.0.0.1:8787 --json > report.json
  postern-conformance --launch 'node runner.js' --junit junit.xml
  postern-conformance --targets fleet.txt --junit junit.xml   # many runners
  postern-conformance demo                 # the bundled reference runner
  postern-conformance client --command 'node adapter.js'   # check a client
  postern-conformance serve --fault bare-405   # a runner with one rule broken
  postern-conformance list --coverage      # what the suite covers`,
		EnableShellCompletion: false,
		Flags:                 append(checkFlags(), fleetFlags()...),
		Arguments:             []cli.Argument{&cli.StringArg{Name: "target", UsageText: "TARGET"}},
		Action:                checkAction,
		Commands:              []*cli.Command{entitlementCommand(), distributorCommand(), clientCommand(), demoCommand(), serveCommand(), listCommand(), referenceClientCommand()},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return exitError{exitCannotRun, err.Error() + " (see --help)"}
		},
	}
}
