package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
)

// POSTERN_CONFORMANCE_SCENARIO is for logs only: with every scenario told
// it is another one, the reference client comes to the same outcome on
// every rule (it never reads the variable, and no verdict depends on it).
func TestScenarioNameIsForLogsOnly(t *testing.T) {
	names := scripted.Names()
	lie := client.Func(func(ctx context.Context, env map[string]string, out, errs io.Writer) int {
		for i, n := range names {
			if env[client.VarScenario] == n {
				env[client.VarScenario] = names[(i+7)%len(names)]
				break
			}
		}
		return refclient.Main(ctx, env, out, errs)
	})
	got := check(t, lie)
	for id, res := range baseline(t) {
		if got[id].Outcome != res.Outcome {
			t.Errorf("%s: %s with the scenario's name swapped, %s without: %s", id, got[id].Outcome, res.Outcome, describe(got[id]))
		}
	}
}

// Bad input is an error, never a page of FAILs: a command that cannot
// start, an adapter that fails the plain scenario, a client that hangs on
// it. Each error is one line naming what went wrong.
func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		command, want string
	}{
		{"no-such-client-7f3a9c", "sh found no such command (exit 127)"},
		{"/", "could not execute it (exit 126"},
		{"true", "failed the plain scenario"},
		{"echo 'not the output'", `printed "not the output\n"`},
		{"exit 3", "exited 3"},
		{"sleep 30", "had not finished after --client-timeout (5s)"},
	} {
		start := time.Now()
		// 5 s: sh starting `true` on a loaded machine is no hang.
		_, _, err := client.Check(context.Background(), client.Options{Command: c.command, ClientTimeout: 5 * time.Second})
		switch {
		case err == nil:
			t.Errorf("%q: checked, with no error", c.command)
		case !errors.Is(err, client.ErrBadInput):
			t.Errorf("%q: %v, not bad input", c.command, err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%q: %q does not say %q", c.command, err, c.want)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: more than one line: %q", c.command, err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%q: took %s", c.command, took)
		}
	}
	_, _, err := client.Check(context.Background(), client.Options{})
	if !errors.Is(err, client.ErrBadInput) {
		t.Errorf("no command: %v", err)
	}
	_, _, err = client.Check(context.Background(), client.Options{Command: "true", Scenarios: []string{"no-such-scenario"}})
	if err == nil || !strings.Contains(err.Error(), scripted.LoneCR) {
		t.Errorf("a scenario that does not exist: %v", err)
	}
}

// A client whose request the runner refuses for what it says is checked,
// not turned away as a broken adapter: the request rules judge it, and the
// rest step aside rather than fail one by one.
func TestRefusedRequestIsJudged(t *testing.T) {
	got := check(t, reference("text-plain-body"))
	if r := got["2/client-json-body"]; r.Outcome != engine.Fail {
		t.Errorf("%s", describe(r))
	}
	for id, r := range got {
		if id != "2/client-json-body" && r.Outcome == engine.Fail {
			t.Errorf("a page of FAILs: %s", describe(r))
		}
	}
}

// --scenario runs the scenarios named, the plain ones beside them; the
// rules of the others SKIP, needing the option.
func TestScenarioSelection(t *testing.T) {
	env, results, err := client.Check(context.Background(), client.Options{Runner: reference(), ClientTimeout: proofTimeout, Scenarios: []string{scripted.LoneCR}})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, tr := range env.Trials() {
		ran = append(ran, tr.Scenario.Name)
	}
	if want := []string{scripted.PlainRun, scripted.PlainStream, scripted.LoneCR}; strings.Join(ran, " ") != strings.Join(want, " ") {
		t.Errorf("ran %v, want %v", ran, want)
	}
	for _, r := range results {
		obs := client.Observes(r.Rule.ID)
		switch {
		case obs == nil || strings.Contains(strings.Join(obs, " "), scripted.LoneCR) || strings.Contains(strings.Join(obs, " "), "plain"):
			if r.Outcome != engine.Pass {
				t.Errorf("%s", describe(r))
			}
		case r.Outcome != engine.Skip || r.Kind != engine.NeedsOption:
			t.Errorf("%s: %s (%s), want a SKIP needing --scenario", r.Rule.ID, r.Outcome, r.Kind)
		}
	}
}

// A client that hangs where no answer was withheld FAILs the scenario's
// rules, killed at its deadline; the check stays within that deadline.
func TestHangFails(t *testing.T) {
	hang := client.Func(func(ctx context.Context, env map[string]string, out, errs io.Writer) int {
		if env[client.VarURL] != "" && strings.Contains(env[client.VarScenario], "lone-cr") {
			<-ctx.Done()
			return 1
		}
		return refclient.Main(ctx, env, out, errs)
	})
	start := time.Now()
	_, results, err := client.Check(context.Background(), client.Options{Runner: hang, ClientTimeout: 3 * time.Second, Scenarios: []string{scripted.LoneCR}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Rule.ID == "4.3/client-lone-cr" && (r.Outcome != engine.Fail || !strings.Contains(r.Findings[0].Message, "had not finished")) {
			t.Errorf("%s", describe(r))
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s", took)
	}
}
