package distributor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
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
