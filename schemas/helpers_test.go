package schemas

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// del, as a value passed to edit, removes the member instead of setting it.
var del = &struct{ deleted bool }{true}

// set is one edit to a base document: a JSON pointer and the value to put
// there (or del).
type set struct {
	ptr string
	val any
}

// doc decodes base and applies edits in order. Pointers address existing
// containers; the last token may name a new member.
func doc(t *testing.T, base string, edits ...set) any {
	t.Helper()
	var d any
	assert.NilError(t, json.Unmarshal([]byte(base), &d))
	for _, e := range edits {
		toks := strings.Split(e.ptr, "/")[1:]
		var parent any = d
		for _, tok := range toks[:len(toks)-1] {
			parent = child(t, parent, tok)
		}
		last := toks[len(toks)-1]
		switch p := parent.(type) {
		case map[string]any:
			if e.val == del {
				delete(p, last)
			} else {
				p[last] = e.val
			}
		case []any:
			i, err := strconv.Atoi(last)
			assert.NilError(t, err)
			p[i] = e.val
		default:
			t.Fatalf("cannot edit %s", e.ptr)
		}
	}
	return d
}

func child(t *testing.T, v any, tok string) any {
	t.Helper()
	switch c := v.(type) {
	case map[string]any:
		return c[tok]
	case []any:
		i, err := strconv.Atoi(tok)
		assert.NilError(t, err)
		return c[i]
	}
	t.Fatalf("no container at %q", tok)
	return nil
}

// raw decodes a literal JSON document.
func raw(t *testing.T, s string) any {
	t.Helper()
	return doc(t, s)
}

// vio is an expected violation, by path and keyword.
type vio struct{ path, keyword string }

// hasAll asserts every expected violation appears among got.
func hasAll(t *testing.T, got []Violation, want []vio) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.Path == w.path && g.Keyword == w.keyword {
				found = true
				break
			}
		}
		assert.Assert(t, found, "want violation %s [%s]; got %v", w.path, w.keyword, got)
	}
}
