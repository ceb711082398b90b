package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// debianPackage is the package that provides the browser.
const debianPackage = "chromium"

// chromiumPath finds Debian's chromium, or "".
func chromiumPath() string {
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// inCI reports a run under the CI script, which exports CI=true.
func inCI() bool { return os.Getenv("CI") == "true" }

// The one browser of the whole test binary, started on first use and
// stopped by TestMain.
var (
	launchOnce sync.Once
	launched   *chromium
	launchErr  error
)

type chromium struct {
	cancel  []context.CancelFunc // the allocator's and the browser's, in reverse order
	dataDir string
	browser context.Context // the first tab's context: it owns the process
	elapsed time.Duration   // how long the launch took
}

func TestMain(m *testing.M) {
	code := m.Run()
	if launched != nil {
		launched.close()
	}
	if pageServer != nil {
		pageServer.Close()
	}
	os.Exit(code)
}

// needChromium returns the shared browser, with the page host names mapped
// to the page server (servePages). It skips the test when chromium is not
// installed, or fails it under CI, where .ci/run installs the package.
func needChromium(t *testing.T) *chromium {
	t.Helper()
	path := requireChromium(t)
	launchOnce.Do(func() {
		pageServer = servePages()
		launched, launchErr = launch(path, loopbackAddr(pageServer), pageHosts)
	})
	if launchErr != nil {
		t.Fatalf("chromium (%s) is installed but would not start: %v", path, launchErr)
	}
	return launched
}

// requireChromium is the browser's path; without one, it skips the test,
// or fails it under CI.
func requireChromium(t *testing.T) string {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := fmt.Sprintf("no chromium on PATH or at /usr/bin/chromium: the browser test needs Debian's %q package (apt-get install -y %s)", debianPackage, debianPackage)
		if inCI() {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	return path
}

// launch starts headless Chromium with the flags this machine needs:
//   - --headless, --disable-gpu: no display, no GPU here;
//   - --no-sandbox: the tests run as root, and Chromium's sandbox refuses
//     to start as root;
//   - --disable-quic, --disable-background-networking,
//     --disable-component-update, --disable-sync, --no-first-run: no
//     traffic of the browser's own (the machine reaches no network, and
//     none is wanted);
//   - a fresh --user-data-dir: no profile, no cache or HSTS state carried in;
//   - --host-resolver-rules: the page hosts resolve to the page server on
//     loopback, and every other name to nothing (so nothing leaves the
//     machine), 127.0.0.1 excepted, which is where the runner listens;
//   - --ignore-certificate-errors: see below.
//
// Why HTTPS pages on port 443: the runner decides by comparing Origin with
// fixtures.AllowedOrigin, "https://app.example.test", octet for octet, so
// the page must have exactly that origin: scheme https, default port. A
// host-resolver rule may carry a port ("MAP app.example.test
// 127.0.0.1:PORT"), which sends the connection to the page server while the
// URL, and so the origin, keeps the default port. The page server's
// certificate is httptest's, which names none of these hosts; the flag
// lets Chromium take it. An HTTPS page is a secure context (the test
// asserts window.isSecureContext), which matters twice: a plain-http page
// on a non-localhost name is not one, and Chromium's Local (Private)
// Network Access treats pages by the address they were loaded from. The
// pages here are loaded from 127.0.0.1, so they sit in the loopback address
// space, as does the runner at http://127.0.0.1:PORT: a request within one
// address space needs no Access-Control-Request-Private-Network preflight
// and no permission, and http://127.0.0.1 is a potentially trustworthy URL,
// so mixed-content blocking leaves the https page's fetch alone. The test
// asserts that no request carried Access-Control-Request-Private-Network,
// so what it sees is CORS alone.
func launch(path, pageAddr string, hosts []string) (*chromium, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "postern-chromium-")
	if err != nil {
		return nil, err
	}
	var rules []string
	for _, h := range hosts {
		rules = append(rules, "MAP "+h+" "+pageAddr)
	}
	rules = append(rules, "MAP * ~NOTFOUND", "EXCLUDE 127.0.0.1")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", strings.Join(rules, ", ")),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(dir),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	c := &chromium{cancel: []context.CancelFunc{bcancel, acancel}, dataDir: dir, browser: bctx}
	// The first Run starts the process; it must not carry a timeout, which
	// would stop the browser with it. A watchdog bounds it instead.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(bctx, chromedp.Navigate("about:blank")) }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		err = fmt.Errorf("no answer from the browser in 60s")
	}
	if err != nil {
		c.close()
		return nil, err
	}
	c.elapsed = time.Since(start)
	return c, nil
}

func (c *chromium) close() {
	for _, cancel := range c.cancel {
		cancel()
	}
	_ = os.RemoveAll(c.dataDir)
}
