package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// A detector for credential values in describe (§4.1.3, §7). It looks for two
// shapes: a token carrying a prefix providers put on their keys, and a long
// token of high entropy. It is a heuristic, so it stays narrow: ordinary
// prose, URLs, environment variable names and UUIDs are not flagged. Inside
// a URL only a prefixed key counts: referral codes, commit hashes and
// content digests are random-looking by design (a signup_url's ?ref=…, a
// model file's resolve/<commit>/ path).

// keyPrefixes are prefixes providers put on secret keys and tokens.
var keyPrefixes = []string{
	// OpenAI and Anthropic (sk-ant-…), Stripe.
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_",
	// AWS access key IDs.
	"AKIA", "ASIA",
	// GitHub, GitLab.
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	// Slack.
	"xoxb-", "xoxp-", "xoxa-", "xoxs-", "xapp-",
	// Google, Hugging Face, Groq, Replicate, xAI.
	"AIza", "hf_", "gsk_", "r8_", "xai-",
	// Package registries, Shopify, DigitalOcean.
	"npm_", "pypi-", "shpat_", "dop_",
	// A JSON Web Token's encoded header.
	"eyJ",
}

// keyTokenRun splits text into the runs a prefixed key is written in;
// keyEntropyRun into the runs of the base64 and base64url alphabets.
var (
	keyTokenRun   = regexp.MustCompile(`[A-Za-z0-9_-]+`)
	keyEntropyRun = regexp.MustCompile(`[A-Za-z0-9_+/=-]{32,}`)
	keySeparators = regexp.MustCompile(`[_+/=-]+`)
	envNameShape  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)
	hexShape      = regexp.MustCompile(`^[0-9a-fA-F]+$`)
	urlRun        = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>]+`)
)

// secretHit is one part of a string the detector takes for a credential
// value. strong marks a provider's key prefix or a private key block, which
// leave little doubt; a hit on entropy alone may be a commit hash, a digest
// or an identifier generated at random.
type secretHit struct {
	value  string
	strong bool
}

// privateKeyBlock is a PEM private key, up to its end line or the end of
// the string.
var privateKeyBlock = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)

// secretsIn returns every part of s shaped like a credential value, the
// strong ones first. A random-looking run holding a prefixed key is that
// key, not a second, weaker hit.
func secretsIn(s string) []secretHit {
	var out []secretHit
	for _, block := range privateKeyBlock.FindAllString(s, -1) {
		out = append(out, secretHit{block, true})
		s = strings.ReplaceAll(s, block, " ")
	}
	for _, tok := range keyTokenRun.FindAllString(s, -1) {
		if prefixedKey(tok) {
			out = append(out, secretHit{tok, true})
		}
	}
	strong := len(out)
	for _, run := range keyEntropyRun.FindAllString(urlRun.ReplaceAllString(s, " "), -1) {
		if randomToken(run) && !slices.ContainsFunc(out[:strong], func(h secretHit) bool { return strings.Contains(run, h.value) }) {
			out = append(out, secretHit{run, false})
		}
	}
	return out
}

// prefixedKey: a known prefix followed by at least 16 characters, among them
// a stretch of 8 or more that mixes letter case or letters and digits. The
// mix is what tells "sk-proj-4Fq…" from "sk-learn-is-a-toolkit".
func prefixedKey(tok string) bool {
	for _, p := range keyPrefixes {
		rest, ok := strings.CutPrefix(tok, p)
		if !ok || len(rest) < 16 {
			continue
		}
		for _, seg := range keySeparators.Split(rest, -1) {
			if len(seg) >= 8 && charClasses(seg) >= 2 {
				return true
			}
		}
	}
	return false
}

// randomToken judges a run of 32 or more base64 characters. Its longest
// stretch between separators must not be short, which keeps URL paths and
// hyphenated words out. Then the run is either a long hex string, or mixes
// letters and digits with high entropy and switches between lower case,
// upper case and digits often, as random text does (about three times in
// five characters) and words joined in camel case do not. Environment
// variable names and UUIDs never qualify.
func randomToken(run string) bool {
	if envNameShape.MatchString(run) {
		return false
	}
	core := ""
	for _, seg := range keySeparators.Split(run, -1) {
		if len(seg) > len(core) {
			core = seg
		}
	}
	switch {
	case len(core) >= 32 && hexShape.MatchString(core):
		return shannon(core) >= 3.0
	case len(core) >= 10:
		return containsLetter(run) && containsDigit(run) && shannon(run) >= 4.0 && classSwitches(run) >= 0.4
	}
	return false
}

// shannon is the Shannon entropy of s in bits per character.
func shannon(s string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// charClasses counts which of lower case, upper case and digits s uses.
func charClasses(s string) int {
	var seen [4]bool
	for _, r := range s {
		seen[charClass(r)] = true
	}
	n := 0
	for _, b := range seen[1:] {
		if b {
			n++
		}
	}
	return n
}

// classSwitches is how often adjacent letters and digits of s change class
// (lower case, upper case, digit), from 0 to 1.
func classSwitches(s string) float64 {
	prev, n, changes := 0, 0, 0
	for _, r := range s {
		c := charClass(r)
		if c == 0 {
			continue
		}
		if prev != 0 {
			n++
			if c != prev {
				changes++
			}
		}
		prev = c
	}
	if n == 0 {
		return 0
	}
	return float64(changes) / float64(n)
}

// charClass is 1 for lower case, 2 for upper case, 3 for a digit, else 0.
func charClass(r rune) int {
	switch {
	case r >= 'a' && r <= 'z':
		return 1
	case r >= 'A' && r <= 'Z':
		return 2
	case r >= '0' && r <= '9':
		return 3
	}
	return 0
}

func containsDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func containsLetter(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { c := charClass(r); return c == 1 || c == 2 }) >= 0
}

// redactSecret shows enough of a suspected secret to find it, and no more.
func redactSecret(s string) string {
	if len(s) <= 8 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d characters)", s[:6], len(s))
}

// walkStrings calls fn for every string in v — object keys included, since an
// open object can carry a secret as a name — with its JSON pointer.
func walkStrings(v any, at string, fn func(at, s string)) {
	switch x := v.(type) {
	case string:
		fn(at, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := at + "/" + pointerEscaper.Replace(k)
			fn(p+" (a member name)", k)
			walkStrings(x[k], p, fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s/%d", at, i), fn)
		}
	}
}

// describeSecret is a hit at a place in describe. credentialValue marks
// the ones 4.1.3/no-credential-value judges: a strong hit anywhere in a
// credentials entry, or any hit in a member the entry does not define. The
// rest, weak hits in env, purpose and signup_url among them, are
// 4.1.3/no-secret-elsewhere's.
type describeSecret struct {
	at              string
	hit             secretHit
	credentialValue bool
}

// describeSecrets is every hit in describe, credentials entries first.
func describeSecrets(doc map[string]any) []describeSecret {
	var out []describeSecret
	walk := func(v any, at string, credentialValue func(strong bool) bool) {
		walkStrings(v, at, func(p, s string) {
			for _, h := range secretsIn(s) {
				out = append(out, describeSecret{p, h, credentialValue(h.strong)})
			}
		})
	}
	rest := maps.Clone(doc)
	if list, ok := doc["credentials"].([]any); ok {
		delete(rest, "credentials")
		for i, e := range list {
			at := fmt.Sprintf("/credentials/%d", i)
			c, isObj := e.(map[string]any)
			if !isObj { // no member to go by: only a strong hit is sure
				walk(e, at, func(strong bool) bool { return strong })
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(c)) {
				defined := k == "env" || k == "purpose" || k == "signup_url"
				walk(map[string]any{k: c[k]}, at, func(strong bool) bool { return strong || !defined })
			}
		}
	}
	walk(rest, "", func(bool) bool { return false })
	// A secret used as a member name would be repeated by the pointer.
	pointer := pointerEscaper
	for i := range out {
		for _, f := range out {
			out[i].at = strings.ReplaceAll(out[i].at, pointer.Replace(f.hit.value), "[redacted]")
		}
	}
	return out
}

// redactedDescribe is describe's exchange with every hit blotted out, the
// evidence both secret rules show: a report is often kept as a build
// artifact, and must not carry the value it warns about.
func redactedDescribe(t *T, found []describeSecret) *wire.Exchange {
	values := make([]string, 0, len(found))
	for _, f := range found {
		values = append(values, f.hit.value)
	}
	t.Env.Conceal(values...)
	return redactedCopy(t.Env.Describe.Ex, values)
}

// redactedCopy is ex with every form of the secrets in its body blotted out,
// so the evidence shows where the leak was without repeating it. A short
// secret is blotted out only where it is a whole JSON string. A body still
// holding a secret once decoded (spelled with escapes no replacement
// foresaw) is replaced by its decoded value, re-encoded with the secrets
// blotted out.
func redactedCopy(ex *wire.Exchange, secrets []string) *wire.Exchange {
	c := *ex
	body := ex.Body
	for _, sec := range secrets {
		q, _ := json.Marshal(sec)
		body = bytes.ReplaceAll(body, q, []byte(`"[redacted]"`))
		if len(sec) >= minSecretLen {
			inner := q[1 : len(q)-1]
			for _, form := range [][]byte{inner, bytes.ReplaceAll(inner, []byte("/"), []byte(`\/`)), []byte(sec)} {
				body = bytes.ReplaceAll(body, form, []byte("[redacted]"))
			}
		}
	}
	c.Body = body
	// A stream's parsed events hold the same text as its body; the report
	// shows the body, so the copy keeps no events to leak through.
	c.SSE = nil
	if v, err := c.JSON(); err == nil && holdsSecret(v, secrets) {
		c.Body, _ = json.MarshalIndent(blotStrings(v, secrets), "", "  ")
		c.Note = strings.TrimSpace(c.Note + " (body shown re-encoded, to blot out a value spelled with escapes)")
	}
	return &c
}

// holdsSecret reports whether a decoded JSON value still carries a secret in
// a string, member names included.
func holdsSecret(v any, secrets []string) bool {
	found := false
	walkStrings(v, "", func(_, s string) { found = found || containsSecret(s, secrets) })
	return found
}

func containsSecret(s string, secrets []string) bool {
	for _, sec := range secrets {
		if s == sec || (len(sec) >= minSecretLen && strings.Contains(s, sec)) {
			return true
		}
	}
	return false
}

// blotStrings is v with every secret in its strings replaced.
func blotStrings(v any, secrets []string) any {
	blot := func(s string) string {
		for _, sec := range secrets {
			if s == sec {
				return "[redacted]"
			}
			if len(sec) >= minSecretLen {
				s = strings.ReplaceAll(s, sec, "[redacted]")
			}
		}
		return s
	}
	switch x := v.(type) {
	case string:
		return blot(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[blot(k)] = blotStrings(e, secrets)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = blotStrings(e, secrets)
		}
		return l
	}
	return v
}

// pointerEscaper escapes a key as a JSON pointer token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
