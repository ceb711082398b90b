package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
)

// indieCase is one configuration of testdata/pydistributor.py, a distributor
// written from SPEC alone before the distributor check was read, checked
// through `distributor --launch` with its test buyer and hooks.
type indieCase struct {
	name      string
	provision []string          // faults given to provision (the token styles)
	serve     []string          // serve's flags, after --state
	check     []string          // the checker's extra flags
	want      int               // the exit status
	caught    map[string]string // rule → outcome: exactly the rules that FAIL or WARN, and any SKIP asserted ("SKIP undecided")
	may       map[string]bool   // rules whose FAIL hangs on timing the mistake makes honest both ways
	timed     bool              // give the hooks (always given to a case that must check clean)
	token     string            // the input given as --token (default TOKEN, the buyer's)
}

// indieCases: the conformant configurations and the behaviours SPEC admits
// both ways exit 0 with nothing FAILed or WARNed; each planted mistake is
// caught by its rule (a FAIL where a MUST or the wire contract binds it, a
// WARN where only a SHOULD or an inference does), and where one mistake
// honestly breaks several rules, each is named.
func indieCases() []indieCase {
	fault := func(f string) []string { return []string{"--window", "1", "--fault", f} }
	fail := func(ids ...string) map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = "FAIL"
		}
		return m
	}
	warn := func(id string) map[string]string { return map[string]string{id: "WARN"} }
	rate := []string{"--rate-limit"}
	cases := []indieCase{
		{name: "clean", serve: []string{"--window", "1"}, check: rate},
		{name: "sigrix", serve: []string{"--profile", "sigrix", "--cache-ttl", "1"}, check: []string{"--profile", "sigrix", "--rate-limit"}},
		{name: "declared-above-cache", serve: []string{"--window", "5", "--cache-ttl", "1"}},
		{name: "no-cache-window-0", serve: []string{"--window", "0", "--fault", "fresh-reads"}},
		// A code §2.1's table lacks, on a status it lacks: only the schema
		// closes the set of codes, so this warns, inferred.
		{name: "rate-429", serve: fault("rate-429"), check: rate, caught: warn("2.1/distributor-codes")},
		// Planted mistakes.
		// A stranger, a dead token or none asking for the withdrawn agent
		// goes down the same branch as for any other: its rule names it too.
		{name: "forbidden-unowned", serve: fault("forbidden-unowned"), want: 1,
			caught: fail("5.5/check-not-entitled-404", "5.5/bundle-not-entitled-404", "2.1/distributor-codes", "5.5/withdrawn-indistinguishable")},
		{name: "unauthorized-token", serve: fault("unauthorized-token"), want: 1,
			caught: fail("5.5/dead-token-404", "2.1/distributor-codes", "7/rotated-token-dead", "5.5/withdrawn-indistinguishable")},
		{name: "dead-token-message", serve: fault("dead-token-message"), want: 1, caught: fail("5.5/token-indistinguishable", "5.5/withdrawn-indistinguishable")},
		{name: "decode-slash", serve: fault("decode-slash"), want: 1, caught: fail("5.3.1/encoded-slash", "5.3.1/encoded-octet")},
		{name: "fold-case", serve: fault("fold-case"), want: 1, caught: fail("5.3.1/bad-id-not-corrected")},
		{name: "session-cookie", serve: fault("session-cookie"), want: 1, caught: fail("5.3/no-widening")},
		{name: "ratelimit-buyers", serve: fault("ratelimit-buyers"), want: 1, caught: fail("5.5/token-indistinguishable", "5.5/withdrawn-indistinguishable")},
		{name: "query-token", serve: fault("query-token"), want: 1, caught: fail("5.3/no-widening")},
		// The token's one cache entry lives thirty seconds, so the answer it
		// holds is the first one read (the buyer's --agent, active) for the
		// whole of the untimed rules however loaded the machine; with a
		// window of 1 s it lapsed between them under load and the other
		// agents' own answers came through. Which answer it holds once the
		// hooks have run hangs on timing: --revoked-agent's revoked
		// answer, with no date, may be the one --withdrawn-agent is given.
		{name: "cache-key-token", timed: true, serve: []string{"--window", "30", "--fault", "cache-key-token"}, want: 1,
			caught: fail("5.3/agent-id-echo", "5.5/check-not-entitled-404", "5.5/bundle-not-entitled-404"),
			may:    map[string]bool{"5.3/access-ended-revoked": true}},
		// A cache of thirty seconds (the declared window), so that the
		// answer cached before --revoke is still cached when the hook
		// returns, with tens of seconds to spare, however long the run's
		// other rules and the hook take on a loaded machine (-race too):
		// the stamps of the replies after it then fall seconds after it.
		{name: "stamp-at-reply", timed: true, serve: []string{"--window", "30", "--fault", "stamp-at-reply"}, want: 1, caught: fail("5.3/checked-at-read-time")},
		// Declaring 0 (every answer fresh) over a cache of five seconds: any
		// answer the cache serves is past the window by what its Date
		// headers place to the millisecond, with seconds to spare, on a
		// quiet machine as on a loaded one (a window of 1 s is missed
		// where the run's reads all come within a second of the first).
		// The revocation and the restore usually show too late as well.
		{name: "understate-stale", timed: true, serve: []string{"--window", "0", "--fault", "understate-stale"}, want: 1, caught: fail("5.4/window-honest"),
			may: map[string]bool{"5.4/revocation-observed": true, "5.4/restore-observed": true}},
		{name: "refund-kept", timed: true, serve: fault("refund-kept"), want: 1, caught: fail("5.4/revocation-observed")},
		{name: "restore-lost", timed: true, serve: fault("restore-lost"), want: 1, caught: fail("5.4/restore-observed")},
		{name: "sibling-in-envelope", serve: fault("sibling-in-envelope"), want: 1, caught: fail("2.1/distributor-envelope")},
		{name: "plain-404", serve: fault("plain-404"), want: 1, caught: fail("2.1/distributor-envelope")},
		{name: "no-repr-digest", serve: fault("no-repr-digest"), caught: warn("5.6/repr-digest")},
		// A digest carried is a claim about the bundle (§5.6 names RFC
		// 9530's field): a wrong one fails, where a missing one only warns.
		{name: "stale-repr-digest", serve: fault("stale-repr-digest"), want: 1, caught: fail("5.6/repr-digest-matches")},
		{name: "withdrawn-no-date", serve: fault("withdrawn-no-date"), caught: warn("5.6/withdrawn-date")},
		{name: "withdrawn-other-date", serve: fault("withdrawn-other-date"), want: 1, caught: fail("5.6/withdrawn-same-date")},
		{name: "token-in-bundle", serve: fault("token-in-bundle"), caught: warn("7/token-never-echoed")},
		{name: "jwt-tokens", provision: []string{"jwt-tokens"}, serve: fault("jwt-tokens"), want: 1, caught: fail("5.2/token-opaque")},
		{name: "short-tokens", provision: []string{"short-tokens"}, serve: fault("short-tokens"), caught: warn("5.2/token-entropy")},
		{name: "rotation-grace", serve: fault("rotation-grace"), want: 1, caught: fail("7/rotated-token-dead")},
		// The one helper writes every stamp, the 410's date too.
		{name: "naive-stamp", serve: fault("naive-stamp"), want: 1,
			caught: map[string]string{"5.3/checked-at-rfc3339": "FAIL", "5.6/withdrawn-date": "WARN"}},
		{name: "no-grace-field", serve: fault("no-grace-field"), want: 1, caught: fail("5.3/answer-schema")},
		{name: "ended-404", serve: fault("ended-404"), caught: warn("5.3/access-ended-revoked")},
		{name: "auth-first", serve: fault("auth-first"), want: 1, caught: fail("5.3.1/bad-id-400")},
		{name: "bad-id-404", serve: fault("bad-id-404"), want: 1, caught: fail("5.3.1/bad-id-400")},
		{name: "greedy-route", serve: fault("greedy-route"), caught: warn("5.3.1/segment-count")},
		{name: "octet-stream", serve: fault("octet-stream"), want: 1, caught: fail("5.6/bundle-media-type")},
		{name: "nested-zip", serve: fault("nested-zip"), want: 1, caught: fail("6/plugin-json-root")},
		// The buyer's bundle is never answered (the connection drops, and
		// drops again when asked once more, while the check answers): §5.6's
		// 200 is broken, and the rules reading the bundle are undecided,
		// not passed.
		{name: "bundle-crash", serve: fault("bundle-crash"), want: 1, caught: map[string]string{
			"5.6/bundle-media-type": "FAIL", "5.6/repr-digest": "SKIP undecided", "5.6/repr-digest-matches": "SKIP undecided",
			"6/plugin-json-root": "SKIP undecided", "6/plugin-schema": "SKIP undecided", "6/extensions-namespace": "SKIP undecided"}},
		{name: "no-rate-limit", serve: fault("no-rate-limit"), check: rate, caught: warn("5.6/rate-limited")},
		{name: "sigrix-window-300", serve: []string{"--profile", "sigrix", "--window", "300", "--cache-ttl", "1"},
			check: []string{"--profile", "sigrix"}, want: 1, caught: fail("8/declared-bounds")},
		// A withdrawal, whichever way its tail runs: the check active with
		// the date through a tail that serves the bundle (§8), or one whose
		// bundle is already 410 with the same date (§5.3, §5.6).
		{name: "tail", provision: []string{"tail"}, serve: []string{"--window", "1"}},
		{name: "tail-410", provision: []string{"tail"}, serve: fault("tail-410")},
		{name: "tail-bundle-404", provision: []string{"tail"}, serve: fault("tail-bundle-404"), want: 1, caught: fail("5.6/withdrawn-tail-not-404")},
		{name: "ended-bundle-served", serve: fault("ended-bundle-served"), want: 1, caught: fail("5.6/withdrawn-410")},
		{name: "gone-to-anyone", serve: fault("gone-to-anyone"), want: 1, caught: fail("5.5/withdrawn-indistinguishable")},
		// The CDN's header on a miss of the catalogue: every other 404 is
		// told apart from it.
		{name: "cache-missing-listing", serve: fault("cache-missing-listing"), want: 1,
			caught: fail("5.5/token-indistinguishable", "5.5/agent-indistinguishable", "5.5/withdrawn-indistinguishable")},
		{name: "bad-id-hint", serve: fault("bad-id-hint"), want: 1, caught: fail("5.3.1/bad-id-invariant")},
		{name: "token-in-check", serve: fault("token-in-check"), caught: warn("7/token-never-echoed")},
		{name: "all-flag", serve: fault("all-flag"), want: 1, caught: fail("5.3/no-widening")},
		{name: "ratelimit-one-bucket", serve: fault("ratelimit-one-bucket"), check: rate, caught: warn("5.6/rate-limit-both-buckets")},
	}
	// Both ways: what SPEC admits either way must not fail.
	for _, f := range []string{"reversal-as-404", "seconds-stamp", "fresh-reads", "detail-absent", "echo-bad-id", "grace-zero",
		"request-ids", "offset-stamp", "clock-ahead", "clock-behind", "plain-manifest", "extra-members", "ratelimit-headers", "bare-json-type",
		"close-connections", "upper-charset"} {
		cases = append(cases, indieCase{name: f, serve: fault(f)})
	}
	return cases
}

// indieScript is the command that runs the distributor's script (its
// interpreter's path and the script's, shell-quoted: needPython), and lets
// the test run beside the others. Under CI a missing python3 fails the
// test, so a CI run without it cannot look green.
func indieScript(t *testing.T) string {
	t.Helper()
	py := needPython(t)
	t.Parallel()
	script, err := filepath.Abs("testdata/pydistributor.py")
	if err != nil {
		t.Fatal(err)
	}
	return py + " " + shellQuote(script)
}

// provisionIndie creates the distributor's ledger in dir and returns the
// inputs it printed (TOKEN, AGENT, …).
func provisionIndie(ctx context.Context, script, dir string, faults []string) (map[string]string, error) {
	line := "exec " + script + " provision --state " + shellQuote(dir)
	for _, f := range faults {
		line += " --fault " + shellQuote(f)
	}
	out, err := exec.CommandContext(ctx, "sh", "-c", line).Output()
	if err != nil {
		return nil, fmt.Errorf("provision: %v", err)
	}
	in := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			in[k] = v
		}
	}
	return in, nil
}

// indieBudget is what a configuration waits for, as the check's own
// deadline and the case's: its provisioning and launch, its declared
// window (or its cache's life, where longer) watched out twice with the
// hooks, the hooks themselves, the burst of --rate-limit, and the check's
// own work.
func indieBudget(c indieCase) (check, whole time.Duration) {
	flag := func(name string, def float64) time.Duration {
		if i := slices.Index(c.serve, name); i >= 0 && i+1 < len(c.serve) {
			if v, err := strconv.ParseFloat(c.serve[i+1], 64); err == nil {
				def = v
			}
		}
		return time.Duration(def * float64(time.Second))
	}
	window := flag("--window", 60)
	life := flag("--cache-ttl", window.Seconds())
	if slices.Contains(c.serve, "understate-stale") {
		life = 5 * max(window, time.Second)
	}
	b := pace.Budget{Work: 5 * time.Second}
	if hooked(c) {
		b.Waits, b.Hooks = 2*(max(window, life)+time.Second), 2
	}
	if slices.Contains(c.check, "--rate-limit") {
		b.Work += 5 * time.Second
	}
	check = b.Deadline()
	return check, check + pace.Budget{Launches: 1, Hooks: 1}.Deadline() + 10*time.Second
}

// hooked: the hooks (and so the timed rules) are given to the
// configurations that must check clean and to the timed mistakes.
func hooked(c indieCase) bool { return c.timed || len(c.caught) == 0 }

// checkIndie provisions and launches one configuration and runs the check
// in process, within pc's deadline and checkDeadline (--deadline); an
// error is a step that failed.
func checkIndie(pc *pace.Case, script, dir string, c indieCase, hooks [2]string, checkDeadline time.Duration) (reported, error) {
	pc.Step("provision")
	in, err := provisionIndie(pc.Ctx, script, dir, c.provision)
	if err != nil {
		return reported{}, err
	}
	py := "exec " + script
	state := " --state " + shellQuote(dir)
	hook := func(action, agent string) string {
		if agent == "" {
			agent = in["AGENT"]
		}
		return py + " admin" + state + " " + action + " " + agent
	}
	args := []string{"distributor",
		"--launch", py + " serve" + state + " " + strings.Join(c.serve, " "),
		"--launch-timeout", seconds(pace.Launch), "--deadline", seconds(checkDeadline),
		"--token", in[cmp.Or(c.token, "TOKEN")], "--agent", in["AGENT"],
		"--stranger-token", in["STRANGER_TOKEN"], "--rotated-token", in["ROTATED_TOKEN"],
		"--revoked-agent", in["REVOKED_AGENT"], "--withdrawn-agent", in["WITHDRAWN_AGENT"], "--unowned-agent", in["UNOWNED_AGENT"],
		"--no-color"}
	if hooked(c) {
		args = append(args, "--revoke", hook("revoke", hooks[0]), "--restore", hook("restore", hooks[1]))
	}
	args = append(args, c.check...)
	pc.Step("launch and check")
	return runReport(pc.Ctx, args...), nil
}

// TestLaunchAnIndependentDistributor checks testdata/pydistributor.py,
// written from SPEC §1.5, §2.1, §5.2–§5.7, §6, §7 and §8 in Python's
// standard library before the distributor check was read, in each of its
// configurations: every conformant one and every behaviour SPEC admits both
// ways clean, every planted mistake caught by its rule and nothing else
// changing. The hooks (and so the timed rules) are given to every
// configuration that must check clean and to the mistakes of the life of a
// purchase; elsewhere they would only add their wait. The configurations
// run side by side (each mostly waits on its distributor's declared
// window), as many at once as the machine carries (pace.Cases), each
// within a deadline of its own (indieBudget) that starts when it does.
func TestLaunchAnIndependentDistributor(t *testing.T) {
	script := indieScript(t)
	cases := indieCases()
	// The timed ones start first: they wait longest.
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].timed && !cases[j].timed })
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	problems := make([][]string, len(cases))
	took := make([]time.Duration, len(cases))
	// Each configuration launches its distributor, and runs Python hooks
	// beside it.
	pace.Cases(t, names, 2, func(i int) {
		c := cases[i]
		check, whole := indieBudget(c)
		pc, cancel := pace.Begin(context.Background(), whole)
		defer cancel()
		start := time.Now()
		got, err := checkIndie(pc, script, t.TempDir(), c, [2]string{}, check)
		took[i] = time.Since(start)
		if p := got.unjudged(pc, err); p != "" {
			problems[i] = []string{p}
			return
		}
		if got.code != c.want {
			problems[i] = append(problems[i], fmt.Sprintf("exit %d, want %d: %s", got.code, c.want, strings.TrimSpace(got.stderr)))
		}
		problems[i] = append(problems[i], judgeIndie(got, c)...)
	}, func(t *testing.T, i int) {
		t.Logf("checked in %s", took[i].Round(100*time.Millisecond))
		for _, p := range problems[i] {
			t.Error(p)
		}
	})
}

// judgeIndie lists where the outcomes differ from what c expects: each
// named rule with its outcome, no other rule FAIL, WARN or ERROR.
func judgeIndie(r reported, c indieCase) []string {
	var out []string
	got := r.outcomes
	for id, want := range c.caught {
		if got[id] != want {
			out = append(out, fmt.Sprintf("%s: %s, want %s%s", id, got[id], want, r.why(id)))
		}
	}
	for id, o := range got {
		if _, named := c.caught[id]; named || c.may[id] {
			continue
		}
		if o == "FAIL" || o == "WARN" || o == "ERROR" {
			out = append(out, fmt.Sprintf("%s: %s, want neither FAIL nor WARN%s", id, o, r.why(id)))
		}
	}
	sort.Strings(out)
	return out
}

// TestIndependentDistributorBadInputs: a hook that fails and a token that
// is not the buyer's are bad input, exit 2 with the reason, never a page
// of FAILs.
func TestIndependentDistributorBadInputs(t *testing.T) {
	script := indieScript(t)
	for _, c := range []struct {
		what  string
		c     indieCase
		hooks [2]string
		names []string // what stderr must name
	}{
		// A --revoke hook for an agent the buyer never bought: the admin
		// API answers 404 and the hook exits 1.
		{"a failing --revoke hook", indieCase{serve: []string{"--window", "1"}}, [2]string{"acme/not-bought", ""}, []string{"--revoke"}},
		// The stranger's token given as the buyer's: its check of --agent
		// is a 404, so the inputs are wrong, not the distributor.
		{"a --token not entitled to --agent", indieCase{serve: []string{"--window", "1"}, token: "STRANGER_TOKEN"}, [2]string{}, []string{"--token", "--agent"}},
	} {
		check, whole := indieBudget(c.c)
		pc, cancel := pace.Begin(context.Background(), whole)
		got, err := checkIndie(pc, script, t.TempDir(), c.c, c.hooks, check)
		cancel()
		if err != nil || got.launchErr != "" {
			t.Fatalf("%s: %s", c.what, got.unjudged(pc, err))
		}
		named := true
		for _, n := range c.names {
			named = named && strings.Contains(got.stderr, n)
		}
		if got.code != 2 || !named {
			t.Errorf("%s: exit %d, want 2 naming %s; stderr: %s", c.what, got.code, strings.Join(c.names, " and "), got.stderr)
		}
	}
}
