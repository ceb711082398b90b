package checks

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
