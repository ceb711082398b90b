package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

// A page is one document the browser keeps open for the whole test, at its
// own origin; every case's probes are run from it in turn.
type page struct {
	name   string // allowed, stranger, nearmiss, opaque
	url    string
	origin string // what the browser sends as Origin
	ctx    context.Context
}

// The pages' hosts. The allowed one is fixtures.AllowedOrigin's; the near
// miss is it with a suffix on its host, which a runner matching origins by
// prefix admits; the opaque page is a document served with a CSP sandbox,
// so its origin is opaque and its requests carry Origin: null.
const (
	allowedHost  = "app.example.test"
	strangerHost = "stranger.example.test"
	nearMissHost = "app.example.test.stranger.test"
)

var pageHosts = []string{allowedHost, strangerHost, nearMissHost}

// pageHTML is every page: a probe function that fetch()es what it is told
// and says, for each request, whether the page could read the answer.
const pageHTML = `<!doctype html>
<meta charset="utf-8">
<title>postern browser probe</title>
<script>
window.probeAll = async (base, tag, probes) => {
  const one = async (p) => {
    const init = {method: p.method, headers: p.headers || {}, cache: "no-store",
                  credentials: p.creds ? "include" : "same-origin", signal: AbortSignal.timeout(5000)};
    if (p.body !== undefined) init.body = p.body;
    const r = {id: p.id, read: false, status: 0, code: "", error: ""};
    try {
      const res = await fetch(base + "/postern/v0/" + p.verb + "?probe=" + tag + "." + p.id, init);
      r.read = true;
      r.status = res.status;
      const text = await res.text();
      try { const doc = JSON.parse(text); if (doc && doc.error) r.code = doc.error.code; } catch (e) {}
    } catch (e) {
      r.error = String(e);
    }
    return r;
  };
  // All at once: each has its own URL, so none waits on another's preflight.
  const results = await Promise.all(probes.map(one));
  return {secure: window.isSecureContext, origin: String(self.origin), results: results};
};
</script>`

// pageServer serves pageHTML over TLS on loopback: "/" plainly,
// "/opaque" under a CSP sandbox (scripts allowed, origin opaque). It is
// started with the browser, whose host rules send the page hosts to it,
// whichever test starts the browser first, and closed by TestMain.
var pageServer *httptest.Server

func servePages() *httptest.Server {
	return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/opaque" {
			w.Header().Set("Content-Security-Policy", "sandbox allow-scripts")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, pageHTML)
	}))
}

// A probe is one fetch() a page makes. Every body is one any runner
// refuses (inputs is not an object), so nothing can execute.
type probe struct {
	ID      string            `json:"id"`
	Verb    string            `json:"verb"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    *string           `json:"body,omitempty"`
	Creds   bool              `json:"creds,omitempty"`
	// Preflights is whether the Fetch standard has this request preflighted.
	Preflights bool `json:"-"`
	// AllowedOnly marks a variant that asks an admitting preflight for one
	// thing more: only the allowed page sends it. The other pages send the
	// three §2.3 names, which show any admission of theirs.
	AllowedOnly bool `json:"-"`
}

// probesFor lists the probes the named page sends.
func probesFor(page string) []probe {
	var out []probe
	for _, p := range probes {
		if page == "allowed" || !p.AllowedOnly {
			out = append(out, p)
		}
	}
	return out
}

const refusedBody = `{"inputs": "browser probe: inputs is not an object, so no runner can start the agent"}`

func body(s string) *string { return &s }

var jsonType = map[string]string{"Content-Type": "application/json"}

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range h {
		out[a] = b
	}
	return out
}

// The probes, in the order a page sends them.
var probes = []probe{
	// The three §2.3 describes: a JSON run preflights; a text/plain run
	// (fetch labels a string body text/plain;charset=UTF-8) is a simple
	// request and goes without one; a GET of describe goes without one.
	{ID: "run-json", Verb: "run", Method: "POST", Headers: jsonType, Body: body(refusedBody), Preflights: true},
	{ID: "run-plain", Verb: "run", Method: "POST", Body: body(refusedBody)},
	{ID: "describe", Verb: "describe", Method: "GET"},
	// The same JSON POST on stream.
	{ID: "stream-json", Verb: "stream", Method: "POST", Headers: jsonType, Body: body(refusedBody), Preflights: true, AllowedOnly: true},
	// A GET of describe with a header outside the safelist (a JSON
	// Content-Type, as generic API clients send on every call): preflighted.
	{ID: "describe-preflighted", Verb: "describe", Method: "GET", Headers: jsonType, Preflights: true, AllowedOnly: true},
	// The JSON run with Idempotency-Key, and with the runner's own
	// Authorization: each asks the preflight for one more header.
	{ID: "run-idempotency-key", Verb: "run", Method: "POST", Headers: with(jsonType, "Idempotency-Key", "browser-probe-key"), Body: body(refusedBody), Preflights: true, AllowedOnly: true},
	{ID: "run-authorization", Verb: "run", Method: "POST", Headers: with(jsonType, "Authorization", "Bearer "+fixtures.AuthToken), Body: body(refusedBody), Preflights: true, AllowedOnly: true},
	// A read with credentials: include, which a browser lets the page see
	// only where the answer carries Access-Control-Allow-Credentials: true.
	{ID: "describe-credentialed", Verb: "describe", Method: "GET", Creds: true, AllowedOnly: true},
}

// An observation is what one probe from one page came to.
type observation struct {
	// From the page.
	Read    bool   // fetch() resolved: the page could read the answer
	Status  int    // the status it read
	Code    string // error.code of the envelope it read
	JSError string // what fetch() rejected with
	// From the browser (DevTools Network.loadingFailed): its own reason.
	CORS string
	// From the runner side (the wrapping handler).
	Preflighted bool     // an OPTIONS arrived for it
	Sent        bool     // the request itself arrived
	OptionsLast bool     // an OPTIONS arrived after the request itself
	Arrived     []string // each arrival: method, Content-Type, Origin
	PNA         bool     // some arrival asked Access-Control-Request-Private-Network
}

func (o observation) String() string {
	var b strings.Builder
	if o.Read {
		fmt.Fprintf(&b, "read %d %s", o.Status, o.Code)
	} else {
		b.WriteString("blocked")
		if o.CORS != "" {
			fmt.Fprintf(&b, " (%s)", o.CORS)
		}
	}
	fmt.Fprintf(&b, "; runner saw [%s]", strings.Join(o.Arrived, ", "))
	return b.String()
}

// recorder wraps the runner and notes every request a probe sent: the
// probe's key rides in the query (?probe=case.page.id), which the runner
// ignores, and which also gives each probe its own URL in every case, so
// no preflight is answered from the browser's preflight cache.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	seen map[string][]arrival
}

type arrival struct {
	method, contentType, origin string
	pna                         bool
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if key := r.URL.Query().Get("probe"); key != "" {
		rec.mu.Lock()
		rec.seen[key] = append(rec.seen[key], arrival{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Origin"),
			r.Header.Get("Access-Control-Request-Private-Network") != ""})
		rec.mu.Unlock()
	}
	rec.next.ServeHTTP(w, r)
}

func (rec *recorder) arrivals(key string) []arrival {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]arrival(nil), rec.seen[key]...)
}

// corsLog keeps the browser's reason for each failed probe request, from
// the DevTools events of every tab.
type corsLog struct {
	mu     sync.Mutex
	urls   map[network.RequestID]string
	reason map[string]string // probe key → the first reason given
}

func newCORSLog() *corsLog {
	return &corsLog{urls: map[network.RequestID]string{}, reason: map[string]string{}}
}

func (l *corsLog) listen(ev any) {
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.mu.Lock()
		l.urls[e.RequestID] = e.Request.URL
		l.mu.Unlock()
	case *network.EventLoadingFailed:
		l.mu.Lock()
		defer l.mu.Unlock()
		u, err := url.Parse(l.urls[e.RequestID])
		if err != nil {
			return
		}
		key := u.Query().Get("probe")
		if key == "" || l.reason[key] != "" {
			return
		}
		switch {
		case e.CorsErrorStatus != nil && e.CorsErrorStatus.FailedParameter != "":
			l.reason[key] = fmt.Sprintf("%s: %s", e.CorsErrorStatus.CorsError, e.CorsErrorStatus.FailedParameter)
		case e.CorsErrorStatus != nil:
			l.reason[key] = string(e.CorsErrorStatus.CorsError)
		default:
			l.reason[key] = e.ErrorText
		}
	}
}

func (l *corsLog) of(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason[key]
}

// openPages opens one tab per page on the shared browser and loads it.
func openPages(t *testing.T, c *chromium, log *corsLog) []*page {
	t.Helper()
	pages := []*page{
		{name: "allowed", url: "https://" + allowedHost + "/", origin: fixtures.AllowedOrigin},
		{name: "stranger", url: "https://" + strangerHost + "/", origin: "https://" + strangerHost},
		{name: "nearmiss", url: "https://" + nearMissHost + "/", origin: "https://" + nearMissHost},
		{name: "opaque", url: "https://" + allowedHost + "/opaque", origin: "null"},
	}
	for _, p := range pages {
		ctx, cancel := chromedp.NewContext(c.browser, chromedp.WithListener(log.listen))
		t.Cleanup(cancel)
		p.ctx = ctx
		err := chromedp.Do(ctx,
			chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{})
				return err
			}),
			chromedp.Navigate(p.url))
		if err != nil {
			t.Fatalf("loading %s: %v", p.url, err)
		}
	}
	return pages
}

// pageResult is what probeAll returns.
type pageResult struct {
	Secure  bool   `json:"secure"`
	Origin  string `json:"origin"`
	Results []struct {
		ID     string `json:"id"`
		Read   bool   `json:"read"`
		Status int    `json:"status"`
		Code   string `json:"code"`
		Error  string `json:"error"`
	} `json:"results"`
}

// runProbes sends every probe from p to the runner at base; tag
// (case.page) starts each probe's key.
func runProbes(p *page, base, tag string) (pageResult, error) {
	list, err := json.Marshal(probesFor(p.name))
	if err != nil {
		return pageResult{}, err
	}
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	expr := fmt.Sprintf("window.probeAll(%q, %q, %s)", base, tag, list)
	return chromedp.Run(ctx, chromedp.Evaluate[pageResult](expr, chromedp.EvalAwaitPromise))
}

// loopbackAddr is the host:port a test server listens on.
func loopbackAddr(srv *httptest.Server) string {
	return srv.Listener.Addr().(*net.TCPAddr).String()
}
