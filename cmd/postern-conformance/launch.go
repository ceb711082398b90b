package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sigrix-io/postern-conformance/wire/launch"
	"github.com/urfave/cli/v3"
)

// launchRunner starts the --launch command as the runner under test; the
// caller stops it.
func launchRunner(ctx context.Context, cmd *cli.Command) (*launch.Runner, error) {
	wait, err := secondsFlag(cmd, "launch-timeout", false)
	if err != nil {
		return nil, exitError{exitCannotRun, err.Error()}
	}
	r, err := launch.Start(ctx, cmd.String("launch"), wait, os.Stderr)
	if err == nil {
		err = r.Listening(ctx, launch.ListenWait(wait))
	}
	if err != nil {
		return nil, exitError{exitCannotRun, "--launch: " + err.Error()}
	}
	return r, nil
}

// reportLaunchedExit says so when the launched runner ended during the
// check, which explains a run of unanswered requests.
func reportLaunchedExit(r *launch.Runner) {
	if exited, how := r.Exited(); exited {
		fmt.Fprintf(os.Stderr, "postern-conformance: the launched runner exited during the check (%s)\n", how)
	}
}
