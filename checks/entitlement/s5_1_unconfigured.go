package entitlement

import "github.com/sigrix-io/postern-conformance/wire"

// §5.1 The distributor is optional: a runner launched with none of the
// distributor's variables set.
var section5_1 = []*Rule{
	{
		ID: "5.1/not-required-unconfigured", Section: "5.1", Level: 1, Keyword: Must,
		Title: "launched with no distributor configured: status reports not_required, and run and stream are never refused on entitlement grounds",
		Probe: func(t *T) {
			s := beginUnconfigured(t)
			defer s.finish()
			e := s.status("launched with no distributor configured")
			if e.state != "not_required" {
				t.Fail(e.ex, "launched with no distributor configured, status reports the entitlement %q: §5.1 requires not_required, which is how a client tells a free agent from one waiting on its distributor", e.state)
			}
			// A runner just launched has started no run, so a 503 cannot be
			// the capacity refusal of §4.5: it is the entitlement's.
			failEach(t, s.served("launched with no distributor configured"), func(ex *wire.Exchange) bool {
				return refusedAs(ex, "not_entitled") || refusedAs(ex, "unavailable")
			}, func(verbs, answer string) string {
				return "launched with no distributor configured and no run ever started, " + verbs + " answered " + answer + ": §5.1 forbids refusing on entitlement grounds where no distributor is configured"
			})
		},
	},
}
