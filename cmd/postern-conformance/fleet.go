package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/fleet"
	"github.com/sigrix-io/postern-conformance/report"
	htmlreport "github.com/sigrix-io/postern-conformance/report/html"
	"github.com/sigrix-io/postern-conformance/report/markdown"
	"github.com/urfave/cli/v3"
)

// fleetFlags are the root command's flags for checking several runners.
func fleetFlags() []cli.Flag {
	const cat = "Many runners:"
	return []cli.Flag{
		&cli.StringFlag{Category: cat, Local: true, Name: "targets", Usage: "also check the runners listed in `FILE`, one origin per line (# comments, blank lines ignored; - reads stdin)"},
		&cli.IntFlag{Category: cat, Local: true, Name: "fleet-parallel", Value: fleet.DefaultParallel, Usage: fmt.Sprintf("with several targets, check at most `N` runners at once (1–%d)", fleet.MaxParallel)},
	}
}

// fleetAction checks every TARGET and every runner --targets lists; with
// one target in all, it is the plain check of that runner.
func fleetAction(ctx context.Context, cmd *cli.Command, first string) error {
	if cmd.String("launch") != "" {
		return exitError{exitCannotRun, "--launch starts one runner under test: give it without a TARGET or --targets (several runners are checked by their URLs)"}
	}
	var named []fleet.Named
	if first != "" {
		named = append(named, fleet.Named{Target: first, Where: "argument 1"})
	}
	for i, a := range cmd.Args().Slice() {
		named = append(named, fleet.Named{Target: a, Where: fmt.Sprintf("argument %d", i+2)})
	}
	if name := cmd.String("targets"); name != "" {
		listed, err := readTargets(cmd, name)
		if err != nil {
			return exitError{exitCannotRun, "--targets " + err.Error()}
		}
		named = append(named, listed...)
	}
	targets, err := fleet.Targets(named)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	switch len(targets) {
	case 0:
		return exitError{exitCannotRun, fmt.Sprintf("--targets %s lists no runner", cmd.String("targets"))}
	case 1:
		return runCheck(ctx, cmd, targets[0])
	}
	if cmd.String("github-output") != "" {
		return exitError{exitCannotRun, "--github-output gives the step outputs of one runner: with several targets, read the fleet's --json-file instead"}
	}
	parallel := int(cmd.Int("fleet-parallel"))
	if parallel < 1 || parallel > fleet.MaxParallel {
		return exitError{exitCannotRun, fmt.Sprintf("--fleet-parallel %d: give 1 to %d", parallel, fleet.MaxParallel)}
	}
	o, err := options(cmd, "")
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	bl, err := readBaseline(cmd)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	line, progress := progressLine(cmd, "runners checked")
	started := time.Now()
	results := fleet.Check(ctx, targets, fleet.Options{Check: o, Parallel: parallel, Progress: progress})
	line.Stop()
	f := report.AssembleFleet(results, o, bl, report.Run{
		ToolVersion: version, Started: started, Elapsed: time.Since(started), AllEvidence: cmd.Bool("verbose"),
	})
	if err := writeFleetReports(cmd, f); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	var all []report.Runner
	for _, rn := range f.Runners {
		if rn.Report != nil {
			all = append(all, rn)
		}
	}
	if err := writeFleetBaseline(cmd, all); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	for _, s := range f.Stale() {
		fmt.Fprintln(cmd.Root().ErrWriter, "postern-conformance: "+s.String()+" (no runner of the fleet fails it)")
	}
	code, msg := f.Exit(report.Strictness{Warn: cmd.Bool("strict"), Baseline: cmd.Bool("strict-baseline")})
	if code == report.ExitOK {
		return nil
	}
	return exitError{code, msg}
}

// readTargets reads the --targets file, or stdin for "-".
func readTargets(cmd *cli.Command, name string) ([]fleet.Named, error) {
	if name == "-" {
		var in io.Reader = os.Stdin
		if cmd.Root().Reader != nil {
			in = cmd.Root().Reader
		}
		return fleet.ReadTargets(in, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fleet.ReadTargets(f, name)
}

// writeFleetReports writes the fleet's reports as the flags ask (writeAll).
func writeFleetReports(cmd *cli.Command, f *report.Fleet) error {
	return writeAll(cmd, renderings{
		json:   func(w io.Writer) error { return report.WriteFleetJSON(w, f) },
		text:   func(w io.Writer, s report.Style) error { return report.WriteFleetText(w, f, s) },
		junit:  func(w io.Writer) error { return report.WriteFleetJUnit(w, f) },
		html:   func(w io.Writer) error { return htmlreport.WriteFleet(w, f) },
		github: func() error { return writeFleetGitHub(cmd, f) },
	})
}

// writeFleetGitHub is writeGitHub (github.go) for a fleet: each checked
// runner's annotations, and its Markdown summary one after the other in
// the step summary and the --markdown file.
func writeFleetGitHub(cmd *cli.Command, f *report.Fleet) error {
	var reps []*report.Report
	for _, rn := range f.Runners {
		if rn.Report != nil {
			reps = append(reps, rn.Report)
		}
	}
	summary := func(w io.Writer) error {
		for _, rn := range f.Runners {
			if rn.Report == nil {
				if _, err := fmt.Fprintf(w, "## ❌ Postern conformance: not checked\n\n**Target:** %s\n\nNot checked: %s\n\n", markdown.Escape(rn.Target), markdown.Escape(report.FirstLine(rn.Err, 0))); err != nil {
					return err
				}
				continue
			}
			if err := markdown.Write(w, rn.Report); err != nil {
				return err
			}
		}
		return nil
	}
	return annotate(cmd, reps, summary)
}

// writeFleetBaseline writes --write-baseline: every rule that FAILs on
// any runner, since one baseline serves the whole fleet.
func writeFleetBaseline(cmd *cli.Command, runners []report.Runner) error {
	if cmd.String("write-baseline") == "" {
		return nil
	}
	var all []engine.Record
	for _, rn := range runners {
		all = append(all, rn.Report.Results...)
	}
	return writeBaseline(cmd, all)
}
