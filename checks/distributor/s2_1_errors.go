package distributor

import (
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/envelope"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §2.1 Errors, as a distributor sends them: judged over every refusal the
// run provoked.

// refused are the run's non-2xx answers under the prefix.
func refused(exs []*wire.Exchange) []*wire.Exchange {
	var out []*wire.Exchange
	seen := map[*wire.Exchange]bool{}
	for _, ex := range exs {
		if seen[ex] || !ex.Answered() || ex.Status < 300 || ex.Truncated || !strings.Contains(ex.URL, protocol.Prefix) {
			continue
		}
		seen[ex] = true
		out = append(out, ex)
	}
	return out
}

var section2_1 = []*Rule{
	{
		ID: "2.1/distributor-envelope", Section: "2.1", Level: 1, Keyword: Must,
		Title:    "every refusal under /postern/v0/ is the closed error envelope",
		Evidence: true,
		Probe: func(t *T) {
			all := refused(t.Evidence())
			for _, ex := range all {
				switch why, inferred := envelope.Fault(ex.Body); {
				case inferred:
					t.Warn(ex, "%s answered %d, and %s (inferred: only the schema types detail)", ex.RequestLine(), ex.Status, why)
				case why != "":
					t.Fail(ex, "%s answered %d, and %s: §2.1 gives every non-2xx answer under the prefix the envelope, with nothing beside error", ex.RequestLine(), ex.Status, why)
				}
			}
			t.Note("judged %d refusals", len(all))
		},
	},
	{
		ID: "2.1/distributor-codes", Section: "2.1", Level: 1, Keyword: MustNot,
		Title:    "no refusal is 401 or 403, and each code is one §2.1 gives a distributor, on its status",
		Evidence: true,
		Probe: func(t *T) {
			for _, ex := range refused(t.Evidence()) {
				code := ex.ErrorCode()
				status, distributor := protocol.IsDistributorCode(code)
				switch {
				case ex.Status == http.StatusUnauthorized:
					t.Fail(ex, "%s answered 401 (%s): a distributor answers no 401, since saying so confirms the token was once real (§5.5, §2.1)", ex.RequestLine(), ex.Brief())
				case ex.Status == http.StatusForbidden:
					t.Fail(ex, "%s answered 403 (%s): a distributor answers no 403, since it confirms the agent exists (§5.5, §2.1)", ex.RequestLine(), ex.Brief())
				case code == "":
				case protocol.StatusOf(code) == 0:
					t.Warn(ex, "%s answered code %q, which §2.1 does not define (inferred: the schema lists the codes an implementation emits)", ex.RequestLine(), code)
				case !distributor:
					t.Fail(ex, "%s answered code %q, which §2.1's table gives only a runner: a distributor cannot construct it", ex.RequestLine(), code)
				case status != ex.Status:
					t.Fail(ex, "%s answered code %q with status %d: §2.1 gives it %d", ex.RequestLine(), code, ex.Status, status)
				}
			}
		},
	},
}
