package posterntest_test

import (
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/posterntest"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
)

// The reference distributor, served in process as a handler, hooks
// included: every rule a subtest, none failing.
func TestRunDistributor(t *testing.T) {
	d, err := refdist.New(refdist.Config{Stale: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	posterntest.RunDistributor(t, d, d.Options(true), posterntest.Timeout(5*time.Second))
}
