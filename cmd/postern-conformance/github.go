package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/report/github"
	"github.com/sigrix-io/postern-conformance/report/markdown"
	"github.com/urfave/cli/v3"
)

// The environment GitHub Actions sets for a step.
const (
	envGitHubActions = "GITHUB_ACTIONS"      // "true" in a workflow
	envStepSummary   = "GITHUB_STEP_SUMMARY" // the file of the step's Markdown summary
)

// githubFlags are the CI flags of a check and of a walk.
func githubFlags() []cli.Flag {
	const out = "Reports:"
	return []cli.Flag{
		&cli.BoolFlag{Category: out, Local: true, Name: "github", DefaultText: "on when " + envGitHubActions + "=true",
			Usage: "print a GitHub Actions annotation (::error, ::warning, ::notice) for each finding and append the Markdown summary to $" + envStepSummary + " (in a workflow); --github=false turns it off"},
		&cli.StringFlag{Category: out, Local: true, Name: "markdown", TakesFile: true, Usage: "also write a Markdown summary (verdict, counts, sections, each FAIL with its evidence) to `FILE`"},
		&cli.StringFlag{Category: out, Local: true, Name: "github-output", TakesFile: true,
			Usage: "append the step outputs verdict, verdict-text, level, failures, warnings, known, errors, report-json, report-junit, report-html to `FILE` as name=value lines (give $GITHUB_OUTPUT)"},
	}
}

// githubMode reports whether annotations are wanted: --github as given, or
// else whether this is a GitHub Actions step.
func githubMode(cmd *cli.Command) bool {
	if cmd.IsSet("github") {
		return cmd.Bool("github")
	}
	return os.Getenv(envGitHubActions) == "true"
}

// githubPaused runs write, which writes the text report to w, with
// workflow commands paused around it when annotations are on, so no line
// of runner text in it can be read as a command.
func githubPaused(cmd *cli.Command, w io.Writer, write func() error) error {
	if !githubMode(cmd) {
		return write()
	}
	resume, err := github.Pause(w)
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	return resume()
}

// writeGitHub writes what --github, --markdown and --github-output ask
// for, after the other reports: the annotations (on stdout, or on stderr
// when stdout carries the JSON report), the Markdown file, the step
// summary, and the step outputs.
func writeGitHub(cmd *cli.Command, rep *report.Report) error {
	if err := annotate(cmd, []*report.Report{rep}, func(w io.Writer) error { return markdown.Write(w, rep) }); err != nil {
		return err
	}
	if name := cmd.String("github-output"); name != "" {
		files := github.Files{JSON: absPath(cmd.String("json-file")), JUnit: absPath(cmd.String("junit")), HTML: absPath(cmd.String("html"))}
		if err := appendFile(name, func(w io.Writer) error { return github.WriteOutputs(w, rep, files) }); err != nil {
			return fmt.Errorf("--github-output: %w", err)
		}
	}
	return nil
}

// annotate writes what a workflow reads, in GitHub mode: the annotations
// of each report (to stdout, or stderr where JSON is on stdout) and summary
// appended to the step summary; and summary to the --markdown file.
func annotate(cmd *cli.Command, reps []*report.Report, summary func(io.Writer) error) error {
	if githubMode(cmd) {
		w := cmd.Root().Writer
		if cmd.Bool("json") {
			w = cmd.Root().ErrWriter
		}
		for _, rep := range reps {
			if err := github.Write(w, rep); err != nil {
				return err
			}
		}
		if name := os.Getenv(envStepSummary); name != "" && os.Getenv(envGitHubActions) == "true" {
			if err := appendFile(name, summary); err != nil {
				return fmt.Errorf("$%s: %w", envStepSummary, err)
			}
		}
	}
	if name := cmd.String("markdown"); name != "" {
		if err := writeFile(name, summary); err != nil {
			return fmt.Errorf("--markdown: %w", err)
		}
	}
	return nil
}

// absPath is name made absolute, or "" for none.
func absPath(name string) string {
	if name == "" {
		return ""
	}
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// appendFile appends what write writes to the file name, creating it.
func appendFile(name string, write func(io.Writer) error) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
