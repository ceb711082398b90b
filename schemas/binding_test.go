package schemas

import (
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// inferredCase is one edit of a base document and whether the violation it
// causes at path is inferred (no bold keyword binds it) or binding.
type inferredCase struct {
	name, schema string
	doc          func(t *testing.T) any
	path, kw     string
	inferred     bool
}

func TestInferredClassification(t *testing.T) {
	s, err := Embedded()
	assert.NilError(t, err)
	bytesDescribe := from(describeBase, set{"/output", raw(t, bytesOutput)})
	cases := []inferredCase{
		// presence a keyword binds
		{"describe output", "describe", from(describeBase, set{"/output", del}), "/output", "required", false},
		{"describe agent", "describe", from(describeBase, set{"/agent", del}), "/agent", "required", false},
		{"input label", "describe", from(describeBase, set{"/inputs/0/label", del}), "/inputs/0/label", "required", false},
		{"agent id grammar", "describe", from(describeBase, set{"/agent/id", "Owl/x"}), "/agent/id", "pattern", false},
		{"status agent", "status", from(statusBase, set{"/agent", del}), "/agent", "required", false},
		{"status state", "status", from(statusBase, set{"/state", del}), "/state", "required", false},
		{"revoked without checked_at", "status", from(statusBase, set{"/entitlement/checked_at", del}), "/entitlement/checked_at", "required", false},
		{"stale as a string", "status", from(statusBase, set{"/entitlement/stale_after_seconds", "60"}), "/entitlement/stale_after_seconds", "type", false},
		{"stale fractional", "status", from(statusBase, set{"/entitlement/stale_after_seconds", 60.5}), "/entitlement/stale_after_seconds", "multipleOf", true},
		{"error message", "error", from(errorBase, set{"/error/message", del}), "/error/message", "required", false},
		{"error sibling", "error", from(errorBase, set{"/postern", "0.1"}), "/postern", "additionalProperties", false},
		{"bytes media_type", "run-response", from(bytesResponse, set{"/output/media_type", del}), "/output/media_type", "required", false},
		{"media type grammar", "describe", bytesDescribe, "", "", false},
		{"delta text", "stream-event/delta", lit(`{}`), "/text", "required", false},
		{"started latency", "stream-event/step", lit(`{"name": "a", "status": "started", "latency_ms": 1}`), "/latency_ms", "false", false},
		// what SPEC states as the wire contract of a verb (§3: implements the verb
		// as its section defines it): a member's presence, type, range or meaning
		{"describe postern", "describe", from(describeBase, set{"/postern", del}), "/postern", "required", false},
		{"boolean default", "describe", from(describeBase, set{"/inputs/0/default", true}), "/inputs/0/default", "type", false},
		{"credential member", "describe", from(describeBase, set{"/credentials/0/value", "x"}), "/credentials/0/value", "additionalProperties", false},
		{"media type case", "describe", from(describeBase, set{"/output", raw(t, `{"type": "bytes", "media_type": "Image/PNG"}`)}), "/output/media_type", "not", false},
		{"status postern", "status", from(statusBase, set{"/postern", del}), "/postern", "required", false},
		{"zero concurrent runs", "status", from(statusBase, set{"/limits/max_concurrent_runs", 0}), "/limits/max_concurrent_runs", "minimum", false},
		{"update current type", "status", from(statusBase, set{"/update/current", 3}), "/update/current", "type", false},
		{"unreachable latest", "status", from(statusBase, set{"/update/state", "unreachable"}), "/update/latest", "false", false},
		{"idempotent_retry type", "status", from(statusBase, set{"/idempotent_retry", "yes"}), "/idempotent_retry", "type", false},
		{"run postern", "run-response", from(runResponseBase, set{"/postern", del}), "/postern", "required", false},
		{"bytes not base64", "run-response", from(bytesResponse, set{"/output/value", "not base64!"}), "/output/value", "pattern", false},
		{"step name", "stream-event/step", lit(`{"status": "finished"}`), "/name", "required", false},
		{"start run_id", "stream-event/start", lit(`{}`), "/run_id", "required", false},
		{"unknown code", "error", from(errorBase, set{"/error/code", "nope"}), "/error/code", "enum", false},
		// what only the schema or an example states, or a reading a careful
		// implementer could contest
		{"describe postern value", "describe", from(describeBase, set{"/postern", "0.2"}), "/postern", "const", true},
		{"agent name", "describe", from(describeBase, set{"/agent/name", del}), "/agent/name", "required", true},
		{"detail missing type", "error", from(errorBase, set{"/error/detail", raw(t, `{"missing": "A"}`)}), "/error/detail/missing", "type", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := s.Validate(c.schema, c.doc(t))
			if c.kw == "" {
				assert.Assert(t, len(got) == 0, "want valid; got %v", got)
				return
			}
			found := false
			for _, v := range got {
				if v.Path != c.path || v.Keyword != c.kw {
					continue
				}
				found = true
				assert.Equal(t, v.Inferred, c.inferred, "%s", v)
				assert.Equal(t, v.Why != "", c.inferred, "%s", v)
				assert.Equal(t, strings.Contains(v.Message, "(inferred: "), c.inferred, "%s", v)
			}
			assert.Assert(t, found, "no %s violation at %s; got %v", c.kw, c.path, got)
		})
	}
}

// A set read from files without the annotation classifies nothing.
func TestFromDirWithoutAnnotations(t *testing.T) {
	dir := writeSet(t, map[string]string{"status": `{"type": "object", "required": ["postern"]}`})
	s, err := FromDir(dir)
	assert.NilError(t, err)
	got := s.Validate("status", map[string]any{})
	assert.Assert(t, len(got) == 1 && !got[0].Inferred, "%v", got)
}

// Every annotation names a constraint that exists: a key is a keyword path
// below the annotated subschema that reaches a keyword (or a boolean
// schema), so a typo cannot silently classify nothing.
func TestInferredAnnotationsResolve(t *testing.T) {
	s, err := Embedded()
	assert.NilError(t, err)
	n := 0
	for u, doc := range s.raw {
		var visit func(v any, at string)
		visit = func(v any, at string) {
			switch m := v.(type) {
			case map[string]any:
				if ann, ok := m["x-inferred"].(map[string]any); ok {
					for k, why := range ann {
						n++
						assert.Check(t, why != "", "%s%s: %s has no reason", u, at, k)
						toks := strings.Split(k, "/")
						if walk(m, toks) != nil {
							continue
						}
						has := false
						if len(toks) >= 2 && toks[len(toks)-2] == "required" {
							parent, _ := walk(m, toks[:len(toks)-2]).(map[string]any)
							req, _ := parent["required"].([]any)
							for _, r := range req {
								has = has || r == toks[len(toks)-1]
							}
						}
						assert.Check(t, has, "%s%s: %s names no constraint", u, at, k)
					}
				}
				for k, c := range m {
					visit(c, at+"/"+k)
				}
			case []any:
				for i, c := range m {
					visit(c, fmt.Sprintf("%s/%d", at, i))
				}
			}
		}
		visit(doc, "#")
	}
	assert.Assert(t, n > 50, "only %d annotations", n)
}
