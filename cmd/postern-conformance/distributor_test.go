package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestDemoDistributorIsConformant(t *testing.T) {
	t.Parallel()
	defer pace.Acquire(0)()
	code, out := run(t, "demo", "distributor", "--stale", "1", "--json", "--deadline", seconds(pace.Budget{Waits: 4 * time.Second, Hooks: 2, Work: 5 * time.Second}.Deadline()))
	assert.Equal(t, code, 0, out)
	var rep struct {
		Counts struct{ Fail, Warn, Pass int }
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, rep.Counts.Fail, 0)
	assert.Equal(t, rep.Counts.Warn, 0, out)
	assert.Check(t, rep.Counts.Pass >= 38, out)

	code, out = run(t, "demo", "distributor", "--fault", "unowned-message", "--rule", "5.5", "--no-color")
	assert.Equal(t, code, 1, out)
	assert.Check(t, is.Contains(out, "5.5/agent-indistinguishable"))
}

// Bad input is one line and exit 2, never a page of FAILs; the token
// never reaches a report.
func TestDistributorBadInput(t *testing.T) {
	srv, err := refdist.Start(refdist.Config{}, 0)
	assert.NilError(t, err)
	defer srv.Close()
	in := srv.Inputs()
	tok := map[string]string{envToken: in.Token}
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{tok, []string{"distributor", "http://127.0.0.1:1", "--agent", in.Agent}, "cannot reach"},
		{tok, []string{"distributor", srv.URL, "--agent", "Fixture/Reference-Agent"}, "--agent \"Fixture/Reference-Agent\" is not an agent identifier"},
		{tok, []string{"distributor", srv.URL, "--agent", in.Agent, "--stranger-token", "x", "--unowned-agent", "a/b_c"}, "--unowned-agent"},
		{map[string]string{envToken: "not-the-token"}, []string{"distributor", srv.URL, "--agent", in.Agent}, "either --token is not the test buyer's token"},
		{tok, []string{"distributor", srv.URL, "--agent", in.Unowned}, "not 200 active"},
		{tok, []string{"distributor", srv.URL, "--agent", in.Agent, "--revoke", "echo no refund for you >&2; exit 3", "--restore", "true"}, "no refund for you"},
		{tok, []string{"distributor", srv.URL, "--agent", in.Agent, "--revoke", "true"}, "--revoke and --restore go together"},
		{map[string]string{envToken: ""}, []string{"distributor", srv.URL, "--agent", in.Agent}, "no token"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		code, msg := runMsg(t, c.args...)
		assert.Check(t, is.Equal(code, 2), "%v: %s", c.args, msg)
		assert.Check(t, is.Contains(msg, c.want), "%v", c.args)
		assert.Check(t, !strings.Contains(strings.TrimSpace(msg), "\n"), "one line: %q", msg)
	}
	t.Setenv(envToken, in.Token)
	code, out := runMsg(t, "distributor", srv.URL, "--agent", in.Agent, "--stranger-token", in.Stranger, "--rotated-token", in.Rotated, "--json", "--verbose")
	assert.Equal(t, code, 0, out)
	for _, secret := range []string{in.Token, in.Stranger, in.Rotated} {
		assert.Check(t, !strings.Contains(out, secret), "a token reached the report")
	}
}
