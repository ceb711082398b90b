package runner

// The verifiers several rules share: small judgements of one exchange, read
// the same way wherever a rule needs them (h2spec keeps its own in one
// place for the same reason).

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// finding is t.Warn for a finding that is inferred (neither a bold keyword
// nor the wire contract binds it: see Binding), t.Fail otherwise.
func finding(t *T, inferred bool) func(ex *wire.Exchange, format string, args ...any) {
	if inferred {
		return t.Warn
	}
	return t.Fail
}

// unavailable is a 503 unavailable: a runner at capacity may answer it to
// any request before its agent starts (§4.5, §4.6), so it decides nothing
// about the media type.
func unavailable(ex *wire.Exchange) bool {
	return ex.Is(http.StatusServiceUnavailable, "unavailable")
}

// stepTwoAnswer is either refusal §4.6's step 2 gives. Which of the two
// fits the posture is judged by the §5.7 rules, not here.
func stepTwoAnswer(ex *wire.Exchange) bool {
	return ex.Is(http.StatusForbidden, "not_entitled") || ex.Is(http.StatusServiceUnavailable, "unavailable")
}

// stillReading: a withheld body got no answer within patience, so the
// runner was waiting for the body.
func stillReading(ex *wire.Exchange) bool {
	return !ex.Answered() && errors.Is(ex.Err, wire.ErrNoAnswer)
}

// labelled is a header carrying contentType, or none for "".
func labelled(contentType string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return h
}

func is2xx(ex *wire.Exchange) bool { return ex.Status >= 200 && ex.Status < 300 }

// isRefusal is an answer under the prefix in a status above 2xx, a
// preflight aside (§2.1 leaves preflights to §2.3).
func isRefusal(ex *wire.Exchange) bool {
	return ex.Answered() && ex.Status >= 300 &&
		ex.Method != http.MethodOptions && strings.Contains(ex.URL, wire.Prefix)
}
