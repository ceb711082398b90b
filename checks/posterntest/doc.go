// Package posterntest checks a Postern runner from go test, with the same
// engine and rule registry as the postern-conformance command and no
// subprocess:
//
//	func TestConformance(t *testing.T) {
//		posterntest.Run(t, myrunner.New(cfg), // an http.Handler, or a URL
//			posterntest.Origin("https://app.example.com"))
//	}
//
// Each rule is a subtest named by its ID: the section's subtest, and the
// rule's name beneath it, so 4.2/run-id-unique is
// TestConformance/4.2/run-id-unique and go test's -run selects it:
//
//	go test -run 'TestConformance/4.2/run-id-unique'
//	go test -run 'TestConformance/^4\.2$'     # every rule of §4.2 (4.2.x is a section of its own)
//	go test -run 'TestConformance/4.2' -v     # §4.2 and its subsections, each PASS listed
//
// The elements are regular expressions, matched unanchored, as go test
// always matches them. Only the rules -run (and -skip) select are checked
// at all: a run of one rule sends that rule's probes, and never starts the
// agent for another one. The Rules option selects by the command's
// patterns instead ("4.2", "4.2/run-*").
//
// A FAIL fails its subtest with t.Error, showing the finding and its
// evidence as the command's text report draws them; a WARN is logged (a
// failure under Strict); a SKIP skips with its reason; a FAIL the baseline
// excuses is logged as a known failure. The test as a whole fails exactly
// where the command would exit non-zero.
//
// RunEntitlement walks a runner through §5 as `postern-conformance
// entitlement` does, launching it once per step (LaunchHandler serves an
// http.Handler per step in process). Check runs the check outside a test
// and returns the command's report.
package posterntest
