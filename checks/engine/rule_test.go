package engine

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func contractRule(chain string) *Rule[struct{}] {
	return &Rule[struct{}]{ID: "4.3/media-type", Section: "4.3", Level: 3, Keyword: Must,
		Binding: Contract, Chain: chain, Title: "stream is text/event-stream", Probe: func(*T[struct{}]) {}}
}

// A contract binding names the section defining the verb, fails like a
// chain, and states the chain §3 gives it.
func TestContractBinding(t *testing.T) {
	r := contractRule("§4.3")
	assert.NilError(t, r.Validate())
	assert.Check(t, is.Equal(r.Strength(), Fail))
	assert.Check(t, is.Equal(r.ChainText(), "§3: implements the verb as §4.3 defines it"))

	for _, bad := range []string{"", "4.3", "§", "§4.", "§9", "the table"} {
		err := contractRule(bad).Validate()
		assert.Check(t, err != nil && strings.Contains(err.Error(), "Contract binding"), "chain %q: %v", bad, err)
	}

	r.Keyword = Should
	assert.Check(t, is.Equal(r.Strength(), Warn), "a SHOULD warns whatever binds it")
	r.Keyword, r.Binding, r.Chain = Must, Inferred, ""
	assert.Check(t, is.Equal(r.Strength(), Warn))
	assert.Check(t, is.Equal(r.ChainText(), ""))
}
