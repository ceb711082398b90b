package runner

import (
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/envelope"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §2.1 Errors: swept over every refusal the other rules provoked.
var section2_1 = []*Rule{
	{
		ID: "2.1/envelope", Section: "2.1", Level: 1, Keyword: Must, Evidence: true,
		Title: "every refusal under /postern/v0/ carries the error envelope (a constraint only the schema states, such as a detail member's type, warns)",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, body any) {
				if !wrongMethod(ex) {
					schemaFindings(t, "error", ex, body)
				}
			})
		},
	},
	{
		ID: "2.1/envelope-closed", Section: "2.1", Level: 1, Keyword: MustNot, Evidence: true,
		Title:  "nothing stands beside error at the root of a refusal",
		Claims: []Claim{{Doc: "error", Path: "/*", Keyword: "additionalProperties"}, {Doc: "error", Path: "/*", Keyword: "false"}},
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, body any) {
				m, _ := body.(map[string]any)
				if extra := envelope.Extras(m); len(extra) > 0 {
					t.Fail(ex, "%s: beside error the root carries %s", ex.RequestLine(), strings.Join(extra, ", "))
				}
			})
		},
	},
	{
		ID: "2.1/code-status", Section: "2.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.1", Evidence: true,
		Title: "each defined error code travels on the HTTP status §2.1's table gives it",
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, _ any) {
				c := ex.ErrorCode()
				if wrongMethod(ex) && ex.Status == http.StatusMethodNotAllowed {
					// HTTP's own answer to a wrong method: §2.1 defines no
					// code for it, so whichever defined code rides it is
					// not on another code's status.
					return
				}
				if want := protocol.StatusOf(c); want != 0 && want != ex.Status {
					t.Fail(ex, "%s: code %s rides %d, and §2.1's table gives it %d", ex.RequestLine(), c, ex.Status, want)
				}
			})
		},
	},
	{
		ID: "2.1/runner-codes", Section: "2.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.1", Evidence: true,
		Title:  "a runner refuses only with the runner-side codes §2.1 defines",
		Claims: []Claim{{Doc: "error", Path: "/error/code", Keyword: "enum"}},
		Probe: func(t *T) {
			sweep(t, func(ex *wire.Exchange, _ any) {
				c := ex.ErrorCode()
				switch {
				case c == "":
				case protocol.StatusOf(c) == 0:
					t.Fail(ex, "%s: %q is not a code Postern 0.1 defines; §2.1 enumerates the codes a conforming runner emits", ex.RequestLine(), c)
				case !runnerSide(c):
					t.Fail(ex, "%s: %s is a distributor's code, unconstructible on a runner (§2.1)", ex.RequestLine(), c)
				}
			})
		},
	},
}

// sweep calls judge on every refusal under the prefix. Preflights are exempt
// (§2.1 leaves them to §2.3). A refusal of a wrong method has its
// envelope's shape judged by 2.1/wrong-method; 2.1/envelope leaves it
// alone, the other sweeps judge it like any other.
func sweep(t *T, judge func(ex *wire.Exchange, body any)) {
	n := 0
	for _, ex := range t.Evidence() {
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
		t.Undecided("no refusal was provoked to judge")
		return
	}
	t.Note("judged %d refusals", n)
}

// runnerSide reports whether §2.1's table lets a runner emit code.
func runnerSide(code string) bool {
	c, ok := protocol.LookupCode(code)
	return ok && c.Sides&protocol.Runner != 0
}

// wrongMethod reports a request to one of the four verbs with a method the
// verb does not take (OPTIONS aside: a preflight is §2.3's). Its refusal is
// 2.1/wrong-method's to judge, and HTTP's own 405 may carry any code.
func wrongMethod(ex *wire.Exchange) bool {
	_, verb, ok := strings.Cut(ex.URL, protocol.Prefix)
	if !ok || !protocol.IsVerb(verb) {
		return false
	}
	switch ex.Method {
	case http.MethodOptions:
		return false
	case http.MethodPost:
		return !protocol.Posts(verb)
	case http.MethodGet, http.MethodHead:
		return protocol.Posts(verb)
	}
	return true
}
