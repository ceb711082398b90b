package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/fixtures"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestHTMLEveryMode: --html writes the page in every mode (its rendering
// is report/html's to test, and checks/browser's to look at): a check, a
// fleet, a walk, a distributor check and a client check, each with the
// verdict the run reached; a walk's page and a distributor check's carry their timelines.
func TestHTMLEveryMode(t *testing.T) {
	dir := t.TempDir()
	page := func(name string) string {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		assert.NilError(t, err)
		return string(raw)
	}
	good, bad := refRunner(t), refRunner(t, "bare-405")
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		holds []string
	}{
		{"check.html", []string{bad, "--origin", fixtures.AllowedOrigin, "--rule", "2.1"}, 1,
			[]string{"Nonconformant at declared Level 3: 1 MUST rule broken.", `data-outcome="FAIL"`, `<pre class="curl">curl -sS -i --max-time 10 `}},
		{"fleet.html", []string{good, bad, "--rule", "2.1"}, 1,
			[]string{"Postern conformance · a fleet of 2 runners", `<section class="runner" id="runner-2">`, `<td class="cell fail"><a href="#r2-s-2.1"`}},
		{"walk.html", []string{"demo", "entitlement", "--fault", "ent-revoked-final", "--rule", "5.4/revoked-re-checked", "--window", "1", "--grace", "1"}, 1,
			[]string{"Entitlement mishandled", `<figure class="timeline">`, "window of check 1 ends", `class="judged"`}},
		{"distributor.html", []string{"demo", "distributor", "--rule", "5.3/answer-schema"}, 0,
			[]string{"Postern distributor check", `data-outcome="PASS"`}},
		{"client.html", []string{"demo", "client", "--fault", "text-plain-body", "--scenario", "plain"}, 1,
			[]string{"Client nonconformant", `data-outcome="FAIL"`, "No curl line reproduces it: the client under test sent this request"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.args[0] == "demo" && c.args[1] == "client" {
				asCommand(t) // demo client runs this binary as the reference client
			}
			code, out := runMsg(t, append(c.args, "--no-color", "--html", filepath.Join(dir, c.name))...)
			assert.Check(t, is.Equal(code, c.code), out)
			p := page(c.name)
			assert.Check(t, strings.HasPrefix(p, "<!doctype html>"))
			for _, want := range c.holds {
				assert.Check(t, strings.Contains(p, want), "%s does not hold %q", c.name, want)
			}
		})
	}
	code, out := runMsg(t, good, "--rule", "2.1", "--html", filepath.Join(dir, "no", "such", "dir.html"))
	assert.Check(t, is.Equal(code, 2))
	assert.Check(t, is.Contains(out, "--html: cannot write the report"), out)
}
