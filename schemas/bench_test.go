package schemas

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidateStatus validates one status document.
func BenchmarkValidateStatus(b *testing.B) {
	s, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	var doc any
	_ = json.Unmarshal([]byte(`{"postern":"0.1","level":3,"state":"ready","agent":{"id":"acme/x","version":"1.0.0"},
		"entitlement":{"state":"active","checked_at":"2026-11-29T08:00:00Z","stale_after_seconds":60},
		"limits":{"max_concurrent_runs":2}}`), &doc)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := s.Validate("status", doc); len(v) != 0 {
			b.Fatal(v)
		}
	}
}
