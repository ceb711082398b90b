package runner

import (
	"testing"

	"gotest.tools/v3/assert"
)

// describeOf is a describe document declaring inputs, each "key" or
// "key!" for a required one, all of type text.
func describeOf(keys ...string) map[string]any {
	var inputs []any
	for _, k := range keys {
		req := k[len(k)-1] == '!'
		if req {
			k = k[:len(k)-1]
		}
		inputs = append(inputs, map[string]any{"key": k, "label": k, "type": "text", "required": req})
	}
	return map[string]any{"inputs": inputs}
}

// TestCaseVariantNamesNoDeclaredKey: the variant sent in place of a
// required key is never a key describe declares, and a required key that
// no other declared key equals but for case is preferred.
func TestCaseVariantNamesNoDeclaredKey(t *testing.T) {
	for _, c := range []struct {
		name       string
		describe   map[string]any
		key, sent  string
		notApplies bool
	}{
		{name: "the reference runner's", describe: describeOf("prompt!", "depth", "count", "region"), key: "prompt", sent: "PROMPT"},
		{name: "upper case declared", describe: describeOf("prompt!", "PROMPT"), key: "prompt", sent: "Prompt"},
		{name: "an ambiguous key passed over", describe: describeOf("prompt!", "Prompt", "mode!"), key: "mode", sent: "MODE"},
		{name: "only an ambiguous key", describe: describeOf("prompt!", "Prompt"), key: "prompt", sent: "PROMPT"},
		{name: "every variant declared", describe: describeOf("a!", "A"), notApplies: true},
		{name: "every variant declared, another key free", describe: describeOf("a!", "A", "b!"), key: "b", sent: "B"},
		{name: "no letter to change", describe: describeOf("123!", "_x"), notApplies: true},
		{name: "nothing required", describe: describeOf("prompt"), notApplies: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := readInputs(c.describe).caseVariantCase()
			if c.notApplies {
				assert.Assert(t, why != "", "built %+v", got)
				return
			}
			assert.Equal(t, why, "")
			_, kept := got.inputs[c.key]
			assert.Assert(t, !kept, "%s must be left out: %v", c.key, got.inputs)
			assert.Equal(t, got.inputs[c.sent], "probe", "%v", got.inputs)
			for _, d := range readInputs(c.describe).decls {
				if d.required && d.key != c.key {
					assert.Equal(t, got.inputs[d.key], "probe", "every other required input is sent valid: %v", got.inputs)
				}
			}
		})
	}
}

func TestCaseSpellingsDifferOnlyInCase(t *testing.T) {
	assert.DeepEqual(t, caseSpellings("prompt"), []string{"PROMPT", "Prompt"})
	assert.DeepEqual(t, caseSpellings("Max_len.2"), []string{"MAX_LEN.2", "max_len.2", "mAX_LEN.2"})
	assert.Assert(t, len(caseSpellings("1-2_3")) == 0)
}
