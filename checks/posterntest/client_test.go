package posterntest_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/client"
	"github.com/sigrix-io/postern-conformance/checks/posterntest"
	refclient "github.com/sigrix-io/postern-conformance/fixtures/client"
)

// A Go client checked from its own tests, in process: the reference
// client, handed the contract's variables.
func TestReferenceClient(t *testing.T) {
	posterntest.RunClient(t, client.Func(func(ctx context.Context, env map[string]string, out, errs io.Writer) int {
		return refclient.Main(ctx, env, out, errs)
	}), posterntest.Timeout(10*time.Second))
}
