package checks

import (
	"net/http"
	"sort"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// codeStatus is §2.1's table: each defined code and the status it rides.
var codeStatus = map[string]int{
	"bad_request": 400, "unauthorized": 401, "not_found": 404, "not_entitled": 403,
	"idempotency_conflict": 409, "withdrawn": 410, "missing_credential": 424,
	"agent_error": 500, "not_implemented": 501, "unavailable": 503, "run_timeout": 504,
}

// distributorOnly are the codes §2.1 gives to the distributor side alone.
var distributorOnly = map[string]bool{"withdrawn": true}

// §2.1 Errors: swept over every refusal the other rules provoked.
var section2_1 = []*Rule{
	{
		ID: "2.1/envelope", Section: "2.1", Level: 1, Keyword: Must, Sweep: true,
		Title: "every refusal under /postern/v0/ carries the error envelope (a constraint only the schema states, such as a detail member's type, warns)",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, body any) {
				if !ex.EnvelopeJudged {
					t.schemaFindings("error", ex, body)
				}
			})
		},
	},
	{
		ID: "2.1/envelope-closed", Section: "2.1", Level: 1, Keyword: MustNot, Sweep: true,
		Title: "nothing stands beside error at the root of a refusal",
		Owns:  []string{"error:/*#additionalProperties", "error:/*#false"},
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, body any) {
				m, _ := body.(map[string]any)
				var extra []string
				for k := range m {
					if k != "error" {
						extra = append(extra, k)
					}
				}
				sort.Strings(extra)
				if len(extra) > 0 {
					t.Fail(ex, "%s: beside error the root carries %s", ex.RequestLine(), strings.Join(extra, ", "))
				}
			})
		},
	},
	{
		ID: "2.1/code-status", Section: "2.1", Level: 1, Keyword: Must, Binding: Inferred, Sweep: true,
		Title: "each defined error code travels on the HTTP status §2.1's table gives it (inferred: the table carries no keyword)",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, _ any) {
				c := ex.ErrorCode()
				if ex.EnvelopeJudged && ex.Status == http.StatusMethodNotAllowed {
					// HTTP's own answer to a wrong method: §2.1 defines no
					// code for it, so whichever defined code rides it is
					// not on another code's status.
					return
				}
				if want, ok := codeStatus[c]; ok && want != ex.Status {
					t.Fail(ex, "%s: code %s rides %d, and §2.1's table gives it %d (inferred: the table carries no keyword)", ex.RequestLine(), c, ex.Status, want)
				}
			})
		},
	},
	{
		ID: "2.1/runner-codes", Section: "2.1", Level: 1, Keyword: Must, Binding: Inferred, Sweep: true,
		Title: "a runner refuses only with the runner-side codes §2.1 defines (inferred: the table and the schema list them, no keyword forbids another)",
		Owns:  []string{"error:/error/code#enum"},
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, _ any) {
				c := ex.ErrorCode()
				switch {
				case c == "":
				case distributorOnly[c]:
					t.Fail(ex, "%s: %s is a distributor's code, unconstructible on a runner (inferred: §2.1's table says so without a keyword)", ex.RequestLine(), c)
				case codeStatus[c] == 0:
					t.Fail(ex, "%s: %q is not a code Postern 0.1 defines (inferred: no keyword forbids a code the table lacks)", ex.RequestLine(), c)
				}
			})
		},
	},
}

// sweep calls judge on every refusal under the prefix. Preflights are exempt
// (§2.1 leaves them to §2.3). A refusal marked EnvelopeJudged has its
// envelope's shape judged by the rule that provoked it; 2.1/envelope leaves
// it alone, the other sweeps judge it like any other.
func sweep(t *T, judge func(ex *wire.Exchange, body any)) {
	n := 0
	for _, ex := range t.Env.Exchanges() {
		if !isRefusal(ex) {
			continue
		}
		n++
		v, err := ex.JSON()
		if err != nil {
			v = string(ex.Body) // a non-JSON body is judged as the string it is
		}
		judge(ex, v)
	}
	if n == 0 {
		t.Skip("no refusal was provoked to judge")
		return
	}
	t.Note("judged %d refusals", n)
}

func isRefusal(ex *wire.Exchange) bool {
	return ex.Answered() && ex.Status >= 300 &&
		ex.Method != http.MethodOptions && strings.Contains(ex.URL, wire.Prefix)
}
