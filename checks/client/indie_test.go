package client_test

// The independent clients of cmd/postern-conformance/testdata/clients (a
// Node.js and a Python client, written from SPEC by someone who had not
// read the checker, each with switches for mistakes real clients make;
// their README lists them) run as commands through the check, each
// outcome read from the JSON report the command writes, rule by rule and
// so scenario by scenario: every default client comes out clean in every
// scenario, and each switch is caught by the rules it breaks (a MUST
// FAILs, and the command would exit 1; a SHOULD WARNs, and it would exit
// 0), every other rule of the scenarios it runs PASSing.
//
// It lives here rather than beside the command so that the command's
// package, already long with the independent runners and distributor,
// keeps within go test's deadline on a loaded machine.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
)

// indieClient is one switch of one independent client, and what the check
// must make of it.
type indieClient struct {
	client, fault string
	// fail and warn are the rules the switch breaks; the check runs the
	// scenarios they are observed in (every scenario for a default client).
	fail, warn []string
	// also are scenarios run besides: the plain one, where a request rule
	// is broken.
	also []string
	// timeout is --client-timeout in seconds (a switch that hangs is killed
	// at it).
	timeout int
}

var indieClients = []indieClient{
	{client: "node"},
	{client: "node", fault: "line-events", fail: []string{"4.3/client-multiline-data"}},
	{client: "node", fault: "need-space", fail: []string{"4.3/client-no-space"}},
	{client: "node", fault: "abort-unknown-event", fail: []string{"4.3/client-unknown-event"}},
	{client: "node", fault: "print-deltas", warn: []string{"4.3/client-prefers-done"}},
	{client: "node", fault: "any-as-text", fail: []string{"4.1.4/client-unknown-type-not-text", "4.1.4/client-bytes-not-text"}},
	{client: "node", fault: "strict-decode", fail: []string{"4.1.1/client-unknown-validation", "2.1/client-error-sibling"}},
	{client: "node", fault: "code-switch", fail: []string{"2.1/client-unknown-code"}},
	{client: "node", fault: "level-from-describe", fail: []string{"3/client-level-from-status"}},
	{client: "node", fault: "retry-503", fail: []string{"4.5/client-ready-for-503"}, timeout: 15},
	{client: "node", fault: "text-plain", fail: []string{"2/client-json-body"}, also: []string{"plain"}},
	{client: "node", fault: "reconnect", fail: []string{"4.3/client-retry-ignored"}},

	{client: "python"},
	{client: "python", fault: "lf-only", fail: []string{"4.3/client-crlf", "4.3/client-lone-cr"}},
	{client: "python", fault: "last-data-line", fail: []string{"4.3/client-multiline-data"}},
	{client: "python", fault: "reject-started-latency", fail: []string{"4.3/client-started-latency"}},
	{client: "python", fault: "unknown-output-fails", fail: []string{"4.1.4/client-unknown-type-not-failed"}},
	{client: "python", fault: "bytes-case", fail: []string{"4.1.4/client-media-type-case"}},
	{client: "python", fault: "unknown-input-fail", fail: []string{"4.1.1/client-unknown-input-type"}},
	{client: "python", fault: "error-sibling-strict", fail: []string{"2.1/client-error-sibling"}},
	{client: "python", fault: "unknown-code-crash", fail: []string{"2.1/client-unknown-code"}, warn: []string{"2.1/client-shows-message"}},
	{client: "python", fault: "assume-level", fail: []string{"3/client-level-from-status"}},
	{client: "python", fault: "fold-keys", fail: []string{"4.2/client-inputs"}, also: []string{"input-keys"}},
	{client: "python", fault: "form-encoded", fail: []string{"2/client-json-body"}, also: []string{"plain"}},
	{client: "python", fault: "trust-credentials", warn: []string{"7/client-refuses-credential-value"}},
}

// indieCommand is the command line of an independent client: node, or the
// Python interpreter itself (pyenv's shim costs a second a start). Where
// the tool is missing the test skips, naming Debian's package; under
// CI=true it fails.
func indieCommand(t *testing.T, which string) string {
	t.Helper()
	dir, err := filepath.Abs("../../cmd/postern-conformance/testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	tool, pkg, script := "node", "nodejs", "nodeclient.mjs"
	if which == "python" {
		tool, pkg, script = "python3", "python3", "pyclient.py"
	}
	if _, err := exec.LookPath(tool); err != nil {
		why := fmt.Sprintf("%s is not installed (Debian's package %s)", tool, pkg)
		if os.Getenv("CI") == "true" {
			t.Fatal(why + "; CI=true, so this fails rather than skips")
		}
		t.Skip(why)
	}
	if which == "python" {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		tool = strings.TrimSpace(string(out))
	}
	return quote(tool) + " " + quote(filepath.Join(dir, script))
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// clientChecked is one check of a client, as its JSON report reads.
type clientChecked struct {
	code     int
	outcomes map[string]string // rule ID → PASS, FAIL, WARN, SKIP:<kind>
	verdict  string
}

// checkClient checks the command line as `postern-conformance client` does
// and reads the JSON report the command would write. It reports through
// its error, never a testing.T, so it may run on any goroutine.
func checkClient(o client.Options) (clientChecked, error) {
	c := clientChecked{outcomes: map[string]string{}}
	started := time.Now()
	_, results, err := client.Check(context.Background(), o)
	if err != nil {
		return c, err
	}
	recs := engine.Records(results)
	rep := report.New(report.Header{Mode: client.Mode, Target: client.Target(o)}, recs, client.Decide(recs, nil), nil,
		report.Run{Started: started, Elapsed: time.Since(started)})
	c.code, _ = rep.Exit(report.Strictness{})
	var doc bytes.Buffer
	if err := report.WriteJSON(&doc, rep); err != nil {
		return c, err
	}
	var js struct {
		Results []struct {
			ID, Outcome string
			Skip        *string
		}
		Verdict struct{ Text string }
	}
	if err := json.Unmarshal(doc.Bytes(), &js); err != nil {
		return c, err
	}
	for _, r := range js.Results {
		o := r.Outcome
		if o == "SKIP" && r.Skip != nil {
			o += ":" + *r.Skip
		}
		c.outcomes[r.ID] = o
	}
	c.verdict = js.Verdict.Text
	return c, nil
}

// scenarios is what a switch's check runs: the scenarios its broken rules
// are observed in, and those it adds; none (every one) for a default client.
func (c indieClient) scenarios() []string {
	var out []string
	for _, id := range append(append([]string{}, c.fail...), c.warn...) {
		out = append(out, client.Observes(id)...)
	}
	out = append(out, c.also...)
	sort.Strings(out)
	return slices.Compact(out)
}

// ran says how much of what rule id observes was run: "all" (every
// scenario where none was named, and always for a rule over every
// request), "some" or "none". Beside the scenarios named, plain always
// runs, and plain-stream beside a stream scenario.
func ran(id string, scenarios []string) string {
	obs := client.Observes(id)
	if len(scenarios) == 0 || obs == nil {
		return "all"
	}
	run := append([]string{"plain"}, scenarios...)
	for _, s := range scenarios {
		if sc, _ := scripted.Lookup(s); sc.Verb == "stream" {
			run = append(run, "plain-stream")
		}
	}
	n := 0
	for _, s := range obs {
		if slices.Contains(run, s) {
			n++
		}
	}
	switch n {
	case len(obs):
		return "all"
	case 0:
		return "none"
	}
	return "some"
}

// judge lists what is wrong with got for c.
func (c indieClient) judge(got clientChecked, scenarios []string) []string {
	var probs []string
	want := map[string]string{}
	for _, id := range c.fail {
		want[id] = "FAIL"
	}
	for _, id := range c.warn {
		want[id] = "WARN"
	}
	for _, r := range client.All() {
		o, ok := got.outcomes[r.ID]
		w := want[r.ID]
		switch {
		case !ok:
			probs = append(probs, r.ID+": no result")
		case w != "" && o != w:
			probs = append(probs, fmt.Sprintf("%s: %s, want %s (scenarios %v)", r.ID, o, w, client.Observes(r.ID)))
		case w != "":
		case ran(r.ID, scenarios) == "none" && o != "SKIP:needs-option":
			probs = append(probs, fmt.Sprintf("%s: %s, want SKIP:needs-option (its scenarios %v were not run)", r.ID, o, client.Observes(r.ID)))
		case ran(r.ID, scenarios) == "all" && o != "PASS":
			probs = append(probs, fmt.Sprintf("%s: %s, want PASS (scenarios %v)", r.ID, o, client.Observes(r.ID)))
		case o == "FAIL" || o == "WARN": // some of its scenarios ran: it may pass or step aside
			probs = append(probs, fmt.Sprintf("%s: %s, where only %s breaks (scenarios %v)", r.ID, o, strings.Join(append(c.fail, c.warn...), ", "), client.Observes(r.ID)))
		}
	}
	wantCode := 0
	if len(c.fail) > 0 {
		wantCode = 1
	}
	if got.code != wantCode {
		probs = append(probs, fmt.Sprintf("exit %d, want %d (%s)", got.code, wantCode, got.verdict))
	}
	return probs
}

func TestIndependentClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two clients in every scenario, and once per switch")
	}
	cmds := map[string]string{"node": indieCommand(t, "node"), "python": indieCommand(t, "python")}
	// A check runs up to client.DefaultParallel() clients at once itself;
	// as many checks as cores run side by side.
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	for _, c := range indieClients {
		name := c.client + "/default"
		if c.fault != "" {
			name = c.client + "/" + c.fault
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			line := cmds[c.client]
			if c.fault != "" {
				line = "CLIENT_FAULT=" + c.fault + " " + line
			}
			timeout := c.timeout
			if timeout == 0 {
				timeout = 30
			}
			sc := c.scenarios()
			got, err := checkClient(client.Options{Command: line, Scenarios: sc, ClientTimeout: time.Duration(timeout) * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range c.judge(got, sc) {
				t.Error(p)
			}
			if t.Failed() {
				t.Logf("outcomes: %v", got.outcomes)
			}
		})
	}
}
