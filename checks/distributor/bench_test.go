package distributor_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/distributor"
	refdist "github.com/sigrix-io/postern-conformance/fixtures/distributor"
)

// BenchmarkDistributorCheck: a full check of the reference distributor
// over loopback, every input given, without the hooks or --rate-limit.
func BenchmarkDistributorCheck(b *testing.B) {
	srv, err := refdist.Start(refdist.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o := srv.Options(false)
	o.Timeout = 5 * time.Second
	for b.Loop() {
		if _, _, err := distributor.Check(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
