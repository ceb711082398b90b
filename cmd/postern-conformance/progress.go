package main

import (
	"io"
	"os"

	"github.com/sigrix-io/postern-conformance/report/progress"
	"github.com/urfave/cli/v3"
)

// progressLine is the live progress line of a check, drawn on stderr
// where stderr is a terminal (report/progress), counting unit; where it
// is not, both are nil and nothing is drawn. The caller stops the line
// before writing a report.
func progressLine(cmd *cli.Command, unit string) (*progress.Line, func(done, total int, current string)) {
	var w io.Writer = os.Stderr
	if cmd.Root().ErrWriter != nil {
		w = cmd.Root().ErrWriter
	}
	l := progress.New(w, progress.Config{Unit: unit})
	if l == nil {
		return nil, nil
	}
	return l.Start(), l.Update
}
