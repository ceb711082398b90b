package main

import (
	"fmt"
	"io"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/baseline"
	"github.com/urfave/cli/v3"
)

// readBaseline reads the --baseline file, if one is given.
func readBaseline(cmd *cli.Command) (*baseline.Baseline, error) {
	name := cmd.String("baseline")
	if name == "" {
		if cmd.Bool("strict-baseline") {
			return nil, fmt.Errorf("--strict-baseline needs --baseline FILE: there is no baseline to hold to the results")
		}
		return nil, nil
	}
	b, err := baseline.Read(name)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	return b, nil
}

// writeBaseline writes the --write-baseline file, if one is asked for.
func writeBaseline(cmd *cli.Command, results []engine.Record) error {
	name := cmd.String("write-baseline")
	if name == "" {
		return nil
	}
	if err := baseline.Write(name, results); err != nil {
		return fmt.Errorf("--write-baseline: %w", err)
	}
	return nil
}

// reportStale names the baseline entries whose rule no longer fails.
func reportStale(w io.Writer, rep *report.Report) {
	for _, s := range rep.Stale {
		fmt.Fprintln(w, "postern-conformance: "+s.String())
	}
}
