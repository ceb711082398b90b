package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire"
)

// §4.1 GET /postern/v0/describe.
var section4_1 = []*Rule{
	{
		ID: "4.1/answers-unconditionally", Section: "4.1", Level: 1, Keyword: Must,
		Title: "describe answers 200 without credentials or an entitlement",
		Probe: func(t *T) { answersRule("describe", t) },
	},
	{
		ID: "4.1/json", Section: "4.1", Level: 1, Keyword: Must, Binding: Chain, Chain: "REQUIRED members need an object",
		Title: "describe is a JSON object",
		Probe: func(t *T) { objectRule("describe", t) },
	},
	{
		ID: "4.1/content-type", Section: "4.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2",
		Title: "describe is labelled application/json",
		Probe: func(t *T) { contentTypeRule("describe", t) },
	},
	{
		ID: "4.1/schema", Section: "4.1", Level: 1, Keyword: Must,
		Title: "describe matches the describe schema (a constraint no keyword binds only warns, and says it is inferred)",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) { schemaRule("describe", t) },
	},
	{
		ID: "4.1/stable", Section: "4.1", Level: 1, Keyword: Must, Advisory: true,
		Title: "describe is side-effect free: two reads give the same document",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			first := t.Env.Describe.Ex
			second := refetch(t, "describe")
			if first.Truncated || second.Truncated {
				t.Undecided("describe ran past the checker's body cap (%d bytes), so two reads cannot be compared whole", max(first.Cap, second.Cap))
			}
			if !bytes.Equal(first.Body, second.Body) {
				t.Fail(second, "two reads of describe differed (%d and %d bytes); a side effect cannot be proven from outside, so this warns",
					len(first.Body), len(second.Body))
			}
		},
	},
	{
		ID: "4.1/withdrawn-capabilities", Section: "4.1", Level: 1, Keyword: Should, Binding: Inferred,
		Title: "describe's capabilities should drop streaming (withdrawn) and idempotent_retry (moved to status)",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			caps, _ := t.Env.Describe.Obj["capabilities"].(map[string]any)
			if v, ok := caps["streaming"]; ok {
				t.Fail(t.Env.Describe.Ex, "capabilities.streaming is %v; §4.1 withdrew it: a client reads the level from status (§3), so this means nothing and the checker ignores it", v)
			}
			if v, ok := caps["idempotent_retry"]; ok {
				t.Fail(t.Env.Describe.Ex, "capabilities.idempotent_retry is %v; §4.1 moved it to status, where clients must read it, so here it means nothing and the checker ignores it", v)
			}
		},
	},
	{
		ID: "4.1.1/key-grammar", Section: "4.1.1", Level: 1, Keyword: Must, Binding: Chain, Chain: "MUST carry a key, and a key is that grammar",
		Title:  "every input key is one or more of A-Z a-z 0-9 _ . - and nothing else",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/inputs/*/key", Keyword: "pattern"}, {Doc: "describe", Path: "/inputs/*/key", Keyword: "type"}},
		Probe: func(t *T) {
			eachInput(t, "§4.1.1: a key is one or more of [A-Za-z0-9_.-] and nothing else, not even a trailing newline", func(at string, in map[string]any) {
				k, ok := in["key"]
				if s, isStr := k.(string); ok && (!isStr || !inputKeyGrammar.MatchString(s)) {
					t.Fail(t.Env.Describe.Ex, "describe %s/key is %#v; §4.1.1: a key is [A-Za-z0-9_.-]+, the whole string", at, k)
				}
			})
		},
	},
	{
		ID: "4.1.1/input-types", Section: "4.1.1", Level: 1, Keyword: MustNot,
		Title:  "no input declares a type outside text, number and select",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/inputs/*/type", Keyword: "enum"}, {Doc: "describe", Path: "/inputs/*/type", Keyword: "type"}},
		Probe: func(t *T) {
			eachInput(t, "§4.1.1: a runner emits no input type beyond text, number and select", func(at string, in map[string]any) {
				if ty, ok := in["type"]; ok && ty != "text" && ty != "number" && ty != "select" {
					t.Fail(t.Env.Describe.Ex, "describe %s/type is %#v; §4.1.1: v0 types are text, number and select only", at, ty)
				}
			})
		},
	},
	{
		ID: "4.1.1/select-options", Section: "4.1.1", Level: 1, Keyword: Required,
		Title:  "a select input lists its choices in validation.options",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/inputs/*/validation", Keyword: "required"}},
		Probe: func(t *T) {
			eachInput(t, "§4.1.1: validation.options is required on a select input", func(at string, in map[string]any) {
				if in["type"] != "select" {
					return
				}
				if _, ok := Path(in, "validation", "options"); !ok {
					t.Fail(t.Env.Describe.Ex, "describe %s is a select input (key %v) without validation.options; §4.1.1 requires them", at, in["key"])
				}
			})
		},
	},
	{
		ID: "4.1.1/default-type", Section: "4.1.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.1.1",
		Title:  "an input's default fits its type: a string for text and select, a number for number, or null",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/inputs/*/default"}},
		Probe: func(t *T) {
			eachInput(t, "§4.1.1: a default is a string for text and select, a number for number, or null; never a boolean", func(at string, in map[string]any) {
				d, ok := in["default"]
				if !ok || d == nil {
					return
				}
				_, isStr := d.(string)
				isNum := isJSONNumber(d)
				if fits := isStr && in["type"] != "number" || isNum && in["type"] == "number"; !fits {
					t.Fail(t.Env.Describe.Ex, "describe %s/default is %#v for a %v input; §4.1.1: text and select take a string, number a number, and nothing takes a boolean", at, d, in["type"])
				}
			})
		},
	},
	{
		ID: "4.1.2/write-tools-subset", Section: "4.1.2", Level: 1, Keyword: Must,
		Title: "every capabilities.write_tools entry is also listed in capabilities.tools",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			writes, ok := Path(t.Env.Describe.Obj, "capabilities", "write_tools")
			list, isList := writes.([]any)
			if !ok || !isList {
				t.NotApplicable("describe declares no capabilities.write_tools list")
				return
			}
			tools, _ := Path(t.Env.Describe.Obj, "capabilities", "tools")
			known, _ := tools.([]any)
			var names []string
			for _, k := range known {
				if s, ok := k.(string); ok {
					names = append(names, s)
				}
			}
			// Only names are compared; an entry of another type is the
			// schema's to judge (4.1/schema).
			for i, w := range list {
				name, ok := w.(string)
				switch {
				case !ok:
					t.Note("capabilities.write_tools/%d is %s, not a name; it is not compared", i, jsonText(w))
				case !slices.Contains(names, name):
					t.Fail(t.Env.Describe.Ex, "capabilities.write_tools names %q, which capabilities.tools does not list; §4.1.2: write_tools is a subset of tools", name)
				}
			}
		},
	},
	{
		ID: "4.1.3/credentials-closed", Section: "4.1.3", Level: 1, Keyword: MustNot, Binding: Contract, Chain: "§4.1.3",
		Title:  "a credentials entry carries env, purpose and signup_url and no other member",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/credentials/*", Keyword: "additionalProperties"}},
		Probe: func(t *T) {
			eachCredential(t, "§4.1.3: the entry is closed to env, purpose and signup_url, leaving nowhere for a value to travel", func(at string, c map[string]any) {
				for _, k := range slices.Sorted(maps.Keys(c)) {
					if k != "env" && k != "purpose" && k != "signup_url" {
						t.Fail(t.Env.Describe.Ex, "describe %s carries %q; §4.1.3 closes the entry to env, purpose and signup_url, so nothing else can carry a value", at, k)
					}
				}
			})
		},
	},
	{
		ID: "4.1.3/no-credential-value", Section: "4.1.3", Level: 1, Keyword: MustNot,
		Title: "no credentials entry carries a key bearing a provider's prefix, nor anything key-shaped in a member beyond env, purpose and signup_url",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			if list, _ := t.Env.Describe.Obj["credentials"].([]any); len(list) == 0 {
				t.NotApplicable("describe declares no credentials")
				return
			}
			found := describeSecrets(t.Env.Describe.Obj)
			ev := redactedDescribe(t, found)
			for _, f := range found {
				switch {
				case !f.credentialValue:
				case f.hit.strong:
					t.Fail(ev, "describe %s holds %s, shaped like a provider's key; §4.1.3: describe names a credential by its variable and never carries the value (shown redacted)",
						f.at, redactSecret(f.hit.value))
				default:
					t.Fail(ev, "describe %s holds %s, shaped like a key or token, in a member §4.1.3 does not give a credentials entry: there it can only be a value, which describe never carries (shown redacted)",
						f.at, redactSecret(f.hit.value))
				}
			}
		},
	},
	{
		ID: "4.1.3/no-secret-elsewhere", Section: "4.1.3", Level: 1, Keyword: Should,
		Title: "nothing else in describe looks like a key or token: no random-looking string in a credential's env, purpose or signup_url, nor outside credentials (a heuristic: it warns)",
		Needs: []Need{NeedDescribe},
		Probe: func(t *T) {
			found := describeSecrets(t.Env.Describe.Obj)
			ev := redactedDescribe(t, found)
			for _, f := range found {
				switch {
				case f.credentialValue: // 4.1.3/no-credential-value's
				case strings.HasPrefix(f.at, "/credentials/"):
					t.Fail(ev, "describe %s holds %s, a long random-looking string without a provider's prefix: perhaps a key, perhaps a commit hash or a digest; §4.1.3 and §7 keep every credential value out of describe, so this warns (shown redacted)",
						f.at, redactSecret(f.hit.value))
				default:
					t.Fail(ev, "describe %s holds %s, shaped like a key or token; §4.1.3 and §7 forbid a credential value anywhere in describe (this may be a false positive; shown redacted)",
						f.at, redactSecret(f.hit.value))
				}
			}
		},
	},
	// 4.1.4/media-type-lower-case claims the lower-case constraint ("not")
	// before 4.1.4/bytes-media-type claims the rest of the member.
	{
		ID: "4.1.4/media-type-lower-case", Section: "4.1.4", Level: 1, Keyword: Must, Binding: Contract, Chain: "§4.1.4",
		Title:  "a bytes output's media_type is emitted in lower case",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/output/media_type", Keyword: "not"}},
		Probe: func(t *T) {
			out := describeOutput(t, "bytes", "§4.1.4: a runner emits media_type in lower case")
			if out == nil {
				return
			}
			if mt, ok := out["media_type"].(string); ok && mt != strings.ToLower(mt) {
				t.Fail(t.Env.Describe.Ex, "output.media_type is %q; §4.1.4 has a runner emit it in lower case, sparing clients a case-insensitive compare", mt)
			}
		},
	},
	// The two bytes rules come before 4.1.4/output-present: a claim covers
	// the path below it, so "/output#required" would otherwise also take
	// a missing media_type, and the first selected rule's claim wins.
	{
		ID: "4.1.4/bytes-media-type", Section: "4.1.4", Level: 1, Keyword: Required,
		Title:  "a bytes output names its media_type, an RFC 6838 type",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/output/media_type"}},
		Probe: func(t *T) {
			out := describeOutput(t, "bytes", "§4.1.4: a bytes output names an RFC 6838 media_type")
			if out == nil {
				return
			}
			switch mt, ok := out["media_type"]; {
			case !ok:
				t.Fail(t.Env.Describe.Ex, "output.type is bytes and media_type is absent; §4.1.4 requires it")
			case !bytesMediaType.MatchString(fmt.Sprint(mt)):
				t.Fail(t.Env.Describe.Ex, "output.media_type is %#v; §4.1.4: type/subtype in RFC 6838 restricted-name characters", mt)
			}
		},
	},
	{
		ID: "4.1.4/bytes-no-example", Section: "4.1.4", Level: 1, Keyword: MustNot,
		Title:  "a bytes output carries no example",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/output/example", Keyword: "false"}},
		Probe: func(t *T) {
			out := describeOutput(t, "bytes", "§4.1.4: example is text-only, and a bytes output carries none")
			if out == nil {
				return
			}
			if ex, ok := out["example"]; ok {
				t.Fail(t.Env.Describe.Ex, "output.type is bytes and output.example is %s; §4.1.4: example is text-only and absent for bytes", wire.Excerpt([]byte(fmt.Sprint(ex)), 40))
			}
		},
	},
	{
		ID: "4.1.4/output-present", Section: "4.1.4", Level: 1, Keyword: Required,
		Title:  "describe carries an output block with a type",
		Needs:  []Need{NeedDescribe},
		Claims: []Claim{{Doc: "describe", Path: "/output", Keyword: "required"}},
		Probe: func(t *T) {
			describeClaims(t, "§4.1.4: the output block and its type are required; describe is the only place a client learns the type before a run")
			v, ok := t.Env.Describe.Obj["output"]
			out, isObj := v.(map[string]any)
			switch {
			case t.Failed():
			case !ok:
				t.Fail(t.Env.Describe.Ex, "describe has no output block; §4.1.4 requires one, the only place a client learns the output type before a run")
			case !isObj:
				t.Note("output is not an object (4.1/schema judges its shape)")
			case out["type"] == nil:
				t.Fail(t.Env.Describe.Ex, "describe.output carries no type; §4.1.4 requires it")
			default:
				t.Note("output type %v", out["type"])
			}
		},
	},
}

var (
	// inputKeyGrammar is §4.1.1's key grammar, anchored to the whole string (\z:
	// not even a trailing newline).
	inputKeyGrammar = regexp.MustCompile(`\A[A-Za-z0-9_.-]+\z`)
	// bytesMediaType is §4.1.4's shape: restricted-name on both sides, in
	// either case (RFC 6838 names are case-insensitive; the lower case a
	// runner emits is 4.1.4/media-type-lower-case's).
	bytesMediaType = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\z`)
)

// objectRule: the document is a JSON object, which every REQUIRED member
// of it presupposes. (Its label is contentTypeRule's: jsonRule in docs.go
// judged both.)
func objectRule(verb string, t *T) {
	d := docOf(t, verb)
	if d.Ex.Status != http.StatusOK {
		t.SkipFor(d.Ex, "GET %s answered %s, so there is no document to judge", verb, d.Ex.Brief())
		return
	}
	if d.Obj == nil {
		t.Fail(d.Ex, "GET %s did not carry a JSON object, so none of the members §4 REQUIRES of it can be there", verb)
	}
}

// contentTypeRule: the document is labelled application/json, the media
// type §2 gives every Postern body but stream's: the wire contract of the
// verb (Contract).
func contentTypeRule(verb string, t *T) {
	ex := docOf(t, verb).Ex
	if ex.Status != http.StatusOK {
		t.SkipFor(ex, "GET %s answered %s, so there is no document to judge", verb, ex.Brief())
		return
	}
	if mt := ex.MediaType(); mt != "application/json" {
		t.Fail(ex, "GET %s is labelled %q; §2 gives every Postern body but stream's the media type application/json",
			verb, ex.Header.Get("Content-Type"))
	}
}

// describeClaims reports the describe schema violations the rule claims,
// each followed by why (see ownClaims).
func describeClaims(t *T, why string) { ownClaims(t, "describe", t.Env.Describe, why) }

// ownClaims reports the violations of doc the rule claims, adding why —
// the rule's own reading of the spec — to the schema's words. A rule
// claiming nothing in doc reports nothing: schemaFindings would hand it
// every unclaimed violation, which is the schema rule's to report.
func ownClaims(t *T, doc string, d *Doc, why string) {
	claims := false
	for _, c := range t.Rule.Claims {
		claims = claims || c.Doc == doc
	}
	if !claims {
		return
	}
	schemaFindings(t, doc, d.Ex, d.Obj, why)
}

// eachInput reports the rule's claimed violations, then, where the schema
// set found none (a set loaded with --schemas may be shaped differently),
// hands every input declaration to judge as the rule's own check.
func eachInput(t *T, why string, judge func(at string, in map[string]any)) {
	eachEntry(t, "inputs", why, judge)
}

// eachCredential is eachInput for the credentials entries.
func eachCredential(t *T, why string, judge func(at string, c map[string]any)) {
	eachEntry(t, "credentials", why, judge)
}

func eachEntry(t *T, member, why string, judge func(at string, m map[string]any)) {
	describeClaims(t, why)
	list, _ := t.Env.Describe.Obj[member].([]any)
	switch {
	case t.Failed():
		return
	case len(list) == 0:
		t.NotApplicable("describe declares no %s", member)
		return
	}
	for i, v := range list {
		if m, ok := v.(map[string]any); ok {
			judge(fmt.Sprintf("/%s/%d", member, i), m)
		}
	}
}

// describeOutput reports the rule's claimed violations and returns the
// output block if its type is want; otherwise it skips the rule (unless a
// claimed violation already failed it) and returns nil.
func describeOutput(t *T, want, why string) map[string]any {
	describeClaims(t, why)
	if t.Failed() {
		return nil
	}
	out, _ := t.Env.Describe.Obj["output"].(map[string]any)
	if ty := Str(out, "type"); ty != want {
		t.NotApplicable("describe.output.type is %s; applies to %s", quoteOr(ty), want)
		return nil
	}
	return out
}

// isJSONNumber reports whether a decoded JSON value is a number.
func isJSONNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, int:
		return true
	}
	return false
}
