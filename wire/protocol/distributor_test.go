package protocol

import (
	"testing"
)

func TestAddress(t *testing.T) {
	for raw, want := range map[string]Addressing{
		EntitlementsRoute + "acme/x":          ID,
		EntitlementsRoute + "acme%2Fx":        NoRoute, // one segment: %2F is never a separator
		EntitlementsRoute + "acme/%78":        BadID,   // an encoded octet is no spelling
		EntitlementsRoute + "Acme/x":          BadID,   // never folded
		EntitlementsRoute + "acme/x/y":        NoRoute,
		EntitlementsRoute + "acme/x/":         NoRoute,
		EntitlementsRoute + "acme":            NoRoute,
		EntitlementsRoute + "/x":              NoRoute,
		BundlesRoute + "acme/x":               NoRoute, // another route
		EntitlementsRoute + "a-b.c/d-e":       ID,
		EntitlementsRoute + "a-/b":            BadID,
		EntitlementsRoute + "acme/reference_": BadID,
	} {
		if _, got := Address(raw, EntitlementsRoute); got != want {
			t.Errorf("Address(%q) = %d, want %d", raw, got, want)
		}
	}
}

func TestReprDigest(t *testing.T) {
	v := ReprDigest([]byte("bundle"))
	sum, found, ok := ParseReprDigest(v)
	if !ok || !found || len(sum) != 32 {
		t.Fatalf("ParseReprDigest(%q) = %x, %v, %v", v, sum, found, ok)
	}
	for _, bad := range []string{"sha-256=abc", "SHA-256=:AAAA:", "sha-256=:!!:", "sha-256"} {
		if _, _, ok := ParseReprDigest(bad); ok {
			t.Errorf("ParseReprDigest(%q) is well-formed", bad)
		}
	}
	if _, found, ok := ParseReprDigest("sha-512=:AAAA:;q=1"); !ok || found {
		t.Errorf("a dictionary without sha-256: found %v, ok %v", found, ok)
	}
}

func TestParseStamp(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-08-15T09:14:02Z": true, "2026-08-15T09:14:02.123+02:00": true,
		"2026-08-15T09:14:02": false, "2026-08-15 09:14:02Z": false, "": false,
	} {
		if _, ok := ParseStamp(s); ok != want {
			t.Errorf("ParseStamp(%q) = %v", s, ok)
		}
	}
}
