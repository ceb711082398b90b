package schemas

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func mustEmbedded(t *testing.T) *Set {
	t.Helper()
	s, err := Embedded()
	assert.NilError(t, err)
	return s
}

func TestEmbeddedOnce(t *testing.T) {
	a := mustEmbedded(t)
	b := mustEmbedded(t)
	assert.Assert(t, a == b)
	assert.Equal(t, a.Source, "embedded")
	for _, n := range Names {
		assert.Assert(t, a.Has(n), n)
	}
	for _, n := range []string{"stream-event/start", "stream-event/step", "stream-event/delta"} {
		assert.Assert(t, a.Has(n), n)
	}
	assert.Assert(t, !a.Has("done"))
}

// Every embedded file declares draft 2020-12 and an $id under the project's
// own base, named after the file.
func TestEmbeddedFilesIdentity(t *testing.T) {
	for _, n := range Names {
		b, err := fs.ReadFile(embedded, n+".schema.json")
		assert.NilError(t, err)
		var m map[string]any
		assert.NilError(t, json.Unmarshal(b, &m))
		assert.Equal(t, m["$schema"], "https://json-schema.org/draft/2020-12/schema")
		assert.Equal(t, m["$id"], "https://postern-conformance.invalid/schemas/0.1/"+n+".schema.json")
	}
}

func TestUnknownName(t *testing.T) {
	got := mustEmbedded(t).Validate("nope", map[string]any{})
	assert.Equal(t, len(got), 1)
	assert.Assert(t, is.Contains(got[0].Message, `"nope"`))
}

// The agent-id pattern must reject a trailing newline: Go's RE2 '$' without
// (?m) matches only at the end of the text, unlike Perl/ECMAScript.
func TestTrailingNewlineRejected(t *testing.T) {
	s := mustEmbedded(t)
	for _, id := range []string{"acme/x\n", "acme/x\r\n", "\nacme/x"} {
		got := s.Validate("version", map[string]any{"postern": "0.1", "agent_id": id, "version": "1"})
		assert.DeepEqual(t, got, []Violation{{Path: "/agent_id", Keyword: "pattern", Message: got[0].Message}})
	}
	assert.Assert(t, len(s.Validate("version", map[string]any{"postern": "0.1", "agent_id": "acme/x", "version": "1"})) == 0)
}

func TestRequiredPathsNormalised(t *testing.T) {
	got := mustEmbedded(t).Validate("status", raw(t, `{"postern":"0.1","level":1,"state":"ready",
		"agent":{"id":"a/b"},"entitlement":{"state":"active"}}`))
	assert.DeepEqual(t, got, []Violation{
		{Path: "/entitlement/checked_at", Keyword: "required", Message: `required property "checked_at" is missing`},
		{Path: "/entitlement/stale_after_seconds", Keyword: "required", Message: `required property "stale_after_seconds" is missing`},
	})

	got = mustEmbedded(t).Validate("version", raw(t, `{}`))
	assert.DeepEqual(t, paths(got), []string{"/agent_id", "/postern", "/version"})
	for _, v := range got {
		assert.Equal(t, v.Keyword, "required")
	}
}

func TestAdditionalPropertiesPathsNormalised(t *testing.T) {
	got := mustEmbedded(t).Validate("error", raw(t, `{"error":{"code":"not_found","message":"m"},"extra":1,"a/b":2}`))
	assert.DeepEqual(t, got, []Violation{
		{Path: "/a~1b", Keyword: "additionalProperties", Message: `property "a/b" is not allowed here`},
		{Path: "/extra", Keyword: "additionalProperties", Message: `property "extra" is not allowed here`},
	})
}

func TestViolationsSortedByPath(t *testing.T) {
	got := mustEmbedded(t).Validate("status", raw(t, `{"postern":"9","level":9,"state":"x",
		"agent":{"id":"A"},"entitlement":{"state":"revoked","checked_at":"x","stale_after_seconds":-1}}`))
	assert.Assert(t, len(got) >= 6, "%v", got)
	assert.Assert(t, sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Path < got[j].Path }), "%v", got)
	for _, v := range got {
		assert.Assert(t, v.Keyword != "" && v.Message != "", "%v", v)
	}
}

// Documents decoded with UseNumber carry json.Number; raw JSON is accepted
// too; integer bounds still apply.
func TestJSONNumberDocuments(t *testing.T) {
	s := mustEmbedded(t)
	decode := func(src string) any {
		d := json.NewDecoder(strings.NewReader(src))
		d.UseNumber()
		var v any
		assert.NilError(t, d.Decode(&v))
		return v
	}
	st := `{"postern":"0.1","level":%s,"state":"ready","agent":{"id":"a/b"},"entitlement":{"state":"not_required"},"limits":{"max_concurrent_runs":%s}}`
	valid := decode(sprintf(st, "3", "1"))
	_, isNum := valid.(map[string]any)["level"].(json.Number)
	assert.Assert(t, isNum)
	assert.Assert(t, len(s.Validate("status", valid)) == 0)

	got := s.Validate("status", decode(sprintf(st, "4", "0")))
	assert.DeepEqual(t, paths(got), []string{"/level", "/limits/max_concurrent_runs"})

	got = s.Validate("status", decode(sprintf(st, "2.5", "1")))
	assert.DeepEqual(t, paths(got), []string{"/level"})

	assert.Assert(t, len(s.Validate("run-request", json.RawMessage(`{"inputs":{"n":12345678901234567890}}`))) == 0)
	assert.Equal(t, len(s.Validate("run-request", []byte(`{"inputs":{"n":true}}`))), 1)
	assert.Equal(t, s.Validate("run-request", []byte(`{"inputs":`))[0].Keyword, "json")

	// Go values that marshal to JSON work as well.
	type req struct {
		Inputs map[string]any `json:"inputs"`
	}
	assert.Assert(t, len(s.Validate("run-request", req{Inputs: map[string]any{"k": 1}})) == 0)
}

func TestFromDirEmbeddedCopy(t *testing.T) {
	dir := t.TempDir()
	for _, n := range Names {
		b, err := fs.ReadFile(embedded, n+".schema.json")
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile(filepath.Join(dir, n+".schema.json"), b, 0o644))
	}
	s, err := FromDir(dir)
	assert.NilError(t, err)
	assert.Equal(t, s.Source, dir)
	assert.Assert(t, s.Has("stream-event/step"))
	for _, c := range corpus() {
		got := s.Validate(c.schema, c.doc(t))
		assert.Equal(t, len(got) == 0, c.want == nil, c.name)
	}
}

func TestFromDirMissingFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range Names {
		if n == "entitlement" {
			continue
		}
		assert.NilError(t, os.WriteFile(filepath.Join(dir, n+".schema.json"), []byte(`{"type":"object"}`), 0o644))
	}
	_, err := FromDir(dir)
	assert.ErrorContains(t, err, "entitlement.schema.json")

	_, err = FromDir(filepath.Join(dir, "absent"))
	assert.ErrorContains(t, err, "describe.schema.json")
}

func TestFromDirBadJSON(t *testing.T) {
	dir := writeSet(t, map[string]string{"status": `{"type":`})
	_, err := FromDir(dir)
	assert.ErrorContains(t, err, "status.schema.json")
}

// Cross-file $refs resolve among the files of a directory: by $id where
// files declare one, by file name where they do not. Sub-schema names are
// offered only where the stream-event file defines them.
func TestFromDirCrossFileRefs(t *testing.T) {
	base := "https://example.invalid/s/"
	dir := writeSet(t, map[string]string{
		"describe": `{"$id":"` + base + `describe.schema.json","$defs":{"id":{"type":"string","pattern":"^[a-z]+/[a-z]+$"}},
			"type":"object","properties":{"agent":{"properties":{"id":{"$ref":"#/$defs/id"}}}}}`,
		"status": `{"$id":"` + base + `status.schema.json","type":"object",
			"properties":{"agent":{"properties":{"id":{"$ref":"describe.schema.json#/$defs/id"}}}}}`,
		"version": `{"$id":"` + base + `version.schema.json","type":"object",
			"properties":{"agent_id":{"$ref":"` + base + `describe.schema.json#/$defs/id"}}}`,
		// No $id on these two: relative refs resolve by file name.
		"run-response": `{"type":"object","properties":{"output":{"$ref":"run-request.schema.json#/$defs/out"}}}`,
		"run-request":  `{"$defs":{"out":{"type":"object","required":["value"]}}}`,
	})
	s, err := FromDir(dir)
	assert.NilError(t, err)
	assert.Assert(t, !s.Has("stream-event/start"))
	assert.Assert(t, s.Has("stream-event"))

	assert.DeepEqual(t, paths(s.Validate("status", raw(t, `{"agent":{"id":"Bad"}}`))), []string{"/agent/id"})
	assert.Assert(t, len(s.Validate("status", raw(t, `{"agent":{"id":"a/b"}}`))) == 0)
	assert.DeepEqual(t, paths(s.Validate("version", raw(t, `{"agent_id":"x"}`))), []string{"/agent_id"})
	assert.DeepEqual(t, paths(s.Validate("run-response", raw(t, `{"output":{}}`))), []string{"/output/value"})
}

// A $ref outside the set is never fetched: compiling fails instead.
func TestFromDirNoExternalFetch(t *testing.T) {
	dir := writeSet(t, map[string]string{
		"status": `{"$ref":"https://example.invalid/elsewhere.json"}`,
	})
	_, err := FromDir(dir)
	assert.ErrorContains(t, err, "status.schema.json")
}

func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Embedded()
			if err != nil {
				t.Error(err)
				return
			}
			if got := s.Validate("version", map[string]any{"postern": "0.1", "agent_id": "A", "version": "1"}); len(got) != 1 {
				t.Errorf("got %v", got)
			}
		}()
	}
	wg.Wait()
}

// No schema file should reuse the specification's own identifiers.
func TestNoSpecIdentifiers(t *testing.T) {
	re := regexp.MustCompile(`sigrix\.io`)
	for _, n := range Names {
		b, err := fs.ReadFile(embedded, n+".schema.json")
		assert.NilError(t, err)
		assert.Assert(t, !re.Match(b), n)
		assert.Assert(t, bytes.Contains(b, []byte("§")), "%s cites no section", n)
	}
}

// writeSet writes a directory holding every name in Names; files not given
// in overrides get a permissive schema.
func writeSet(t *testing.T, overrides map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "with space%20#")
	assert.NilError(t, os.Mkdir(dir, 0o755))
	for _, n := range Names {
		src, ok := overrides[n]
		if !ok {
			src = `{}`
		}
		assert.NilError(t, os.WriteFile(filepath.Join(dir, n+".schema.json"), []byte(src), 0o644))
	}
	return dir
}

func paths(vs []Violation) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return out
}

func sprintf(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}
