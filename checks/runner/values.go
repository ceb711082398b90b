package runner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Small readers and writers of decoded JSON values, shared by the families.
// Path, Str and AsInt (env.go) are the exported ones.

// floatOf reads a JSON number.
func floatOf(v any) (float64, bool) { return wire.Number(v) }

// wholeNumber reads a JSON number, reporting whether it is a whole one.
func wholeNumber(v any) (float64, bool) {
	f, ok := floatOf(v)
	if !ok {
		return 0, false
	}
	return f, f == math.Trunc(f)
}

// stringList reads a JSON array of strings; false where v is not an array
// or any member is not a string.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// stringsAt is Path for an array of strings.
func stringsAt(m map[string]any, keys ...string) ([]string, bool) {
	v, _ := Path(m, keys...)
	return stringList(v)
}

// jsonText is v written as JSON, as it would be sent; fmt's rendering where
// v cannot be.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// randomHex is 16 random hex digits, for values no runner can have seen.
func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freshKey is an Idempotency-Key no runner can have seen.
func freshKey() string { return "postern-conformance-" + randomHex() }
