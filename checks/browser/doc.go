// Package browser holds the proof that §2.3's CORS rules model what a real
// browser does. It has no code a caller uses: its test drives Debian's
// headless Chromium (package chromium) with chromedp against the bundled
// reference runner, conformant and with each planted CORS fault, and
// asserts, case by case, that what the browser let a page read, blocked, or
// sent agrees with the checker's verdict on the rule that models it.
//
// Four pages ask, each from its own origin: the origin the runner allows
// (fixtures.AllowedOrigin), a stranger, a near miss of the allowed origin,
// and a sandboxed document (Origin: null). From each, fetch() POSTs run
// labelled application/json (which preflights), POSTs run as text/plain
// (which does not) and GETs describe; the allowed page also sends a few
// variants that each ask the preflight for one header more. A wrapping
// handler on the runner records which requests arrived; the browser's own
// reason for a block is read off the DevTools protocol. Every body is one
// the runner refuses, so the agent never runs, and the test proves its
// execution count stays 0.
//
// report_test.go looks at the HTML report (report/html) the same way: a
// conformant check, a failing one, a fleet, a walk, a distributor check and
// a check of a runner whose answers carry markup and script, each page
// opened from disk in the same browser and looked at as a person would
// (the verdict, the FAILs and their reproduce lines, a fold, the section
// map, the filter, a timeline, the page without JavaScript), the hostile
// one shown to have run nothing, with its Content-Security-Policy and
// without it.
//
// The tests skip when chromium is missing, saying which package to
// install, except under CI=true, where they fail.
package browser
