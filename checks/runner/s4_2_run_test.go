package runner

import (
	"encoding/json"
	"reflect"
	"testing"

	"gotest.tools/v3/assert"
)

func TestReserialisedIsTheSameRequest(t *testing.T) {
	inputs := map[string]any{"prompt": "a <b> & \"c\"", "count": json.Number("3"), "depth": "quick"}
	canonical := runRequest("run", inputs, "", "").Body
	again := reserialised(inputs)
	assert.Assert(t, string(canonical) != again, "the bytes must differ")
	var a, b any
	assert.NilError(t, json.Unmarshal(canonical, &a))
	assert.NilError(t, json.Unmarshal([]byte(again), &b))
	assert.Assert(t, reflect.DeepEqual(a, b), "%s\n%s", canonical, again)
}

func TestOtherInputsChangeOneValidValue(t *testing.T) {
	describe := map[string]any{"inputs": []any{
		map[string]any{"key": "mode", "type": "select", "required": true, "default": "b",
			"validation": map[string]any{"options": []any{"a", "b", "c"}}},
		map[string]any{"key": "code", "type": "text", "validation": map[string]any{"pattern": "^[a-z]{2}$"}},
	}}
	inputs, why := validInputs(describe, false)
	assert.Equal(t, why, "")
	assert.DeepEqual(t, inputs, map[string]any{"mode": "b"})
	other, what, ok := readInputs(describe).otherInputs(inputs)
	assert.Assert(t, ok)
	// Neither the value sent nor the declared default: a runner filling in
	// defaults still sees two different requests.
	assert.DeepEqual(t, other, map[string]any{"mode": "a"})
	assert.Equal(t, what, `mode "a" instead of "b"`)
}

func TestValidInputsSaysWhyNot(t *testing.T) {
	describe := map[string]any{"inputs": []any{
		map[string]any{"key": "id", "type": "text", "required": true, "validation": map[string]any{"pattern": "^[0-9]{6}-[A-Z]{3}$"}},
	}}
	_, why := validInputs(describe, false)
	assert.Assert(t, why != "")
}

// A pattern may be read as a search or as a whole-string match (§4.1.1 does
// not say); a value the checker sends as valid must pass either reading.
func TestValidValuesMatchThePatternBothWays(t *testing.T) {
	d := inputDecl{key: "code", typ: "text", validation: map[string]any{"pattern": "[a-z]{2}"}}
	assert.Assert(t, d.accepts("ab"))
	assert.Assert(t, !d.accepts("probe"), "a search match alone is not enough")
	v, ok := d.validValue(nil)
	assert.Assert(t, ok)
	assert.Equal(t, v, "ab")

	unreadable := inputDecl{key: "w", typ: "text", validation: map[string]any{"pattern": `(?<=a)b`}}
	assert.Assert(t, unreadable.accepts("anything"), "a pattern Go cannot compile is taken as passed")
}

func TestOutputMismatchComparesTheTypeOnly(t *testing.T) {
	describe := map[string]any{"output": map[string]any{"type": "bytes", "media_type": "image/png"}}
	probs, notes := outputMismatch(describe, map[string]any{"type": "bytes", "media_type": "image/jpeg", "value": ""})
	assert.Equal(t, len(probs), 0)
	assert.Equal(t, len(notes), 1)

	probs, _ = outputMismatch(describe, map[string]any{"type": "text", "value": "x"})
	assert.Equal(t, len(probs), 1)

	_, notes = outputMismatch(describe, map[string]any{"type": "bytes", "media_type": "IMAGE/PNG", "value": ""})
	assert.Equal(t, len(notes), 0, "media types compare case-insensitively")
}
