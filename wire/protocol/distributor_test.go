package protocol

import (
	"bytes"
	"strings"
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
	m, ok := ParseReprDigest(v)
	if !ok || !bytes.Equal(m["sha-256"], DigestOf("sha-256", []byte("bundle"))) {
		t.Fatalf("ParseReprDigest(%q) = %x, %v", v, m, ok)
	}
	for _, bad := range []string{"sha-256=abc", "SHA-256=:AAAA:", "sha-256=:!!:", "sha-256"} {
		if _, ok := ParseReprDigest(bad); ok {
			t.Errorf("ParseReprDigest(%q) is well-formed", bad)
		}
	}
	if m, ok := ParseReprDigest("sha-512=:AAAA:;q=1, md5=:AAAA:"); !ok || m["sha-256"] != nil || len(m) != 2 {
		t.Errorf("a dictionary without sha-256: %x, ok %v", m, ok)
	}
	if DigestOf("md5", nil) != nil || len(DigestOf("sha-512", nil)) != 64 {
		t.Error("DigestOf computes only the active algorithms")
	}
}

func TestParseStamp(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-08-15T09:14:02Z": true, "2026-08-15T09:14:02.123+02:00": true,
		"2026-08-15t09:14:02z": true, "2016-12-31T23:59:60Z": true, // RFC 3339 §5.6's lower case, and a leap second
		"2026-08-15T09:14:02": false, "2026-08-15 09:14:02Z": false, "": false,
		"2026-08-15T09:14:02Z ": false, "2026-08-15T09:14:02+0200": false, "2026-08-15T25:14:02Z": false,
	} {
		if _, ok := ParseStamp(s); ok != want {
			t.Errorf("ParseStamp(%q) = %v", s, ok)
		}
	}
}

func TestValidAgentID(t *testing.T) {
	for s, want := range map[string]bool{
		"acme/market-research-crew": true, "a/b": true, "0/9": true, "a.b/c-d": true, "a--b/c..d": true,
		"o/" + strings.Repeat("n", 126): true, "o/" + strings.Repeat("n", 127): false,
		"": false, "a": false, "a/": false, "/b": false, "a/b/c": false,
		"A/b": false, "a_b/c": false, "-a/b": false, "a/b.": false, "./b": false,
		"../b": false, "a/b ": false, "a%2Fb": false, "é/b": false,
	} {
		if got := ValidAgentID(s); got != want {
			t.Errorf("ValidAgentID(%q) = %v", s, got)
		}
	}
}

func TestEncodeOmits(t *testing.T) {
	a := CheckAnswer{Postern: Version, State: StateActive, AgentID: "acme/x", CheckedAt: "2026-08-15T09:14:02Z", StaleAfterSeconds: 60}
	if got, want := string(a.Encode()), `{"postern":"`+Version+`","state":"active","agent_id":"acme/x","checked_at":"2026-08-15T09:14:02Z","stale_after_seconds":60,"grace_seconds":0}`; got != want {
		t.Errorf("Encode() = %s, want %s (members in §5.3's order, grace 0 sent)", got, want)
	}
	if got := string(a.Encode("agent_id", "grace_seconds")); strings.Contains(got, "agent_id") || strings.Contains(got, "grace_seconds") || !strings.Contains(got, `"state":"active"`) {
		t.Errorf("Encode(omit) = %s", got)
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{"Bearer abc"}, "abc"},
		{[]string{"bearer  abc"}, "abc"}, // a server reads leniently
		{[]string{"Basic abc"}, ""},
		{[]string{"Bearer"}, ""},
		{[]string{"Bearer abc", "Bearer abc"}, ""},
		{nil, ""},
	} {
		if got := BearerToken(c.values); got != c.want {
			t.Errorf("BearerToken(%q) = %q, want %q", c.values, got, c.want)
		}
	}
}

func TestTargetPath(t *testing.T) {
	for target, want := range map[string]string{
		"/postern/v0/entitlements/acme%2Fx?y=1":       "/postern/v0/entitlements/acme%2Fx",
		"http://h:1/postern/v0/entitlements/acme/x?q": "/postern/v0/entitlements/acme/x",
		"http://h:1": "", "*": "", "h:1": "",
	} {
		if got := TargetPath(target); got != want {
			t.Errorf("TargetPath(%q) = %q, want %q", target, got, want)
		}
	}
}
