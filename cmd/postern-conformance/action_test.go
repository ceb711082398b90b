package main

// Tests of the GitHub Action (action.yml) run without GitHub, and of the
// flags that serve it: --github, --markdown, --github-output.
//
// TestAction reads action.yml, takes its steps with their env mappings,
// fills in the ${{ }} expressions a workflow would, and runs each shell step
// with bash as GitHub does (bash --noprofile --norc -eo pipefail), with the
// GITHUB_* files in a temporary folder. The install step runs too, against
// a stand-in `go` that puts a binary this test built where `go install`
// would; the check step then launches that binary's reference runner.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/fixtures"
	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The package's other tests run the command in process; in a GitHub
// Actions job they would see that job's environment, print annotations into
// the output they read and append to its summary. Only the tests here set
// that environment, and only for what they start.
func init() {
	if os.Getenv("POSTERN_CONFORMANCE_AS_COMMAND") != "1" {
		for _, k := range []string{envGitHubActions, envStepSummary, "GITHUB_OUTPUT"} {
			os.Unsetenv(k)
		}
	}
}

type actionFile struct {
	Inputs  map[string]struct{ Default string } `yaml:"inputs"`
	Outputs map[string]struct{ Value string }   `yaml:"outputs"`
	Runs    struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	If    string            `yaml:"if"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Uses  string            `yaml:"uses"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

func readAction(t *testing.T) actionFile {
	t.Helper()
	raw, err := os.ReadFile("../../action.yml")
	assert.NilError(t, err)
	var a actionFile
	assert.NilError(t, yaml.Unmarshal(raw, &a))
	assert.Equal(t, a.Runs.Using, "composite")
	return a
}

var expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// TestActionShape: no script reads an expression (every input goes through
// env), every input is mapped somewhere, and every output names a step.
func TestActionShape(t *testing.T) {
	a := readAction(t)
	used := map[string]bool{}
	ids := map[string]bool{}
	for _, s := range a.Runs.Steps {
		ids[s.ID] = s.ID != ""
		if s.Uses != "" {
			assert.Check(t, is.Equal(s.Uses, "actions/setup-go@v5"))
			continue
		}
		assert.Check(t, is.Equal(s.Shell, "bash"), s.Name)
		assert.Check(t, !strings.Contains(s.Run, "${{"), "step %q puts an expression in its script", s.Name)
		for _, v := range s.Env {
			for _, m := range expr.FindAllStringSubmatch(v, -1) {
				if name, ok := strings.CutPrefix(m[1], "inputs."); ok {
					used[name] = true
					_, declared := a.Inputs[name]
					assert.Check(t, declared, "env maps undeclared input %q", name)
				}
			}
		}
	}
	for name := range a.Inputs {
		assert.Check(t, used[name], "input %q reaches no step", name)
	}
	for _, name := range []string{"target", "launch", "origin", "execute", "header", "rules", "baseline", "args", "version", "mode", "token", "command", "html"} {
		_, ok := a.Inputs[name]
		assert.Check(t, ok, "input %q missing", name)
	}
	for _, name := range []string{"verdict", "level", "failures", "report-json", "report-junit", "report-html"} {
		o, ok := a.Outputs[name]
		assert.Check(t, ok, "output %q missing", name)
		assert.Check(t, is.Equal(o.Value, "${{ steps.check.outputs."+name+" }}"))
	}
	assert.Check(t, ids["check"] && ids["install"] && ids["go"])
}

// workflow is what a test controls of a run of the action.
type workflow struct {
	inputs    map[string]string
	actionRef string // github.action_ref
}

// actionRun is what a run of the action left.
type actionRun struct {
	dir      string            // the temporary folder: workspace, RUNNER_TEMP, GITHUB_* files
	outputs  map[string]string // the action's outputs
	stdout   map[string]string // each step's, by id
	stderr   map[string]string
	exit     map[string]int // each step's exit status, by id
	summary  string         // $GITHUB_STEP_SUMMARY
	goCalls  string         // the arguments the stand-in go was called with
	failedAt string         // the step whose failure ended the run, or ""
}

// buildCommand builds the command into a temporary folder of t's.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "postern-conformance")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	assert.NilError(t, err, "go build: %s", out)
	return bin
}

// fakeGo stands in for go: `go env GOTOOLCHAIN` answers like a go that
// can fetch a toolchain, and `go install` puts the test's binary in GOBIN.
const fakeGo = `#!/bin/sh
echo "$@" >> "$FAKE_GO_LOG"
case "$1" in
  env) echo auto ;;
  install) cp "$FAKE_GO_BINARY" "$GOBIN/postern-conformance" ;;
  *) echo "fake go: $*" >&2; exit 1 ;;
esac
`

func runAction(t *testing.T, bin string, w workflow) actionRun {
	t.Helper()
	a := readAction(t)
	dir := t.TempDir()
	ws, tmp, fake := filepath.Join(dir, "workspace"), filepath.Join(dir, "runner-temp"), filepath.Join(dir, "fake-bin")
	for _, d := range []string{ws, tmp, fake} {
		assert.NilError(t, os.MkdirAll(d, 0o755))
	}
	assert.NilError(t, os.WriteFile(filepath.Join(fake, "go"), []byte(fakeGo), 0o755))
	for name, content := range w.inputs {
		if strings.HasPrefix(name, "file:") {
			assert.NilError(t, os.WriteFile(filepath.Join(ws, strings.TrimPrefix(name, "file:")), []byte(content), 0o644))
		}
	}
	r := actionRun{dir: dir, outputs: map[string]string{}, stdout: map[string]string{}, stderr: map[string]string{}, exit: map[string]int{}}
	summary, ghEnv, ghPath := filepath.Join(dir, "step-summary.md"), filepath.Join(dir, "github-env"), filepath.Join(dir, "github-path")
	goLog := filepath.Join(dir, "go-calls")
	for _, f := range []string{summary, ghEnv, ghPath, goLog} {
		assert.NilError(t, os.WriteFile(f, nil, 0o644))
	}
	stepOutputs := map[string]map[string]string{}
	eval := func(e string) string {
		switch {
		case strings.HasPrefix(e, "inputs."):
			name := strings.TrimPrefix(e, "inputs.")
			in, ok := a.Inputs[name]
			assert.Assert(t, ok, "undeclared input %q", name)
			if v, set := w.inputs[name]; set {
				return v
			}
			return in.Default
		case e == "github.action_ref":
			return w.actionRef
		case strings.HasPrefix(e, "steps."):
			parts := strings.Split(e, ".")
			assert.Assert(t, len(parts) == 4 && parts[2] == "outputs", "expression %q", e)
			return stepOutputs[parts[1]][parts[3]]
		}
		t.Fatalf("the test does not know the expression %q", e)
		return ""
	}
	subst := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string { return eval(expr.FindStringSubmatch(m)[1]) })
	}
	path := []string{fake}
	extraEnv := map[string]string{}
	for i, s := range a.Runs.Steps {
		if s.Uses != "" {
			// The only action used sets Go up where there is none; the
			// stand-in go is there, so the condition must skip it.
			assert.Equal(t, s.If, "steps.go.outputs.found != 'true'")
			assert.Equal(t, stepOutputs["go"]["found"], "true", "Go was found, so setup-go is skipped")
			continue
		}
		assert.Equal(t, s.If, "", "the test runs every shell step: %q", s.Name)
		id := s.ID
		if id == "" {
			id = fmt.Sprint("step", i)
		}
		outFile := filepath.Join(dir, "output-"+id)
		assert.NilError(t, os.WriteFile(outFile, nil, 0o644))
		script := filepath.Join(dir, "script-"+id+".sh")
		assert.NilError(t, os.WriteFile(script, []byte(s.Run), 0o644))
		env := []string{
			"PATH=" + strings.Join(append(slices.Clone(path), "/usr/local/bin", "/usr/bin", "/bin"), ":"),
			"HOME=" + dir, "TMPDIR=" + tmp,
			"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + ws, "RUNNER_TEMP=" + tmp,
			"GITHUB_OUTPUT=" + outFile, "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_ENV=" + ghEnv, "GITHUB_PATH=" + ghPath,
			"FAKE_GO_LOG=" + goLog, "FAKE_GO_BINARY=" + bin,
		}
		for k, v := range extraEnv {
			env = append(env, k+"="+v)
		}
		for k, v := range s.Env {
			env = append(env, k+"="+subst(v))
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir, cmd.Env = ws, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			assert.NilError(t, err)
		}
		r.stdout[id], r.stderr[id], r.exit[id] = stdout.String(), stderr.String(), code
		stepOutputs[id] = readGitHubFile(t, outFile)
		// What the step added to GITHUB_PATH and GITHUB_ENV holds for the
		// steps after it.
		for _, p := range readLines(t, ghPath) {
			if !slices.Contains(path, p) {
				path = append([]string{p}, path...)
			}
		}
		for k, v := range readGitHubFile(t, ghEnv) {
			extraEnv[k] = v
		}
		if code != 0 {
			r.failedAt = id
			break
		}
	}
	for name, o := range a.Outputs {
		r.outputs[name] = subst(o.Value)
	}
	raw, err := os.ReadFile(summary)
	assert.NilError(t, err)
	r.summary = string(raw)
	raw, err = os.ReadFile(goLog)
	assert.NilError(t, err)
	r.goCalls = string(raw)
	return r
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	raw, err := os.ReadFile(name)
	assert.NilError(t, err)
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// readGitHubFile reads $GITHUB_OUTPUT's (and $GITHUB_ENV's) forms:
// name=value, and name<<DELIMITER, lines, DELIMITER.
func readGitHubFile(t *testing.T, name string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(name)
	assert.NilError(t, err)
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		l := sc.Text()
		if k, delim, ok := strings.Cut(l, "<<"); ok && !strings.Contains(k, "=") {
			var vs []string
			for sc.Scan() && sc.Text() != delim {
				vs = append(vs, sc.Text())
			}
			out[k] = strings.Join(vs, "\n")
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		assert.Assert(t, ok, "%s: line %q", name, l)
		out[k] = v
	}
	return out
}

// commandsIn are the workflow commands GitHub would act on in out: lines
// starting "::" (after blanks), skipping what ::stop-commands:: pauses.
func commandsIn(out string) []string {
	var cmds []string
	paused := ""
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimLeft(l, " \t")
		if !strings.HasPrefix(l, "::") {
			continue
		}
		if paused != "" {
			if l == "::"+paused+"::" {
				paused = ""
			}
			continue
		}
		if tok, ok := strings.CutPrefix(l, "::stop-commands::"); ok {
			paused = tok
			continue
		}
		cmds = append(cmds, l)
	}
	return cmds
}

func TestAction(t *testing.T) {
	// Beside the other slow tests: it mostly waits on go build and bash.
	t.Parallel()
	const secret = "s3cr3t-header-value"
	bin := buildCommand(t)
	t.Run("conformant", func(t *testing.T) {
		r := runAction(t, bin, workflow{actionRef: "v9.9.9", inputs: map[string]string{
			"launch": "postern-conformance serve --port 0",
			"origin": fixtures.AllowedOrigin,
			"header": "X-Postern-Test: " + secret,
			"args":   `--timeout '5' --patience 2`,
		}})
		assert.Equal(t, r.failedAt, "", "stdout %s\nstderr %s", r.stdout["check"], r.stderr["check"])
		assert.Equal(t, r.exit["check"], 0)
		assert.Check(t, is.Equal(r.goCalls, "env GOTOOLCHAIN\ninstall -ldflags -X main.version=v9.9.9 github.com/sigrix-io/postern-conformance/cmd/postern-conformance@v9.9.9\n"))
		assert.Check(t, is.Equal(r.outputs["verdict"], "conformant"))
		assert.Check(t, is.Equal(r.outputs["verdict-text"], "Conformant at Level 3."))
		assert.Check(t, is.Equal(r.outputs["level"], "3"))
		assert.Check(t, is.Equal(r.outputs["failures"], "0"))
		assert.Check(t, is.Equal(r.outputs["exit-code"], "0"))
		checkReports(t, r, "Conformant at Level 3.")
		assert.Check(t, is.Contains(r.summary, "## ✅ Postern conformance: Conformant at Level 3.\n"))
		assert.Check(t, is.Contains(r.summary, "| Section | PASS | FAIL | WARN | SKIP | ERROR | KNOWN |"))
		assert.Check(t, !strings.Contains(r.summary, "<details>"))
		assert.Check(t, is.Len(commandsIn(r.stdout["check"]), 0), "a conformant runner gets no annotation:\n%s", r.stdout["check"])
		assert.Check(t, is.Contains(r.stdout["check"], "Conformant at Level 3."), "the text report is in the log")
		for _, out := range []string{r.stdout["check"], r.stderr["check"], r.summary, readFile(t, r.outputs["report-json"]), readFile(t, r.outputs["report-junit"]), readFile(t, r.outputs["report-html"])} {
			assert.Check(t, !strings.Contains(out, secret), "the header's value leaked")
		}
	})

	t.Run("fault", func(t *testing.T) {
		r := runAction(t, bin, workflow{inputs: map[string]string{
			"launch":                 "postern-conformance serve --port 0 --fault bare-405 --fault describe-other-agent",
			"origin":                 fixtures.AllowedOrigin,
			"baseline":               ".postern-baseline",
			"file:.postern-baseline": "# known, being fixed\n2.2/same-agent-id\n",
			"rules":                  "2.1,\n2.2  3",
			"version":                "v1.2.3",
		}})
		assert.Equal(t, r.failedAt, "check", "the step fails with the command")
		assert.Equal(t, r.exit["check"], 1, "stdout %s\nstderr %s", r.stdout["check"], r.stderr["check"])
		assert.Check(t, is.Contains(r.goCalls, "postern-conformance@v1.2.3\n"), "the version input wins")
		// The outputs are written before the step fails.
		assert.Check(t, is.Equal(r.outputs["verdict"], "nonconformant"))
		assert.Check(t, is.Equal(r.outputs["verdict-text"], "Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)"))
		assert.Check(t, is.Equal(r.outputs["level"], "3"))
		assert.Check(t, is.Equal(r.outputs["failures"], "1"))
		assert.Check(t, is.Equal(r.outputs["exit-code"], "1"))
		checkReports(t, r, "Nonconformant")

		cmds := commandsIn(r.stdout["check"])
		var errs, notices []string
		for _, c := range cmds {
			switch {
			case strings.HasPrefix(c, "::error "):
				errs = append(errs, c)
			case strings.HasPrefix(c, "::notice "):
				notices = append(notices, c)
			default:
				t.Errorf("unexpected command %q", c)
			}
		}
		assert.Check(t, len(errs) >= 1 && len(notices) >= 1, "%q", cmds)
		for _, c := range errs {
			assert.Check(t, strings.HasPrefix(c, "::error title=2.1/wrong-method (§2.1)%3A "), c)
			assert.Check(t, is.Contains(c, "was refused 405 without the error envelope"))
		}
		for _, c := range notices {
			assert.Check(t, strings.HasPrefix(c, "::notice title=2.2/same-agent-id (§2.2)%3A "), c)
			assert.Check(t, is.Contains(c, "::known failure, excused by the baseline: "))
		}

		assert.Check(t, is.Contains(r.summary, "## ❌ Postern conformance: Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)\n"))
		assert.Check(t, is.Contains(r.summary, "<summary><b>FAIL</b> 2.1/wrong-method (§2.1) "))
		assert.Check(t, is.Contains(r.summary, "  < HTTP/1.1 405\n"), "the evidence is in the summary")
		assert.Check(t, is.Contains(r.summary, "### Known failures, excused by the baseline\n\n- `2.2/same-agent-id`"))
		assert.Check(t, !strings.Contains(r.summary, "§4.1"), "the rules input selected 2.1, 2.2 and 3")
		page := readFile(t, r.outputs["report-html"])
		assert.Check(t, is.Contains(page, `data-outcome="FAIL"`), "the page shows the FAIL")
		assert.Check(t, is.Contains(page, `<pre class="curl">curl -sS -i --max-time 10 `), "with its curl line")
	})

	t.Run("no html", func(t *testing.T) {
		r := runAction(t, bin, workflow{inputs: map[string]string{"launch": "postern-conformance serve --port 0", "rules": "2.1", "html": "false"}})
		assert.Equal(t, r.failedAt, "", "stdout %s\nstderr %s", r.stdout["check"], r.stderr["check"])
		assert.Check(t, is.Equal(r.outputs["report-html"], ""), "html false: no page")
		_, err := os.Stat(filepath.Join(r.dir, "runner-temp", "postern-conformance", "report.html"))
		assert.Check(t, os.IsNotExist(err), "no page written")
	})

	t.Run("distributor", func(t *testing.T) {
		srv, err := refdist.Start(refdist.Config{}, 0)
		assert.NilError(t, err)
		defer srv.Close()
		in := srv.Inputs()
		r := runAction(t, bin, workflow{inputs: map[string]string{
			"mode": "distributor", "target": srv.URL, "token": in.Token,
			"args": "--agent " + in.Agent + " --stranger-token " + in.Stranger + " --withdrawn-agent " + in.Withdrawn,
		}})
		assert.Equal(t, r.failedAt, "", "stdout %s\nstderr %s", r.stdout["check"], r.stderr["check"])
		assert.Check(t, is.Equal(r.outputs["verdict"], "conformant"))
		assert.Check(t, is.Contains(r.stdout["check"], "Distributor conformant"))
		for _, out := range []string{r.stdout["check"], r.stderr["check"], r.summary, readFile(t, r.outputs["report-json"])} {
			assert.Check(t, !strings.Contains(out, in.Token), "the token leaked")
		}
	})

	t.Run("client", func(t *testing.T) {
		r := runAction(t, bin, workflow{inputs: map[string]string{
			"mode": "client", "command": bin + " reference-client", "args": "--scenario lone-cr --client-timeout 20",
		}})
		assert.Equal(t, r.failedAt, "", "stdout %s\nstderr %s", r.stdout["check"], r.stderr["check"])
		assert.Check(t, is.Equal(r.outputs["verdict"], "conformant"))
		assert.Check(t, is.Contains(r.stdout["check"], "Client conformant"))
		assert.Check(t, is.Contains(r.summary, "Postern client check"))

		r = runAction(t, bin, workflow{inputs: map[string]string{
			"mode": "client", "command": bin + " reference-client --fault no-lone-cr", "args": "--scenario lone-cr --client-timeout 20",
		}})
		assert.Check(t, is.Equal(r.exit["check"], 1), r.stdout["check"])
		assert.Check(t, is.Equal(r.outputs["verdict"], "nonconformant"))
		assert.Check(t, is.Contains(r.stdout["check"], "::error title=4.3/client-lone-cr"))
	})

	t.Run("latest", func(t *testing.T) {
		r := runAction(t, bin, workflow{inputs: map[string]string{"target": "http://127.0.0.1:1", "args": "--rule 2.1 --timeout 1"}})
		assert.Check(t, is.Contains(r.goCalls, "postern-conformance@latest\n"), "no ref and no version: latest")
		assert.Equal(t, r.exit["check"], 2, "an unreachable runner cannot be checked")
		assert.Check(t, is.Equal(r.outputs["exit-code"], "2"))
		assert.Check(t, is.Equal(r.outputs["verdict"], ""), "no report, no verdict")
	})

	t.Run("bad inputs", func(t *testing.T) {
		for _, in := range []map[string]string{
			{"target": "http://127.0.0.1:1", "launch": "true"},
			{},
			{"target": "http://127.0.0.1:1", "execute": "yes"},
			{"target": "http://127.0.0.1:1", "args": "--rule 'unclosed"},
			{"target": "http://127.0.0.1:1", "rules": "--execute"},
			{"target": "http://127.0.0.1:1", "mode": "runner"},
			{"target": "http://127.0.0.1:1", "mode": "distributor", "execute": "true"},
			{"mode": "client"},
			{"mode": "client", "command": "true", "target": "http://127.0.0.1:1"},
			{"target": "http://127.0.0.1:1", "command": "true"},
			{"target": "http://127.0.0.1:1", "html": "yes"},
		} {
			r := runAction(t, bin, workflow{inputs: in})
			assert.Check(t, is.Equal(r.exit["check"], 2), "%v: %s", in, r.stderr["check"])
			assert.Check(t, is.Equal(r.outputs["exit-code"], "2"), "%v", in)
			assert.Check(t, is.Contains(r.stdout["check"], "::error title=postern-conformance action::"), "%v: %s", in, r.stdout["check"])
		}
	})
}

// checkReports: both report paths are files, and the JSON report says what
// the outputs say.
func checkReports(t *testing.T, r actionRun, verdict string) {
	t.Helper()
	for _, name := range []string{"report-json", "report-junit", "report-html"} {
		p := r.outputs[name]
		assert.Check(t, strings.HasPrefix(p, filepath.Join(r.dir, "runner-temp")+string(filepath.Separator)), "%s is %q, under RUNNER_TEMP", name, p)
		_, err := os.Stat(p)
		assert.Check(t, err, "%s", name)
	}
	var doc struct {
		Format        string `json:"format"`
		DeclaredLevel int    `json:"declared_level"`
		Verdict       struct {
			Text string `json:"text"`
		} `json:"verdict"`
		Counts struct {
			Fail int `json:"fail"`
		} `json:"counts"`
	}
	assert.NilError(t, json.Unmarshal([]byte(readFile(t, r.outputs["report-json"])), &doc))
	assert.Check(t, is.Equal(doc.Format, "postern-conformance/report"))
	assert.Check(t, is.Contains(doc.Verdict.Text, verdict))
	assert.Check(t, is.Equal(fmt.Sprint(doc.DeclaredLevel), r.outputs["level"]))
	assert.Check(t, is.Equal(fmt.Sprint(doc.Counts.Fail), r.outputs["failures"]))
	assert.Check(t, is.Contains(readFile(t, r.outputs["report-junit"]), "<testsuites"))
	assert.Check(t, strings.HasPrefix(readFile(t, r.outputs["report-html"]), "<!doctype html>"))
	assert.Check(t, is.Contains(readFile(t, r.outputs["report-html"]), verdict))
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Errorf("%v", err)
	}
	return string(raw)
}

// runSplit runs the command in process with stdout and stderr apart.
func runSplit(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errw bytes.Buffer
	a := app()
	a.Writer, a.ErrWriter = &out, &errw
	code = exitCode(a.Run(context.Background(), append([]string{"postern-conformance"}, args...)))
	return code, out.String(), errw.String()
}

// TestGitHubFlags: the flags on the check and the walk, the automatic mode
// under GITHUB_ACTIONS, and where the annotations go.
func TestGitHubFlags(t *testing.T) {
	dir := t.TempDir()
	md, outs, summary := filepath.Join(dir, "summary.md"), filepath.Join(dir, "outputs"), filepath.Join(dir, "step-summary")

	// Outside a workflow, --github alone prints the annotations after the
	// text report, whose own lines are paused.
	code, stdout, _ := runSplit(t, nil, "demo", "--fault", "bare-405", "--no-color", "--github", "--markdown", md, "--github-output", outs)
	assert.Equal(t, code, 1)
	cmds := commandsIn(stdout)
	assert.Assert(t, len(cmds) > 0)
	assert.Check(t, strings.HasPrefix(stdout, "::stop-commands::"), "the text report is paused")
	for _, c := range cmds {
		assert.Check(t, strings.HasPrefix(c, "::error title=2.1/wrong-method"), c)
	}
	assert.Check(t, is.Contains(readFile(t, md), "<summary><b>FAIL</b> 2.1/wrong-method"))
	o := readGitHubFile(t, outs)
	assert.Check(t, is.Equal(o["verdict"], "nonconformant"))
	assert.Check(t, is.Equal(o["failures"], "1"))
	assert.Check(t, is.Equal(o["report-json"], ""), "no --json-file, no path")

	// In a workflow it is on by itself: with --json on stdout, the
	// annotations go to stderr, and the summary is appended.
	gha := map[string]string{envGitHubActions: "true", envStepSummary: summary}
	assert.NilError(t, os.WriteFile(summary, []byte("earlier step\n"), 0o644))
	code, stdout, stderr := runSplit(t, gha, "demo", "--fault", "bare-405", "--json")
	assert.Equal(t, code, 1)
	var doc map[string]any
	assert.NilError(t, json.Unmarshal([]byte(stdout), &doc), "stdout is only the JSON report")
	assert.Check(t, len(commandsIn(stderr)) > 0, stderr)
	assert.Check(t, strings.HasPrefix(readFile(t, summary), "earlier step\n## ❌ Postern conformance: "), "appended")

	// --github=false turns it all off.
	assert.NilError(t, os.WriteFile(summary, nil, 0o644))
	_, stdout, stderr = runSplit(t, gha, "demo", "--fault", "bare-405", "--github=false", "--no-color")
	assert.Check(t, is.Len(commandsIn(stdout+stderr), 0))
	assert.Check(t, !strings.Contains(stdout, "::stop-commands::"))
	assert.Check(t, is.Equal(readFile(t, summary), ""))

	// The walk takes the same flags.
	code, stdout, _ = runSplit(t, gha, "demo", "entitlement", "--fault", "ent-never-checked-403", "--rule", "5.7.3/never-checked-unavailable", "--no-color", "--github-output", outs)
	assert.Equal(t, code, 1)
	cmds = commandsIn(stdout)
	assert.Assert(t, is.Len(cmds, 1), stdout)
	assert.Check(t, strings.HasPrefix(cmds[0], "::error title=5.7.3/never-checked-unavailable (§5.7.3)%3A "), cmds[0])
	assert.Check(t, is.Contains(readFile(t, summary), "## ❌ Postern entitlement walk: Entitlement mishandled"))
}
