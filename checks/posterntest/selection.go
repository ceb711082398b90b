package posterntest

import (
	"flag"

	"github.com/sigrix-io/postern-conformance/checks/posterntest/pace"
)

// goTestSelects reports whether go test's -run and -skip flags let the
// test named name (its slash-separated full name) run, as the testing
// package decides it (pace.GoTestSelects, which checks/posterntest/pace's Cases
// asks too). Run asks it before checking anything, so that `go test -run
// 'TestRunner/4.2/run-id-unique'` probes the runner for that rule alone,
// rather than for every rule with only one of them shown (with Execute,
// every run would start the agent).
//
// It errs towards running: an unreadable pattern selects everything. And
// where it is wrong the other way (a subtest the testing package runs
// though this said it would not), Run checks that rule on its own when its
// subtest starts.
func goTestSelects(name string) bool { return pace.GoTestSelects(name) }

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
