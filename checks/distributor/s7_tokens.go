package distributor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §5.2 and §7: tokens and transport.

// structured says how a token shows structure ("" where none shows), and
// whether the finding is a heuristic (a timestamp-shaped run of digits).
func structured(tok string) (why string, heuristic bool) {
	if json.Valid([]byte(tok)) && strings.ContainsAny(tok[:1], "{[\"") {
		return "it is JSON", false
	}
	parts := strings.Split(tok, ".")
	for _, p := range parts {
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
			if b, err := enc.DecodeString(p); err == nil && len(b) > 1 && (b[0] == '{' || b[0] == '[') && json.Valid(b) {
				if len(parts) == 3 {
					return "it is a JWT: its parts decode to JSON (" + clip(string(b)) + ")", false
				}
				return "a part of it decodes to JSON (" + clip(string(b)) + ")", false
			}
		}
	}
	for _, run := range strings.FieldsFunc(tok, func(r rune) bool { return strings.ContainsRune(".-_:|~", r) }) {
		if !allDigits(run) || (len(run) != 10 && len(run) != 13) {
			continue
		}
		n, _ := strconv.ParseInt(run, 10, 64)
		if len(run) == 13 {
			n /= 1000
		}
		if t := time.Unix(n, 0); t.Year() >= 2001 && t.Year() <= 2100 {
			return "it holds " + run + ", which reads as a Unix time (" + t.UTC().Format(time.RFC3339) + ")", true
		}
	}
	return "", false
}

// allDigits reports whether s is all decimal digits: a part of a token
// between separators, which is how a structured token carries a time.
func allDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// entropyBits estimates the bits a token can hold from its length and
// alphabet: 4 a character of hex, 6 of base64, and so on. A heuristic: it
// says what the token could hold, never what it does.
func entropyBits(tok string) float64 {
	body := strings.TrimRight(tok, "=")
	var lower, upper, digit, other bool
	for _, c := range body {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	size := 0
	hex := strings.Trim(strings.ToLower(body), "0123456789abcdef") == ""
	switch {
	case hex:
		size = 16
	default:
		for _, c := range []struct {
			on bool
			n  int
		}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 2}} {
			if c.on {
				size += c.n
			}
		}
	}
	if size < 2 {
		return 0
	}
	return float64(len(body)) * math.Log2(float64(size))
}

// tokensGiven are the tokens a user gave, by flag.
func (e *Env) tokensGiven() [][2]string {
	var out [][2]string
	for _, tk := range [][2]string{{"--token", e.Token}, {"--stranger-token", e.Stranger}, {"--rotated-token", e.Rotated}} {
		if tk[1] != "" {
			out = append(out, tk)
		}
	}
	return out
}

var section5_2 = []*Rule{
	{
		ID: "5.2/token-opaque", Section: "5.2", Level: 1, Keyword: Must,
		Title: "a token is opaque: no JWT, no JSON, no timestamp in it",
		Probe: func(t *T) {
			for _, tk := range t.Env.tokensGiven() {
				why, heuristic := structured(tk[1])
				switch {
				case why == "":
				case heuristic:
					t.Warn(nil, "%s looks structured: %s (inferred: a heuristic, since random text can hold such a run)", tk[0], why)
				default:
					t.Fail(nil, "%s is not opaque: %s. §5.2 makes a token a bearer secret with no claims and no parseable structure", tk[0], why)
				}
			}
		},
	},
	{
		ID: "5.2/token-entropy", Section: "5.2", Level: 1, Keyword: Must, Advisory: true,
		Title: "a token is long enough to hold 128 bits (a heuristic: its length and alphabet)",
		Probe: func(t *T) {
			for _, tk := range t.Env.tokensGiven() {
				if bits := entropyBits(tk[1]); bits < 128 {
					t.Fail(nil, "%s has %d characters of an alphabet that holds at most %.0f bits: §5.2 asks for at least 128 bits from a secure source (a heuristic: only the length and the alphabet can be seen)", tk[0], len(tk[1]), bits)
				}
			}
		},
	},
}

var section7 = []*Rule{
	{
		ID: "7/tls-or-loopback", Section: "7", Level: 1, Keyword: Must,
		Title: "the distributor is served over HTTPS, or plain HTTP only on a loopback address",
		Probe: func(t *T) {
			u := t.Env.Base
			if u.Scheme == "https" {
				return
			}
			host := u.Hostname()
			var ips []net.IP
			if ip := net.ParseIP(host); ip != nil {
				ips = []net.IP{ip}
			} else {
				ctx, cancel := context.WithTimeout(t.Ctx, t.Env.Timeout)
				defer cancel()
				addrs, err := t.Env.Lookup(ctx, host)
				if err != nil {
					t.Undecided("%s cannot be resolved to judge it: %v", host, err)
				}
				for _, a := range addrs {
					ips = append(ips, a.IP)
				}
			}
			for _, ip := range ips {
				if !ip.IsLoopback() {
					t.Fail(nil, "the distributor is served over plain HTTP at %s, a non-loopback address: §7 has a distributor serve HTTPS, plaintext only where it is reachable on loopback alone", ip)
				}
			}
			t.Note("plain HTTP on loopback, which §7 allows; whether the distributor is reachable elsewhere too cannot be seen from here")
		},
	},
	{
		ID: "7/token-never-echoed", Section: "7", Level: 1, Keyword: MustNot, Binding: Inferred,
		Title:    "a presented token never comes back, in any header, body or bundle of any answer, 200s included (inferred: §5.2 says so without a keyword)",
		Evidence: true,
		Probe: func(t *T) {
			presented := t.Env.presented()
			first := firstTime()
			judged := 0
			for _, ex := range t.Evidence() {
				if !ex.Answered() {
					continue
				}
				judged++
				for _, w := range echoes(ex, presented) {
					if first(ex.Method + " " + routeOf(ex) + " " + w) {
						t.Fail(ex, "%s answered %s, and %s: §5.2 has tokens never appear in an answer (the value is blotted out of this report)", ex.RequestLine(), ex.Brief(), w)
					}
				}
			}
			t.Note("looked for %d presented tokens in the headers and bodies of %d answers, and in the files of every bundle", len(presented), judged)
		},
	},
}

// presented are the tokens this check presents, each named for a report
// (never by value).
func (e *Env) presented() [][2]string {
	var out [][2]string
	for _, tk := range append(e.tokensGiven(), [2]string{"a token the checker minted", e.unknown}) {
		if len(tk[1]) >= 4 {
			out = append(out, tk)
		}
	}
	return out
}

// echoes says where in ex each presented token appears: a header field by
// name, the body (a JSON member by its path, where it is one), a file of a
// bundle by its name.
func echoes(ex *wire.Exchange, presented [][2]string) []string {
	var out []string
	for _, tk := range presented {
		tok := []byte(tk[1])
		for _, k := range slices.Sorted(maps.Keys(ex.Header)) {
			for _, v := range ex.Header[k] {
				if strings.Contains(v, tk[1]) {
					out = append(out, fmt.Sprintf("its %s header carries %s", k, tk[0]))
					break
				}
			}
		}
		if bytes.Contains(ex.Body, tok) {
			if path := memberWith(ex.Object(), tk[1], ""); path != "" {
				out = append(out, fmt.Sprintf("its body carries %s as the member %s", tk[0], path))
			} else {
				out = append(out, fmt.Sprintf("its body carries %s", tk[0]))
			}
		}
		if ex.Status == 200 && ex.MediaType() == "application/zip" {
			b := readBundle(ex)
			for i, data := range b.entries() {
				if bytes.Contains(data, tok) {
					out = append(out, fmt.Sprintf("the bundle's %s carries %s", b.zip.File[i].Name, tk[0]))
				}
			}
		}
	}
	return out
}

// memberWith is the path (a.b.c) of the first string member of v, at or
// below at, that holds s; "" where none does.
func memberWith(v any, s, at string) string {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, s) {
			return cmp.Or(at, "(the whole body)")
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p := memberWith(x[k], s, strings.TrimPrefix(at+"."+k, ".")); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := memberWith(e, s, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// routeOf is the route an exchange asked (its path without the identifier
// and query), so a finding is reported once a route.
func routeOf(ex *wire.Exchange) string {
	p := rawPathOf(ex)
	for _, r := range []string{protocol.EntitlementsRoute, protocol.BundlesRoute, protocol.VersionsRoute} {
		if strings.HasPrefix(p, r) {
			return r
		}
	}
	return p
}
