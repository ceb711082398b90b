package distributor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// hostile answers the buyer's first check as a distributor would, then
// misbehaves with every other request as bad does.
func hostile(t *testing.T, bad func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	first := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first && strings.HasPrefix(r.URL.Path, protocol.EntitlementsRoute) {
			first = false
			w.Header().Set("Content-Type", protocol.JSONUTF8)
			_, _ = w.Write([]byte(`{"postern":"0.1","state":"active","agent_id":"acme/x","checked_at":"` + protocol.Stamp(time.Now()) + `","stale_after_seconds":60,"grace_seconds":0}`))
			return
		}
		bad(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func bounded(t *testing.T, url string, within time.Duration) {
	t.Helper()
	start := time.Now()
	o := distributor.Options{Target: url, Token: "tok", Agent: "acme/x", Stranger: "other", Timeout: time.Second}
	_, results, err := distributor.Check(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// The bound, plus the work of ending the run scaled for -race and a
	// busy machine: a hang never ends, a loaded machine ends late.
	within += pace.Budget{Work: time.Second}.Deadline()
	if took := time.Since(start); took > within {
		t.Errorf("the check took %s, past its bound of %s", took, within)
	}
	for _, r := range results {
		if r.Outcome == engine.Error {
			t.Errorf("%s: %s", r.Rule.ID, r.Reason)
		}
	}
	t.Logf("bounded in %s", time.Since(start).Round(time.Millisecond))
}

// A distributor that answers once and then never again is bounded by the
// per-request deadline, the routes given up and the whole-run deadline.
func TestHangingDistributor(t *testing.T) {
	url := hostile(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	bounded(t, url, 2*time.Second+5*time.Second+time.Second)
}

// One that drips its answers a byte at a time is bounded the same way.
func TestDrippingDistributor(t *testing.T) {
	url := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		for i := 0; i < 1000; i++ {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	bounded(t, url, 2*time.Second+5*time.Second+time.Second)
}

// Plain HTTP to an address that is not loopback fails §7's rule: a
// resolver that sends the distributor's name elsewhere stands in for a
// public host.
func TestPlainHTTPOffLoopback(t *testing.T) {
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protocol.JSONUTF8)
		_, _ = w.Write([]byte(`{"postern":"0.1","state":"active","agent_id":"acme/x","checked_at":"` + protocol.Stamp(time.Now()) + `","stale_after_seconds":60,"grace_seconds":0}`))
	}))
	defer d.Close()
	for name, ip := range map[string]string{"loopback": "127.0.0.1", "public": "192.0.2.7"} {
		// The client dials localhost; the rule asks the resolver given.
		o := distributor.Options{Target: strings.Replace(d.URL, "127.0.0.1", "localhost", 1), Token: "tok", Agent: "acme/x",
			Rules: []string{"7/tls-or-loopback"}, Timeout: time.Second,
			Lookup: func(context.Context, string) ([]net.IPAddr, error) { return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil }}
		_, results, err := distributor.Check(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		want := engine.Pass
		if name == "public" {
			want = engine.Fail
		}
		if got := results[0].Outcome; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

// brokenBundles serves the reference distributor, conformant, except that
// its bundle route is handed to bad (with how many requests for the
// bundle of --agent came before, or -1 for another bundle), and returns the test buyer's inputs to check it.
func brokenBundles(t *testing.T, bad func(n int, w http.ResponseWriter, r *http.Request) bool) distributor.Options {
	t.Helper()
	d, err := refdist.New(refdist.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// n counts the buyer's own plain fetches of the bundle (the probe
		// the bundle rules share), not the other rules' variants of it, so
		// that "once" names the same request however the rules interleave.
		i := -1
		if r.RequestURI == protocol.BundlesRoute+d.Inputs().Agent && r.Header.Get("Cookie") == "" &&
			r.Header.Get("Authorization") == "Bearer "+d.Inputs().Token {
			i = int(n.Add(1)) - 1
		}
		if strings.HasPrefix(r.URL.Path, protocol.BundlesRoute) && bad(i, w, r) {
			return
		}
		d.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	o := d.Options(false)
	o.Target, o.Timeout = srv.URL, time.Second
	return o
}

// reset closes the request's connection with a TCP reset, unanswered.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// A bundle that is never served is never conformant: a route that resets
// every connection, while the check answers, fails §5.6's 200; one that
// never answers leaves the bundle rules undecided; a single reset, which
// the second request shows transient, is no breach.
func TestBundleNeverServed(t *testing.T) {
	for name, c := range map[string]struct {
		bad        func(n int, w http.ResponseWriter, r *http.Request) bool
		conformant bool
		want       engine.Outcome // 5.6/bundle-media-type
	}{
		"resets": {bad: func(_ int, w http.ResponseWriter, _ *http.Request) bool { reset(w); return true }, want: engine.Fail},
		"hangs": {bad: func(_ int, _ http.ResponseWriter, r *http.Request) bool { <-r.Context().Done(); return true },
			want: engine.Skip},
		"resets-once": {bad: func(n int, w http.ResponseWriter, _ *http.Request) bool {
			if n == 0 {
				reset(w)
			}
			return n == 0
		}, conformant: true, want: engine.Pass},
	} {
		t.Run(name, func(t *testing.T) {
			o := brokenBundles(t, c.bad)
			_, results, err := distributor.Check(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			v := distributor.Decide(engine.Records(results), nil)
			t.Log(v.Text)
			if v.Conformant != c.conformant {
				t.Errorf("conformant %v, want %v: %s", v.Conformant, c.conformant, v.Text)
				for _, r := range results {
					if r.Kind == engine.Undecided {
						t.Logf("undecided: %s", describe(r))
					}
				}
			}
			for _, r := range results {
				switch {
				case r.Rule.ID == "5.6/bundle-media-type" && r.Outcome != c.want:
					t.Errorf("%s, want %s", describe(r), c.want)
				case r.Outcome == engine.Fail && r.Rule.ID != "5.6/bundle-media-type":
					t.Errorf("%s", describe(r))
				case r.Outcome == engine.Skip && !c.conformant && r.Kind != engine.Undecided && bundleRule(r.Rule.ID):
					t.Errorf("%s: a SKIP of kind %s, not undecided", describe(r), r.Kind)
				case r.Outcome == engine.Error:
					t.Errorf("%s", describe(r))
				}
			}
		})
	}
}

// bundleRule reports whether a rule judges the buyer's bundle of --agent.
func bundleRule(id string) bool {
	return strings.HasPrefix(id, "6/") || strings.HasPrefix(id, "5.6/repr-digest") || id == "5.6/bundle-media-type"
}

// TestBothBucketsOnlyOnLoopback: a second source address is at hand only
// where the target is on IPv4 loopback; elsewhere the rule on both buckets
// skips, saying why (and list --coverage says so of its row).
func TestBothBucketsOnlyOnLoopback(t *testing.T) {
	for raw, want := range map[string]string{"http://127.0.0.5:8080": "", "http://localhost:8080": "",
		"http://[::1]:8080": "IPv6 has one loopback address", "https://192.0.2.7": "not on loopback"} {
		u, _ := url.Parse(raw)
		if got := distributor.LoopbackNeed(u); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
	srv, err := refdist.Start(refdist.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	o := srv.Options(false)
	// The client dials localhost; the rule asks the resolver given.
	o.Target, o.RateLimit, o.Timeout = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), true, 5*time.Second
	o.Rules = []string{"5.6/rate-limit-both-buckets"}
	o.Lookup = func(context.Context, string) ([]net.IPAddr, error) {
		return []net.IPAddr{{IP: net.ParseIP("192.0.2.7")}}, nil
	}
	_, results, err := distributor.Check(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Outcome != engine.Skip || !strings.Contains(r.Reason, "not to IPv4 loopback") {
		t.Errorf("a target resolving off loopback: %s %s", r.Outcome, r.Reason)
	}
}
