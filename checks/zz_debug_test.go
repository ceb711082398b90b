package checks_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/fixtures"
)

func TestZZDebugStarts(t *testing.T) {
	for _, c := range []fixtures.Config{{Level: 3, Posture: "bytes-output"}, {Level: 3, Posture: "default"}, lifeConfig(3, "slow-agent")} {
		srv, _ := fixtures.Start(c, 0)
		o := checks.Options{Target: srv.URL, Timeout: 5 * time.Second, Patience: 400 * time.Millisecond, Execute: true, Origin: fixtures.AllowedOrigin, MaxRuns: 0}
		env, _, _ := checks.Check(context.Background(), o)
		for _, ex := range env.Session.Exchanges() {
			if ex.Method == "POST" && (len(ex.ReqBody) > 0 && !ex.Sent.IsZero()) {
				t.Logf("%s %d %v %s", ex.URL[len(ex.URL)-6:], ex.Status, ex.Err != nil, ex.Note)
			}
		}
		srv.Close(); t.Log("----", env.AgentStarts())
	}
}
