package browser

// The HTML report (report/html) as a person would look at it: each page
// written the way the command writes it, loaded from disk (file://) in the
// shared headless Chromium, and looked at: no console error, the verdict
// visible and as the JSON report words it, as many FAIL entries as the JSON
// report counts, a folded rule that opens, section tiles that lead to
// their rules, the filter, the page without JavaScript, a timeline on the
// timed rules, and a page built from a hostile runner's answers that runs
// nothing, with its Content-Security-Policy and without it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	cdppage "github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/entitlement"
	"github.com/sigrix-io/postern-conformance/checks/fleet"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"github.com/sigrix-io/postern-conformance/fixtures"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
	"github.com/sigrix-io/postern-conformance/report"
	htmlreport "github.com/sigrix-io/postern-conformance/report/html"
	"github.com/sigrix-io/postern-conformance/wire/clock"
)

// reportPage is one page written to disk, with what its JSON report says.
type reportPage struct {
	name    string
	file    string
	verdict string // the verdict's text, as the JSON report has it
	fails   int    // FAILs not excused, as the JSON report counts them
	timed   bool   // a FAIL of it was judged on a timeline
	hostile bool   // built from a hostile runner's answers
}

// hostileMarkup is what a hostile runner puts in every answer it can:
// markup that would run a script, open a dialog, load a frame or an
// image, restyle the page, or close the elements its text is shown in.
const hostileMarkup = `</pre></details></figure></svg></style></title><script>window.__pwned=1;alert(1)</script>` +
	`<img src=x onerror="window.__pwned=2"><iframe src="javascript:parent.__pwned=3"></iframe>` +
	`<svg onload="window.__pwned=4"></svg><style>body{display:none}</style><a href="javascript:window.__pwned=5">x</a>`

// hostileRunner answers describe and status with the markup in every
// string it can, and every other request with a refusal quoting it, each
// with the markup in a header too. The check of it FAILs widely, quoting
// what it sent.
func hostileRunner() http.Handler {
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Hostile", hostileMarkup)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/postern/v0/describe":
			fmt.Fprintf(w, `{"postern":"0.1","agent":{"id":%s,"name":%s,"version":"1.0.0","description":%s},"inputs":{"q":{"type":"string","description":%s}},"output":{"type":"text"}}`,
				str("acme/x"+hostileMarkup), str(hostileMarkup), str(hostileMarkup), str(hostileMarkup))
		case "/postern/v0/status":
			fmt.Fprintf(w, `{"postern":"0.1","state":"ready","level":1,"agent":{"id":%s},"credentials":{"missing":[],"satisfied":true},"entitlement":{"state":%s}}`,
				str("acme/x"+hostileMarkup), str(hostileMarkup))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprint(w, hostileMarkup)
		}
	})
}

// writePage writes what write renders to dir/name.html.
func writePage(dir, name string, write func(*bytes.Buffer) error) (string, error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return "", err
	}
	file := filepath.Join(dir, name+".html")
	return file, os.WriteFile(file, b.Bytes(), 0o644)
}

// jsonOf is what the JSON report of r says: its verdict and FAILs.
func jsonOf(r *report.Report) (verdict string, fails int, err error) {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		return "", 0, err
	}
	var doc struct {
		Verdict struct{ Text string } `json:"verdict"`
		Counts  struct{ Fail int }    `json:"counts"`
	}
	err = json.Unmarshal(b.Bytes(), &doc)
	return doc.Verdict.Text, doc.Counts.Fail, err
}

// checkPage checks the runner at target as the command does and writes
// its page.
func checkPage(ctx context.Context, dir, name, target string, hostile bool) (reportPage, error) {
	o := runner.Options{Target: target, Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second, Patience: 300 * time.Millisecond, Deadline: 30 * time.Second}
	started := time.Now()
	env, results, err := runner.Check(ctx, o)
	if err != nil {
		return reportPage{}, err
	}
	r := report.Assemble(env, results, o, nil, report.Run{ToolVersion: "browser-test", Started: started, Elapsed: time.Since(started)})
	return pageOf(dir, name, r, hostile)
}

func pageOf(dir, name string, r *report.Report, hostile bool) (reportPage, error) {
	p := reportPage{name: name, hostile: hostile}
	var err error
	if p.verdict, p.fails, err = jsonOf(r); err != nil {
		return p, err
	}
	for id := range r.Timelines {
		for _, res := range r.Results {
			p.timed = p.timed || (res.Rule.ID == id && res.Outcome == engine.Fail)
		}
	}
	p.file, err = writePage(dir, name, func(b *bytes.Buffer) error { return htmlreport.Write(b, r) })
	return p, err
}

// walkPage walks the reference runner carrying fault through two
// sections of §5, on a fake clock, and writes the page.
func walkPage(ctx context.Context, dir string, fault string) (reportPage, error) {
	c := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	launcher := entitlement.Func(func(_ context.Context, v entitlement.Vars) (entitlement.Instance, error) {
		srv, err := fixtures.Start(fixtures.Config{Faults: []string{fault}, Distributor: v.Distributor, Token: v.Token,
			Cache: filepath.Join(v.State, "cache.json"), Clock: c, DistributorTimeout: 200 * time.Millisecond}, 0)
		if err != nil {
			return nil, err
		}
		return entitlement.Started{Addr: srv.URL, Halt: srv.Close}, nil
	})
	o := entitlement.Options{Launcher: launcher, Clock: c, Timeout: 2 * time.Second, CheckGrace: 50 * time.Millisecond, Rules: []string{"5.4", "5.7.1"}}
	started := time.Now()
	env, results, err := entitlement.Walk(ctx, o)
	if err != nil {
		return reportPage{}, err
	}
	recs := engine.Records(results)
	r := report.New(report.Header{Mode: entitlement.Mode, Target: entitlement.Target(o), Options: report.Options{Rules: o.Rules, Timeout: o.Timeout}},
		recs, entitlement.Decide(recs, nil), nil, report.Run{ToolVersion: "browser-test", Started: started, Elapsed: time.Since(started)})
	r.Timelines = env.Timelines()
	return pageOf(dir, "walk", r, false)
}

// distributorPage checks the reference distributor carrying fault, hooks
// included, and writes the page.
func distributorPage(ctx context.Context, dir, fault string) (reportPage, error) {
	srv, err := refdist.Start(refdist.Config{Faults: []string{fault}, Stale: time.Second}, 0)
	if err != nil {
		return reportPage{}, err
	}
	defer srv.Close()
	o := srv.Options(true)
	o.Timeout = 5 * time.Second
	o.Rules = []string{"5.3", "5.4"} // the timed rules and the check's own: enough of a page, in less time
	started := time.Now()
	env, results, err := distributor.Check(ctx, o)
	if err != nil {
		return reportPage{}, err
	}
	recs := engine.Records(results)
	r := report.New(report.Header{Mode: distributor.Mode, Target: o.Target, Options: report.Options{Timeout: o.Timeout}},
		recs, distributor.Decide(recs, nil), nil, report.Run{ToolVersion: "browser-test", Started: started, Elapsed: time.Since(started)})
	r.Timelines = env.Timelines()
	return pageOf(dir, "distributor", r, false)
}

// fleetPage checks a fleet (a conformant runner, a failing one, and one
// that cannot be reached) and writes its page.
func fleetPage(ctx context.Context, dir string, conformant, failing, gone string) (reportPage, error) {
	o := runner.Options{Origin: fixtures.AllowedOrigin, Timeout: 5 * time.Second, Patience: 300 * time.Millisecond, Deadline: 30 * time.Second}
	started := time.Now()
	results := fleet.Check(ctx, []string{conformant, failing, gone}, fleet.Options{Check: o, Parallel: 2})
	f := report.AssembleFleet(results, o, nil, report.Run{ToolVersion: "browser-test", Started: started, Elapsed: time.Since(started)})
	p := reportPage{name: "fleet"}
	for _, rn := range f.Runners {
		if rn.Report != nil {
			_, n, err := jsonOf(rn.Report)
			if err != nil {
				return p, err
			}
			p.fails += n
		}
	}
	var err error
	p.file, err = writePage(dir, "fleet", func(b *bytes.Buffer) error { return htmlreport.WriteFleet(b, f) })
	return p, err
}

// buildPages makes every page at once (each check is mostly waiting).
func buildPages(t *testing.T, dir string) []reportPage {
	t.Helper()
	var failed error
	serve := func(faults ...string) string {
		srv, err := fixtures.Start(fixtures.Config{Faults: faults}, 0)
		if err != nil {
			failed = err
			return "http://127.0.0.1:1"
		}
		t.Cleanup(srv.Close)
		return srv.URL
	}
	conformant := serve()
	failing := serve("bare-405", "describe-other-agent", "stranger-wildcard", "run-reads-text-plain")
	hostile := httptest.NewServer(hostileRunner())
	t.Cleanup(hostile.Close)
	closed, err := fixtures.Start(fixtures.Config{}, 0) // a runner that is gone
	if err == nil {
		closed.Close()
	} else {
		failed = err
	}
	if failed != nil {
		t.Errorf("starting the reference runners: %v", failed)
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	builds := []func() (reportPage, error){
		func() (reportPage, error) { return distributorPage(ctx, dir, "revocation-ignored") },
		func() (reportPage, error) { return checkPage(ctx, dir, "conformant", conformant, false) },
		func() (reportPage, error) { return checkPage(ctx, dir, "failing", failing, false) },
		func() (reportPage, error) { return checkPage(ctx, dir, "hostile", hostile.URL, true) },
		func() (reportPage, error) { return fleetPage(ctx, dir, conformant, failing, closed.URL) },
		func() (reportPage, error) { return walkPage(ctx, dir, "ent-revoked-final") },
	}
	pages := make([]reportPage, len(builds))
	errs := make([]error, len(builds))
	took := make([]time.Duration, len(builds))
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, build := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			pages[i], errs[i] = build()
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("building page %d: %v", i, err)
			return nil
		}
		t.Logf("page %s: checked and written in %s", pages[i].name, took[i].Round(time.Millisecond))
	}
	return pages
}

// looked is what a tab saw while a page was open.
type looked struct {
	mu       sync.Mutex
	problems []string // console errors, exceptions, error log entries, dialogs
}

func (l *looked) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, a...))
}

func (l *looked) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.problems...)
}

// listen records what would be an error a person saw in the console, and
// dismisses a dialog (there must be none).
func (l *looked) listen(ctx *context.Context) func(ev any) {
	return func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				l.add("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *cdpruntime.EventExceptionThrown:
			l.add("exception: %s", ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				l.add("log %s: %s", ev.Entry.Level, ev.Entry.Text)
			}
		case *cdppage.EventJavascriptDialogOpening:
			l.add("a dialog opened: %s", ev.Message)
			go func() {
				_ = chromedp.Do(*ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					_, err := cdp.Call(ctx, t, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
					return err
				}))
			}()
		}
	}
}

// open loads file in a tab of its own, with JavaScript on or off.
func open(t *testing.T, c *chromium, file string, script bool) (context.Context, *looked) {
	t.Helper()
	l := &looked{}
	var ctx context.Context
	ctx, cancel := chromedp.NewContext(c.browser, chromedp.WithListener(l.listen(&ctx)))
	t.Cleanup(cancel)
	// The tab lives as long as the context of its first run, so that run
	// has no deadline of its own; the watchdog of launch bounds the
	// browser, and the steps after it have theirs.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1200, Height: 900, DeviceScaleFactor: 1})
			return err
		}),
	}
	if !script {
		steps = append(steps, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}))
	}
	steps = append(steps, chromedp.Navigate("file://"+file))
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	if err := chromedp.Do(lctx, steps...); err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	return ctx, l
}

// eval evaluates expr in the tab, under a deadline of its own.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestReportPages is the HTML report looked at in a real browser.
func TestReportPages(t *testing.T) {
	start := time.Now()
	requireChromium(t)
	dir := t.TempDir()
	if keep := os.Getenv("POSTERN_REPORT_PAGES"); keep != "" {
		dir = keep // to look at the pages and screenshots afterwards
	}
	// The pages are built while the browser starts.
	built := make(chan []reportPage, 1)
	go func() { built <- buildPages(t, dir) }()
	c := needChromium(t)
	pages := <-built
	if pages == nil {
		t.FailNow()
	}
	t.Logf("pages built and chromium started at %s", time.Since(start).Round(time.Millisecond))
	t.Run("pages", func(t *testing.T) {
		for _, p := range pages {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel() // a tab each; go test runs GOMAXPROCS of them at once
				lookAtPage(t, c, dir, p)
			})
		}
		t.Run("no-javascript", func(t *testing.T) {
			t.Parallel()
			noScript(t, c, dir, pageNamed(pages, "failing"))
		})
	})
	t.Logf("whole test: %s (screenshots in %s)", time.Since(start).Round(time.Millisecond), dir)
}

func pageNamed(pages []reportPage, name string) reportPage {
	for _, p := range pages {
		if p.name == name {
			return p
		}
	}
	panic("no page " + name)
}

// lookAtPage opens p and looks at it, saving its screenshots in dir.
func lookAtPage(t *testing.T, c *chromium, dir string, p reportPage) {
	start := time.Now()
	ctx, l := open(t, c, p.file, true)
	opened := time.Since(start)
	lookAt(t, ctx, p)
	looked := time.Since(start)
	shot(t, ctx, filepath.Join(dir, p.name+".png"), p.name != "fleet") // the fleet's first FAIL is the failing page's
	shots := time.Since(start)
	if p.hostile {
		ranNothing(t, ctx, p.file)
	}
	assert(t, len(l.seen()) == 0, "the page logged %q", l.seen())
	t.Logf("opened at %s, looked at by %s, screenshots by %s, done at %s", opened.Round(time.Millisecond), looked.Round(time.Millisecond), shots.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// noScript opens the failing page p with JavaScript off: the verdict
// shows, every FAIL is open, the filter bar (which needs the script) is
// not shown.
func noScript(t *testing.T, c *chromium, dir string, p reportPage) {
	ctx, l := open(t, c, p.file, false)
	assert(t, eval[bool](t, ctx, `document.getElementById("filters").hidden`), "without script the filter bar stays hidden")
	assert(t, eval[bool](t, ctx, `document.getElementById("verdict").getBoundingClientRect().height > 0`), "the verdict shows")
	n := eval[int](t, ctx, `Array.from(document.querySelectorAll('details.rule[data-outcome="FAIL"]')).filter(d => d.open && d.getBoundingClientRect().height > 0).length`)
	assert(t, n == p.fails, "%d FAILs shown open without script, want %d", n, p.fails)
	shot(t, ctx, filepath.Join(dir, p.name+"-no-javascript.png"), false)
	assert(t, len(l.seen()) == 0, "the page logged %q", l.seen())
}

func assert(t *testing.T, ok bool, format string, a ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, a...)
	}
}

// looks are what lookAt saw of a page.
type looks struct {
	Verdict      string     // the verdict's text, where it shows on the first screen
	Fails        int        // FAIL entries
	FoldedFails  int        // … of them folded
	Bare         int        // FAIL findings with evidence and no reproduce line
	Opened       []bool     // a folded PASS: hidden before, open after a click, shown after
	Tiles        []followed // each tile of the section map, clicked
	DeadCells    []string   // fleet cells leading nowhere
	FailFilter   int        // rules shown by the FAIL filter
	Timeline     []float64  // a timed FAIL's: width, height, judged probes, judged edges, judged lines
	BodyNotShown bool
}

// followed is a link clicked: where it said it went, where it went.
type followed struct {
	Href, Hash string
	Section    bool // the hash names a section
	Top        bool // scrolled to the top of the window (or as far as the page goes)
}

// lookAt checks what a person would: the verdict, the FAILs, a fold, the
// section map, the filter, and on a timed FAIL its timeline. It looks in
// one script, so that a loaded machine pays one round trip a page.
func lookAt(t *testing.T, ctx context.Context, p reportPage) {
	t.Helper()
	saw := eval[looks](t, ctx, `(() => {
		const all = (q, el) => Array.from((el || document).querySelectorAll(q));
		const fails = 'details.rule[data-outcome="FAIL"]';
		const out = {};
		const v = document.getElementById("verdict"), vr = v.getBoundingClientRect();
		out.Verdict = vr.height > 0 && vr.top < innerHeight ? v.textContent : "";
		out.Fails = all(fails).length;
		out.FoldedFails = all(fails + ':not([open])').length;
		out.Bare = all(fails + ' li.finding').filter(li => li.querySelector('.evidence') && !li.querySelector('.reproduce')).length;
		const d = document.querySelector('details.rule[data-outcome="PASS"]:not([open])');
		out.Opened = [];
		if (d) {
			const body = d.querySelector('.body'), before = body.checkVisibility();
			d.querySelector('summary').click();
			out.Opened = [!before, d.open, body.checkVisibility() && body.getBoundingClientRect().height > 0];
		}
		out.Tiles = all('nav.map a.tile').map(a => {
			a.click();
			const el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
			return {Href: a.getAttribute('href'), Hash: location.hash, Section: !!el && el.tagName === 'SECTION',
				Top: !!el && (Math.abs(el.getBoundingClientRect().top) < 2 || innerHeight + scrollY >= document.documentElement.scrollHeight - 2)};
		});
		out.DeadCells = all('table.fleet td.cell a').map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)));
		out.FailFilter = -1;
		const bar = document.querySelector('#filters button[data-show="FAIL"]');
		if (bar && out.Fails > 0) {
			bar.click();
			out.FailFilter = all('details.rule').filter(d => d.getBoundingClientRect().height > 0).length;
			document.querySelector('#filters button[data-show="ALL"]').click();
		}
		out.Timeline = [];
		const f = document.querySelector(fails + ' figure.timeline');
		if (f) {
			const svg = f.querySelector('svg').getBoundingClientRect();
			out.Timeline = [svg.width, svg.height, all('circle.probe.judged', f).length, all('line.edge.judged', f).length, all(fails + ' p.judged').length];
		}
		out.BodyNotShown = getComputedStyle(document.body).display === 'none';
		scrollTo(0, 0);
		return out;
	})()`)

	// The verdict, on the first screen, in the JSON report's words.
	if p.name == "fleet" {
		assert(t, strings.Contains(saw.Verdict, "1 conformant, 1 nonconformant, 1 not checked"), "fleet verdict %q", saw.Verdict)
	} else {
		assert(t, saw.Verdict == p.verdict, "verdict shown %q, the JSON report's %q", saw.Verdict, p.verdict)
	}
	assert(t, !saw.BodyNotShown, "the page is hidden")
	// As many FAIL entries as the JSON report counts, each open, each
	// finding with evidence showing its curl line or why there is none.
	assert(t, saw.Fails == p.fails, "%d FAIL entries on the page, the JSON report counts %d", saw.Fails, p.fails)
	assert(t, p.name == "conformant" || saw.Fails > 0, "a failing page shows its FAILs")
	assert(t, saw.FoldedFails == 0, "%d FAILs folded", saw.FoldedFails)
	assert(t, saw.Bare == 0, "%d FAIL findings with evidence and no reproduce line", saw.Bare)
	// A folded rule opens, and shows what it folded.
	if p.name != "hostile" {
		o := saw.Opened
		assert(t, len(o) == 3 && o[0] && o[1] && o[2], "a folded PASS opens: %v", o)
	}
	// Every tile of the section map leads to its section, at the top of
	// the window; so does every cell of a fleet's table.
	assert(t, len(saw.Tiles) > 0, "no section map")
	for _, f := range saw.Tiles {
		assert(t, f.Hash == f.Href && f.Section && f.Top, "a tile led elsewhere: %+v", f)
	}
	assert(t, len(saw.DeadCells) == 0, "fleet cells lead nowhere: %v", saw.DeadCells)
	// The filter shows the FAILs alone.
	if saw.Fails > 0 {
		assert(t, saw.FailFilter == saw.Fails, "the FAIL filter shows %d rules, want %d", saw.FailFilter, saw.Fails)
	}
	// A timed FAIL is drawn, its judged moment ringed, the edges it was
	// judged against marked, and said in words.
	if p.timed {
		g := saw.Timeline
		ok := len(g) == 5 && g[0] > 300 && g[1] > 60 && g[2] >= 1 && g[3] >= 1 && g[4] >= 1
		assert(t, ok, "a timed FAIL's timeline: [width height judged-probes judged-edges judged-lines] %v", g)
	}
}

// ranNothing checks that nothing the hostile runner sent ran or became
// an element: with the page's policy, and again with the policy taken
// out, so that it is the escaping that holds, not only the policy.
func ranNothing(t *testing.T, ctx context.Context, file string) {
	t.Helper()
	check := func(ctx context.Context, how string) {
		got := eval[map[string]any](t, ctx, `({
			pwned: typeof window.__pwned,
			scripts: document.scripts.length,
			imgs: document.images.length,
			frames: document.querySelectorAll('iframe').length,
			svgOnload: document.querySelectorAll('svg[onload]').length,
			jsLinks: document.querySelectorAll('a[href^="javascript:"]').length,
			styles: document.querySelectorAll('style').length,
			bodyShown: getComputedStyle(document.body).display !== 'none',
			quoted: document.body.textContent.includes('<script>window.__pwned=1;alert(1)</script>'),
		})`)
		want := map[string]any{"pwned": "undefined", "scripts": float64(1), "imgs": float64(0), "frames": float64(0), "svgOnload": float64(0),
			"jsLinks": float64(0), "styles": float64(1), "bodyShown": true, "quoted": true}
		for k, v := range want {
			assert(t, got[k] == v, "%s: %s is %v, want %v", how, k, got[k], v)
		}
	}
	check(ctx, "with its policy")

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAll(raw, nil)
	assert(t, !bytes.Equal(bare, raw), "the page carries a policy")
	file = strings.TrimSuffix(file, ".html") + "-no-policy.html"
	if err := os.WriteFile(file, bare, 0o644); err != nil {
		t.Fatal(err)
	}
	c := needChromium(t)
	ctx2, l := open(t, c, file, true)
	check(ctx2, "without its policy")
	assert(t, len(l.seen()) == 0, "without its policy, the page logged %q", l.seen())
}

// shot saves a screenshot of the top of the page (the verdict, the facts,
// the section map) as file and, with firstFail, one of the start of its
// first FAIL (evidence, curl line, timeline) beside it, where there is one. A page of
// a few hundred rules is tens of thousands of pixels long: a picture of all
// of it costs more than it shows.
func shot(t *testing.T, ctx context.Context, file string, firstFail bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	clip := eval[[]float64](t, ctx, `(() => {
		scrollTo(0, 0);
		const f = document.querySelector('details.rule[data-outcome="FAIL"]');
		if (!f) return [];
		const r = f.getBoundingClientRect();
		return [r.left + scrollX, r.top + scrollY, r.width, Math.min(r.height, 1800)];
	})()`)
	capture := func(name string, clip *cdppage.Viewport) {
		png, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
			res, err := cdp.Call(ctx, t, cdppage.CaptureScreenshot, cdppage.CaptureScreenshotParams{
				Clip: clip, CaptureBeyondViewport: ptr(clip != nil), OptimizeForSpeed: ptr(true)})
			if err != nil {
				return nil, err
			}
			return res.Data, nil
		})
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		save(t, name, png)
	}
	capture(file, nil)
	if firstFail && len(clip) == 4 {
		capture(strings.TrimSuffix(file, ".png")+"-first-fail.png", &cdppage.Viewport{X: clip[0], Y: clip[1], Width: clip[2], Height: clip[3], Scale: 1})
	}
}

func ptr[T any](v T) *T { return &v }

func save(t *testing.T, file string, png []byte) {
	t.Helper()
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Error(err)
	}
}
