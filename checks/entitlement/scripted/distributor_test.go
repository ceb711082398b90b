package scripted

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/wire/clock"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// route is where the checks go.
const route = protocol.EntitlementsRoute

// start is the fake clock's starting instant, with a fraction of a second
// so the tests see it cut to the second on the way out.
var start = time.Date(2026, 8, 15, 9, 14, 2, 500_000_000, time.UTC)

const agent = "acme/market-research-crew"

// guard bounds a wait that should end at once, so a broken distributor
// fails the test rather than hanging it. It is not a measure of speed.
const guard = 10 * time.Second

func newDist(t *testing.T) (*Distributor, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(start)
	d, err := Start(fc)
	assert.NilError(t, err)
	t.Cleanup(d.Close)
	return d, fc
}

// client is an HTTP client of its own per test, with keep-alives off so
// every request is one connection and none outlives the test.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// get sends a GET for path (sent as written, percent-encoding included)
// with the Authorization values given.
func get(t *testing.T, d *Distributor, path string, auth ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.URL+path, nil)
	assert.NilError(t, err)
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := client(t).Do(req)
	assert.NilError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return resp, body
}

func check(t *testing.T, d *Distributor, tok string) (*http.Response, []byte) {
	t.Helper()
	return get(t, d, route+agent, "Bearer "+tok)
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	assert.NilError(t, json.Unmarshal(body, &m), "body %q", body)
	return m
}

func assertEnvelope(t *testing.T, body []byte, code string) {
	t.Helper()
	m := decode(t, body)
	assert.Check(t, is.Len(m, 1), "the envelope's root has one member: %s", body)
	e, _ := m["error"].(map[string]any)
	assert.Check(t, is.Equal(e["code"], code))
	msg, _ := e["message"].(string)
	assert.Check(t, msg != "")
	d, has := e["detail"]
	assert.Check(t, has && d == nil, "detail is null: %s", body)
}

func TestActiveAnswer(t *testing.T) {
	d, fc := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 60, GraceSeconds: 86400})

	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.Equal(t, resp.Header.Get("Content-Type"), "application/json; charset=utf-8")
	assert.DeepEqual(t, decode(t, body), map[string]any{
		"postern": "0.1", "state": "active", "agent_id": agent,
		"checked_at": "2026-08-15T09:14:02Z", "stale_after_seconds": 60.0, "grace_seconds": 86400.0,
	})

	// A fresh read on every check: checked_at follows the shared clock.
	fc.Advance(90 * time.Second)
	_, body = check(t, d, tok)
	assert.Equal(t, decode(t, body)["checked_at"], "2026-08-15T09:15:32Z")

	log := d.Log(tok)
	assert.Assert(t, is.Len(log, 2))
	assert.Equal(t, log[1].Kind, Active)
	assert.Equal(t, log[1].Status, http.StatusOK)
	assert.Equal(t, string(log[1].Body), string(body))
	assert.Equal(t, log[1].Sent.CheckedAt, time.Date(2026, 8, 15, 9, 15, 32, 0, time.UTC))
	assert.Equal(t, log[1].Sent.AgentID, agent)
	assert.Equal(t, log[1].At, start.Add(90*time.Second))
}

func TestOmittedMembers(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	omit := []string{"grace_seconds"}
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 60, GraceSeconds: 86400, Omit: omit})
	omit[0] = "state" // the script keeps its own copy

	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.DeepEqual(t, decode(t, body), map[string]any{
		"postern": "0.1", "state": "active", "agent_id": agent,
		"checked_at": "2026-08-15T09:14:02Z", "stale_after_seconds": 60.0,
	})
}

func TestCheckedAtFixedOrAged(t *testing.T) {
	d, fc := newDist(t)
	tok := d.NewToken()

	read := start.Add(-time.Hour).In(time.FixedZone("CEST", 2*3600))
	d.Answer(tok, Answer{Kind: Active, CheckedAt: read, StaleAfterSeconds: 5})
	fc.Advance(time.Minute)
	_, body := check(t, d, tok)
	assert.Equal(t, decode(t, body)["checked_at"], "2026-08-15T08:14:02Z", "a fixed read time, in UTC")

	d.Answer(tok, Answer{Kind: Active, Age: 30 * time.Second, StaleAfterSeconds: 5})
	_, body = check(t, d, tok)
	assert.Equal(t, decode(t, body)["checked_at"], "2026-08-15T09:14:32Z", "now less the cache's age")
}

// A cached answer keeps its checked_at through each window and moves to
// the next refresh once a window has passed: a runner asking early is
// given the window it holds.
func TestCachedAnswer(t *testing.T) {
	d, fc := newDist(t)
	tok := d.NewToken()
	read := start.Truncate(time.Second)
	d.Answer(tok, Answer{Kind: Active, CheckedAt: read, Cached: true, StaleAfterSeconds: 2, GraceSeconds: 3})
	for _, c := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "2026-08-15T09:14:02Z"},
		{time.Second, "2026-08-15T09:14:02Z"},            // within the window
		{500 * time.Millisecond, "2026-08-15T09:14:04Z"}, // the window's end: the next read
		{5 * time.Second, "2026-08-15T09:14:08Z"},
	} {
		fc.Advance(c.advance)
		_, body := check(t, d, tok)
		assert.Equal(t, decode(t, body)["checked_at"], c.want, "at %s", fc.Now())
	}
	log := d.Log(tok)
	assert.Assert(t, log[0].Windowed())
	assert.Equal(t, log[3].WindowEnds(), time.Date(2026, 8, 15, 9, 14, 10, 0, time.UTC))
	assert.Equal(t, log[3].GraceEnds(), time.Date(2026, 8, 15, 9, 14, 13, 0, time.UTC))

	// Only an active or revoked answer, whole and for the agent asked
	// about, carries a window.
	for _, a := range []Answer{{Kind: NotFound}, {Kind: ServerError}, {Kind: OtherAgent, StaleAfterSeconds: 2},
		{Kind: Active, StaleAfterSeconds: 2, Omit: []string{"grace_seconds"}}} {
		d.Answer(tok, a)
		check(t, d, tok)
		log := d.Log(tok)
		assert.Check(t, !log[len(log)-1].Windowed(), "%s", a.Kind)
	}
}

func TestRevokedAndAccessEndsAt(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	ends := time.Date(2027, 8, 15, 0, 0, 0, 0, time.UTC)

	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 2, GraceSeconds: 0, AccessEndsAt: ends})
	_, body := check(t, d, tok)
	m := decode(t, body)
	assert.Equal(t, m["access_ends_at"], "2027-08-15T00:00:00Z")
	assert.Equal(t, m["grace_seconds"], 0.0, "a grace of 0 is sent, not omitted")

	d.Answer(tok, Answer{Kind: Revoked, StaleAfterSeconds: 2, GraceSeconds: 3})
	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	m = decode(t, body)
	assert.Equal(t, m["state"], "revoked")
	assert.Equal(t, m["agent_id"], agent)
	_, has := m["access_ends_at"]
	assert.Check(t, !has, "no date unless the script gives one: %s", body)
	assert.Equal(t, d.Log(tok)[1].Kind, Revoked)
}

func TestNotFoundIsConstant(t *testing.T) {
	d, _ := newDist(t)
	scripted, unscripted := d.NewToken(), d.NewToken()
	d.Answer(scripted, Answer{Kind: NotFound})

	var bodies []string
	for _, auth := range [][]string{
		{"Bearer " + scripted},   // scripted 404
		{"Bearer " + unscripted}, // issued, never scripted
		{"Bearer not-a-token"},   // unknown
		nil,                      // no credential
		{"Basic " + scripted},    // another scheme
	} {
		resp, body := get(t, d, route+agent, auth...)
		assert.Equal(t, resp.StatusCode, http.StatusNotFound)
		assertEnvelope(t, body, "not_found")
		bodies = append(bodies, string(body))
	}
	resp, body := get(t, d, route+"acme/a/b", "Bearer "+scripted) // no route
	assert.Equal(t, resp.StatusCode, http.StatusNotFound)
	bodies = append(bodies, string(body))
	for _, b := range bodies {
		assert.Equal(t, b, bodies[0], "§5.5: one 404 body, whatever was missed")
	}

	assert.Equal(t, d.Log(scripted)[0].Kind, NotFound)
	assert.Equal(t, d.Log(unscripted)[0].Kind, Unscripted)
	none := d.Log("")
	assert.Assert(t, is.Len(none, 3))
	for _, r := range none {
		assert.Equal(t, r.Kind, Unscripted)
	}
	assert.Equal(t, d.Log(scripted)[1].Kind, NoRoute)
}

func TestServerError(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: ServerError})
	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusServiceUnavailable)
	assertEnvelope(t, body, "unavailable")

	d.Answer(tok, Answer{Kind: ServerError, Status: http.StatusBadGateway})
	resp, body = check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusBadGateway)
	assert.Equal(t, string(body), "Bad Gateway\n")
	assert.Equal(t, d.Log(tok)[1].Sent.Status, http.StatusBadGateway)
	assert.Equal(t, d.Log(tok)[0].Sent.Status, http.StatusServiceUnavailable, "the default, as it went out")
}

func TestInvalid(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Invalid})
	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	m := decode(t, body)
	for _, member := range []string{"agent_id", "checked_at", "stale_after_seconds", "grace_seconds"} {
		_, has := m[member]
		assert.Check(t, !has, "the default invalid body lacks %s", member)
	}

	d.Answer(tok, Answer{Kind: Invalid, Body: []byte("<html>maintenance</html>"), ContentType: "text/html"})
	resp, body = check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.Equal(t, resp.Header.Get("Content-Type"), "text/html")
	assert.Equal(t, string(body), "<html>maintenance</html>")
}

func TestOtherAgent(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: OtherAgent, StaleAfterSeconds: 5, GraceSeconds: 5})
	resp, body := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	m := decode(t, body)
	id, _ := m["agent_id"].(string)
	assert.Check(t, id != agent && protocol.ValidAgentID(id), "agent_id %q", id)
	assert.Equal(t, m["state"], "active")

	long := "o/" + strings.Repeat("n", 126)
	_, body = get(t, d, route+long, "Bearer "+tok)
	id, _ = decode(t, body)["agent_id"].(string)
	assert.Check(t, id != long && protocol.ValidAgentID(id), "agent_id %q", id)

	d.Answer(tok, Answer{Kind: OtherAgent, AgentID: "acme/market-research-crew2"})
	_, body = check(t, d, tok)
	assert.Equal(t, decode(t, body)["agent_id"], "acme/market-research-crew2")
}

func TestHangEndsWhenTheClientGivesUp(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Hang})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+route+agent, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client(t).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), guard)
	defer wcancel()
	r, err := d.Next(wctx, tok)
	assert.NilError(t, err)
	assert.Equal(t, r.Kind, Hang)
	assert.Equal(t, r.Status, 0)

	select {
	case err := <-errc:
		t.Fatalf("a hanging check was answered: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-errc:
		assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
	case <-time.After(guard):
		t.Fatal("the client could not give up")
	}
}

func TestCloseReleasesAHang(t *testing.T) {
	before := runtime.NumGoroutine()
	d, err := Start(clock.NewFake(start))
	assert.NilError(t, err)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Hang})

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, d.URL+route+agent, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	_, err = d.Next(ctx, tok)
	assert.NilError(t, err)

	closed := make(chan struct{})
	go func() { d.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(guard):
		t.Fatal("Close blocked on a hanging check")
	}
	select {
	case err := <-errc:
		assert.Assert(t, err != nil, "the hanging check got no answer")
	case <-time.After(guard):
		t.Fatal("the client was not released")
	}
	d.Close() // twice is harmless

	_, err = d.Next(context.Background(), tok)
	assert.Assert(t, errors.Is(err, ErrClosed), "%v", err)
	assert.Assert(t, is.Len(d.Log(tok), 1), "the log outlives Close")

	tr.CloseIdleConnections()
	waitGoroutines(t, before)
}

// waitGoroutines waits for the goroutine count to come back to n: what
// Close leaves behind is gone once the runtime has run down the
// connections' goroutines.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, was %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRefuse(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Refuse})

	req, _ := http.NewRequest(http.MethodGet, d.URL+route+agent, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := client(t).Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a refused check was answered %s", resp.Status)
	}
	log := d.Log(tok)
	assert.Assert(t, is.Len(log, 1), "a fresh connection is not retried")
	assert.Equal(t, log[0].Kind, Refuse)
	assert.Equal(t, log[0].Status, 0)

	// The next script is served on the same port at once.
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	resp2, _ := check(t, d, tok)
	assert.Equal(t, resp2.StatusCode, http.StatusOK)
}

func TestTokensAreSeparate(t *testing.T) {
	d, _ := newDist(t)
	a, b := d.NewToken(), d.NewToken()
	assert.Check(t, a != b)
	assert.Check(t, len(a) >= 22, "at least 128 bits as base64url: %q", a)
	assert.Check(t, token68(a), "a token is sendable as a bearer credential")

	d.Answer(a, Answer{Kind: Active, StaleAfterSeconds: 1})
	d.Answer(b, Answer{Kind: Revoked, StaleAfterSeconds: 1})
	_, body := check(t, d, a)
	assert.Equal(t, decode(t, body)["state"], "active")
	_, body = check(t, d, b)
	assert.Equal(t, decode(t, body)["state"], "revoked")
	_, _ = check(t, d, a)

	la, lb := d.Log(a), d.Log(b)
	assert.Assert(t, is.Len(la, 2))
	assert.Assert(t, is.Len(lb, 1))
	assert.Equal(t, la[0].Token, a)
	assert.Equal(t, la[1].N, 2)
	assert.Equal(t, lb[0].N, 1)
	all := d.All()
	assert.Assert(t, is.Len(all, 3))
	for i, r := range all {
		assert.Equal(t, r.Seq, i+1)
	}
	assert.Equal(t, d.Count(a), 2)

	got, ok := d.Script(b)
	assert.Check(t, ok && got.Kind == Revoked)
	_, ok = d.Script("never-issued")
	assert.Check(t, !ok)
}

func TestAnswerPanicsOnMistakes(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	assert.Assert(t, panics(func() { d.Answer("never-issued", Answer{Kind: Active}) }))
	assert.Assert(t, panics(func() { d.Answer(tok, Answer{Kind: NoRoute}) }))
	assert.Assert(t, panics(func() { d.Answer(tok, Answer{Kind: BadID}) }))
	assert.Assert(t, !panics(func() { d.Answer(tok, Answer{}) }), "Unscripted clears a script")
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestRouting is §5.3.1 as the distributor answers it: two raw segments, no
// decoding, 404 for another count and 400 for a bad identifier, each logged
// with the target exactly as sent.
func TestRouting(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})

	for _, c := range []struct {
		path   string
		status int
		kind   Kind
		two    bool
		owner  string
	}{
		{route + agent, 200, Active, true, "acme"},
		{route + agent + "?x=1", 200, Active, true, "acme"},
		{route + "acme%2Fmarket-research-crew", 404, NoRoute, false, ""},
		{route + "acme%2fmarket-research-crew", 404, NoRoute, false, ""},
		{route + "acme/market%2Dresearch-crew", 400, BadID, false, "acme"},
		{route + "Acme/Market-Research-Crew", 400, BadID, true, "Acme"},
		{route + "acme/market_research", 400, BadID, true, "acme"},
		{route + "acme/-x", 400, BadID, true, "acme"},
		{route + "o/" + strings.Repeat("n", 127), 400, BadID, true, "o"},
		{route + "acme", 404, NoRoute, false, ""},
		{route + "acme/x/y", 404, NoRoute, false, ""},
		{route + "acme/x/", 404, NoRoute, false, ""},
		{route + "acme/", 404, NoRoute, false, ""},
		{route + "/x", 404, NoRoute, false, ""},
		{"/postern/v0/bundles/" + agent, 404, NoRoute, false, ""},
		{"/favicon.ico", 404, NoRoute, false, ""},
	} {
		resp, body := get(t, d, c.path, "Bearer "+tok)
		assert.Check(t, is.Equal(resp.StatusCode, c.status), c.path)
		switch c.status {
		case 404:
			assertEnvelope(t, body, "not_found")
		case 400:
			assertEnvelope(t, body, "bad_request")
		}
		r := d.All()[len(d.All())-1]
		assert.Check(t, is.Equal(r.Target, c.path), "the target as sent")
		assert.Check(t, is.Equal(r.Kind, c.kind), c.path)
		assert.Check(t, is.Equal(r.TwoSegments(), c.two), c.path)
		assert.Check(t, is.Equal(r.Owner, c.owner), c.path)
		assert.Check(t, is.Equal(r.Token, tok), "logged under its token: %s", c.path)
	}
	n := len(d.All())
	r := d.All()[n-1]
	assert.Check(t, !r.ValidID() && r.Addressed() == "")
	r = d.All()[0]
	assert.Check(t, r.ValidID() && r.Addressed() == agent && r.Path() == route+agent)

	req, _ := http.NewRequest(http.MethodPost, d.URL+route+agent, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := client(t).Do(req)
	assert.NilError(t, err)
	resp.Body.Close()
	assert.Equal(t, resp.StatusCode, http.StatusNotFound)
	last := d.Log(tok)[len(d.Log(tok))-1]
	assert.Equal(t, last.Method, http.MethodPost)
	assert.Equal(t, last.Kind, NoRoute)
}

// TestRawTargets sends request lines by hand, so nothing between the test
// and the distributor can normalise them.
func TestRawTargets(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	host := strings.TrimPrefix(d.URL, "http://")

	for _, c := range []struct {
		target string
		status int
		two    bool
	}{
		{route + "%61cme/x", 400, false},
		{route + "acme/x%20", 400, false},
		{route + "acme%2Fx/y", 400, false},
		{"http://" + host + route + agent, 200, true}, // absolute-form: the path is judged
		{"*", 404, false},
	} {
		conn, err := net.Dial("tcp", host)
		assert.NilError(t, err)
		_, err = io.WriteString(conn, "GET "+c.target+" HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+tok+"\r\nConnection: close\r\n\r\n")
		assert.NilError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		assert.NilError(t, err, c.target)
		resp.Body.Close()
		conn.Close()
		assert.Check(t, is.Equal(resp.StatusCode, c.status), c.target)
		r := d.All()[len(d.All())-1]
		assert.Check(t, is.Equal(r.Target, c.target))
		assert.Check(t, is.Equal(r.TwoSegments(), c.two), c.target)
	}
}

func TestBearer(t *testing.T) {
	for _, c := range []struct {
		auth     []string
		tok      string
		ok       bool
		credited string // what the distributor reads, leniently
	}{
		{[]string{"Bearer abc-_.~+/="}, "abc-_.~+/=", true, "abc-_.~+/="},
		{[]string{"bearer abc"}, "", false, "abc"},
		{[]string{"BEARER abc"}, "", false, "abc"},
		{[]string{"Bearer  abc"}, "", false, "abc"},
		{[]string{"Bearer abc "}, "", false, "abc "},
		{[]string{"Bearer "}, "", false, ""},
		{[]string{"Bearer"}, "", false, ""},
		{[]string{"Bearer a b"}, "", false, "a b"},
		{[]string{"Bearer ="}, "", false, "="},
		{[]string{"Basic abc"}, "", false, ""},
		{[]string{"abc"}, "", false, ""},
		{[]string{"Bearer abc", "Bearer abc"}, "", false, ""},
		{nil, "", false, ""},
	} {
		tok, ok := Request{Authorization: c.auth}.Bearer()
		assert.Check(t, is.Equal(tok, c.tok), "%q", c.auth)
		assert.Check(t, is.Equal(ok, c.ok), "%q", c.auth)
		assert.Check(t, is.Equal(protocol.BearerToken(c.auth), c.credited), "%q", c.auth)
	}
}

// TestLenientCredential: a request whose credential Bearer rejects is still
// credited to its token, so the walk goes on and the rules judge the header.
func TestLenientCredential(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	resp, _ := get(t, d, route+agent, "bearer "+tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	r := d.Log(tok)[0]
	assert.DeepEqual(t, r.Authorization, []string{"bearer " + tok})
	_, ok := r.Bearer()
	assert.Check(t, !ok)

	get(t, d, route+agent, "Bearer "+tok, "Bearer "+tok)
	assert.Equal(t, d.Log("")[0].Kind, Unscripted, "two credentials are none")
}

func TestNextAndAwait(t *testing.T) {
	d, _ := newDist(t)
	tok, other := d.NewToken(), d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()

	check(t, d, tok)
	check(t, d, other)
	check(t, d, tok)
	r, err := d.Next(ctx, tok)
	assert.NilError(t, err)
	assert.Equal(t, r.N, 1)
	r, err = d.Next(ctx, tok)
	assert.NilError(t, err)
	assert.Equal(t, r.N, 2)
	r, err = d.Next(ctx, other)
	assert.NilError(t, err)
	assert.Equal(t, r.Token, other)

	// A request yet to come: Next waits for it.
	got := make(chan Request, 1)
	go func() {
		r, err := d.Next(ctx, tok)
		if err == nil {
			got <- r
		}
		close(got)
	}()
	check(t, d, tok)
	r, ok := <-got
	assert.Assert(t, ok, "Next returned an error")
	assert.Equal(t, r.N, 3)

	// Await from a count taken before the action.
	n := d.Count(tok)
	check(t, d, tok)
	r, err = d.Await(ctx, tok, n)
	assert.NilError(t, err)
	assert.Equal(t, r.N, n+1)

	// Skip: the past is not the next.
	check(t, d, tok)
	d.Skip(tok)
	short, scancel := context.WithCancel(ctx)
	scancel()
	_, err = d.Next(short, tok)
	assert.Assert(t, errors.Is(err, context.Canceled), "%v", err)
}

func TestLogIsBounded(t *testing.T) {
	d, _ := newDist(t)
	d.mu.Lock()
	for i := 0; i < LogCap+5; i++ {
		d.record(Request{Token: "t"})
	}
	d.mu.Unlock()
	all := d.All()
	assert.Assert(t, is.Len(all, LogCap))
	assert.Equal(t, all[0].Seq, 6)
	assert.Equal(t, all[LogCap-1].Seq, LogCap+5)
	assert.Equal(t, d.Count("t"), LogCap+5)
	r, err := d.Await(context.Background(), "t", 0)
	assert.NilError(t, err)
	assert.Equal(t, r.N, 6, "the oldest still held")
}

func TestLoggedHeadersAreCapped(t *testing.T) {
	d, _ := newDist(t)
	long := strings.Repeat("a", 3000)
	get(t, d, route+agent+"?"+long, "Bearer "+long, "Bearer x")
	r := d.All()[0]
	assert.Check(t, r.TargetCut && len(r.Target) == maxLoggedTarget)
	assert.Check(t, !r.TwoSegments())
	total := 0
	for _, v := range r.Authorization {
		total += len(v)
	}
	assert.Check(t, total <= maxLoggedAuth, "%d", total)

	// Headers past the server's cap never reach the handler.
	resp, _ := get(t, d, route+agent, "Bearer "+strings.Repeat("b", 2*maxHeaderBytes))
	assert.Equal(t, resp.StatusCode, http.StatusRequestHeaderFieldsTooLarge)
}

func TestRealClock(t *testing.T) {
	d, err := Start(nil)
	assert.NilError(t, err)
	defer d.Close()
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	before := time.Now().UTC().Truncate(time.Second)
	_, body := check(t, d, tok)
	at, err := time.Parse(time.RFC3339, decode(t, body)["checked_at"].(string))
	assert.NilError(t, err)
	assert.Check(t, !at.Before(before), "%s before %s", at, before)
	assert.Check(t, strings.HasSuffix(decode(t, body)["checked_at"].(string), "Z"))
}

// TestConnectionsAreCapped: connections past maxConns are closed unread,
// and serving resumes once the idle ones go.
func TestConnectionsAreCapped(t *testing.T) {
	d, _ := newDist(t)
	tok := d.NewToken()
	d.Answer(tok, Answer{Kind: Active, StaleAfterSeconds: 1})
	host := strings.TrimPrefix(d.URL, "http://")

	idle := make([]net.Conn, 0, maxConns)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range maxConns {
		c, err := net.Dial("tcp", host)
		assert.NilError(t, err)
		idle = append(idle, c)
	}
	waitOpen(t, d, maxConns)

	extra, err := net.Dial("tcp", host)
	assert.NilError(t, err)
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(guard))
	_, err = extra.Read(make([]byte, 1))
	assert.Assert(t, err != nil && !errors.Is(err, os.ErrDeadlineExceeded), "a connection past the cap is closed: %v", err)

	for _, c := range idle {
		c.Close()
	}
	idle = idle[:0]
	waitOpen(t, d, 0)
	resp, _ := check(t, d, tok)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.Equal(t, len(d.All()), 1, "nothing past the cap was logged")
}

func waitOpen(t *testing.T, d *Distributor, n int64) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for d.open.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", d.open.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
