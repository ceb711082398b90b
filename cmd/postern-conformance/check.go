package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/report"
	htmlreport "github.com/sigrix-io/postern-conformance/report/html"
	"github.com/sigrix-io/postern-conformance/schemas"
	"github.com/urfave/cli/v3"
)

// deadlineDefault says what runner.DefaultDeadline gives (a test holds
// them together).
const deadlineDefault = "2 × --timeout + 5, or 600 with --execute"

// checkFlags are the flags of a checking run (the root command and demo).
func checkFlags() []cli.Flag {
	const probe, launch = "Probing:", "Runner under test:"
	return append([]cli.Flag{
		&cli.BoolFlag{Category: probe, Local: true, Name: "execute", Usage: "also check rules that need a real run (spends money; may call write_tools)"},
		&cli.IntFlag{Category: probe, Local: true, Name: "max-runs", Value: runner.DefaultMaxRuns, Usage: "with --execute, start the agent at most `N` times; a rule that would need more starts than remain SKIPs, saying how many it needs"},
		&cli.StringFlag{Category: probe, Local: true, Name: "origin", Usage: "an `ORIGIN` the runner is configured to allow, e.g. https://app.example.com (enables the CORS header rules)"},
		&cli.StringSliceFlag{Category: probe, Local: true, Name: "header", Aliases: []string{"H"}, Usage: "send `LINE` ('Name: value') on every request, for a runner that requires inbound authentication (§7); repeatable; values never appear in reports"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "timeout", Value: 10, Usage: "per-request deadline in `SECONDS`"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "deadline", DefaultText: deadlineDefault, Usage: "end the whole run after `SECONDS`: past it, the rules not yet decided SKIP as undecided, and the verdict is not determined (exit 2)"},
		&cli.FloatFlag{Category: probe, Local: true, Name: "patience", Value: runner.DefaultPatience.Seconds(), Usage: "how long, in `SECONDS`, to wait for an answer a conforming runner gives at once (a refusal decided on the request head, the body withheld) before reporting that it did not; a conforming runner never pays it, since the waits it does pay are derived from its own answer times"},
		&cli.StringFlag{Category: probe, Local: true, Name: "schemas", Usage: "validate against the *.schema.json files in `DIR` instead of the embedded set"},
		&cli.StringFlag{Category: launch, Local: true, Name: "launch", Usage: "start the runner under test with `COMMAND` (run by sh -c); it must print POSTERN_PORT=<port> as its first stdout line (§2)"},
		&cli.FloatFlag{Category: launch, Local: true, Name: "launch-timeout", Value: 30, Usage: "how long to wait for POSTERN_PORT, in `SECONDS`"},
	}, reportFlags()...)
}

func checkAction(ctx context.Context, cmd *cli.Command) error {
	target := cmd.StringArg("target")
	if cmd.Args().Len() > 0 || cmd.IsSet("targets") {
		return fleetAction(ctx, cmd, target) // fleet.go
	}
	if cmd.String("launch") != "" {
		if target != "" {
			return exitError{exitCannotRun, "give a TARGET or --launch, not both"}
		}
		r, err := launchRunner(ctx, cmd)
		if err != nil {
			return err
		}
		defer r.Stop()
		defer reportLaunchedExit(r)
		target = r.URL
	}
	if target == "" {
		return exitError{exitCannotRun, "no TARGET given: postern-conformance http://127.0.0.1:8787 (or `postern-conformance demo` to see it work)"}
	}
	return runCheck(ctx, cmd, target)
}

// runCheck checks target with the flags of cmd, writes the reports and
// exits as report.Exit decides.
func runCheck(ctx context.Context, cmd *cli.Command, target string) error {
	o, err := options(cmd, target)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	bl, err := readBaseline(cmd)
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	line, progress := progressLine(cmd, "rules decided")
	o.Progress = progress
	started := time.Now()
	env, results, err := runner.Check(ctx, o)
	line.Stop()
	if err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	rep := report.Assemble(env, results, o, bl, report.Run{
		ToolVersion: version, Started: started, Elapsed: time.Since(started), AllEvidence: cmd.Bool("verbose"),
	})
	if err := writeReports(cmd, rep); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	if err := writeBaseline(cmd, rep.Results); err != nil {
		return exitError{exitCannotRun, err.Error()}
	}
	reportStale(cmd.Root().ErrWriter, rep)
	code, msg := rep.Exit(report.Strictness{Warn: cmd.Bool("strict"), Baseline: cmd.Bool("strict-baseline")})
	if code == report.ExitOK {
		return nil
	}
	return exitError{code, msg}
}

// options maps the flags of cmd to the options of a check of target.
func options(cmd *cli.Command, target string) (runner.Options, error) {
	o := runner.Options{
		Target:  target,
		Execute: cmd.Bool("execute"),
		MaxRuns: int(cmd.Int("max-runs")),
		Rules:   cmd.StringSlice("rule"),
	}
	if o.MaxRuns < 1 {
		return o, fmt.Errorf("--max-runs %d: the budget is at least one start", o.MaxRuns)
	}
	var err error
	if o.Timeout, err = secondsFlag(cmd, "timeout", false); err != nil {
		return o, err
	}
	if o.Patience, err = secondsFlag(cmd, "patience", true); err != nil {
		return o, err
	}
	if cmd.IsSet("deadline") {
		if o.Deadline, err = secondsFlag(cmd, "deadline", false); err != nil {
			return o, fmt.Errorf("%w, or leave --deadline out for the default (%s)", err, deadlineDefault)
		}
	}
	if origin := cmd.String("origin"); origin != "" {
		if err := checkOrigin(origin); err != nil {
			return o, err
		}
		o.Origin = origin
	}
	h, err := parseHeaders(cmd.StringSlice("header"))
	if err != nil {
		return o, err
	}
	o.Headers = h
	if dir := cmd.String("schemas"); dir != "" {
		if o.Schemas, err = schemas.FromDir(dir); err != nil {
			return o, fmt.Errorf("--schemas %s: %w", dir, err)
		}
	} else if o.Schemas, err = schemas.Embedded(); err != nil {
		return o, err
	}
	for _, p := range o.Rules {
		if len(runner.Select(runner.All(), []string{p})) == 0 {
			return o, fmt.Errorf("--rule %q matches no rule; `postern-conformance list` shows the IDs", p)
		}
	}
	return o, nil
}

// maxSeconds bounds a flag in seconds well inside a time.Duration.
const maxSeconds = 1e9

// secondsFlag reads the flag name as a duration: a positive number of
// seconds, or also zero where zeroOK.
func secondsFlag(cmd *cli.Command, name string, zeroOK bool) (time.Duration, error) {
	f := cmd.Float(name)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f == 0 && !zeroOK):
		want := "a positive number of seconds"
		if zeroOK {
			want = "a number of seconds, 0 or more"
		}
		return 0, fmt.Errorf("--%s %v: give %s", name, f, want)
	case f > maxSeconds:
		return 0, fmt.Errorf("--%s %v: too long; give at most %.0f seconds", name, f, float64(maxSeconds))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// checkOrigin accepts a serialised origin: scheme://host[:port], no path.
func checkOrigin(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("--origin %q is not an origin: give scheme://host[:port], e.g. https://app.example.com", s)
	}
	if u.Path == "/" {
		return fmt.Errorf("--origin %q: an origin has no trailing slash; give %s", s, strings.TrimSuffix(s, "/"))
	}
	return nil
}

func parseHeaders(list []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range list {
		name, value, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("--header %q: write it as 'Name: value'", redactHeaderArg(l))
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// redactHeaderArg keeps a header's name and hides its value in messages.
func redactHeaderArg(l string) string {
	if name, _, ok := strings.Cut(l, ":"); ok {
		return name + ": [redacted]"
	}
	if len(l) > 12 {
		return l[:4] + "…"
	}
	return l
}

func writeReports(cmd *cli.Command, rep *report.Report) error {
	return writeAll(cmd, renderings{
		json:   func(w io.Writer) error { return report.WriteJSON(w, rep) },
		text:   func(w io.Writer, s report.Style) error { return report.WriteText(w, rep, s) },
		junit:  func(w io.Writer) error { return report.WriteJUnit(w, rep) },
		html:   func(w io.Writer) error { return htmlreport.Write(w, rep) },
		github: func() error { return writeGitHub(cmd, rep) },
	})
}

// renderings are one run's report in each format, for writeAll.
type renderings struct {
	json, junit, html func(io.Writer) error
	text              func(io.Writer, report.Style) error
	github            func() error
}

// writeAll writes the reports as the flags ask: text or JSON on stdout,
// JSON and JUnit files, then what GitHub reads.
func writeAll(cmd *cli.Command, r renderings) error {
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		if err := r.json(w); err != nil {
			return err
		}
	} else {
		style := report.Style{Verbose: cmd.Bool("verbose")}
		if f, ok := w.(*os.File); ok && !cmd.Bool("no-color") {
			style = report.AutoStyle(f)
			style.Verbose = cmd.Bool("verbose")
		}
		if err := githubPaused(cmd, w, func() error { return r.text(w, style) }); err != nil {
			return err
		}
	}
	if f := cmd.String("json-file"); f != "" {
		if err := writeFile(f, r.json); err != nil {
			return err
		}
	}
	if f := cmd.String("junit"); f != "" {
		if err := writeFile(f, r.junit); err != nil {
			return err
		}
	}
	if f := cmd.String("html"); f != "" {
		if err := writeFile(f, r.html); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return r.github()
}

func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
