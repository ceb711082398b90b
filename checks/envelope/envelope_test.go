package envelope

import "testing"

func TestFault(t *testing.T) {
	for body, want := range map[string]struct {
		why      string
		inferred bool
	}{
		`{"error":{"code":"not_found","message":"No such agent.","detail":null}}`: {},
		`{"error":{"code":"not_found","message":"m","detail":{"a":1}}}`:           {},
		`{"error":{"code":"not_found","message":"m"}}`:                            {}, // an absent detail reads as null
		`{"error":{"code":"x","message":"m"},"z":1,"b":2}`:                        {why: "the root has a member b beside error"},
		`not json`:                  {why: "the body is not a JSON object"},
		`null`:                      {why: "the body is not a JSON object"},
		`[]`:                        {why: "the body is not a JSON object"},
		`{"error":"not_found"}`:     {why: "error is missing or not an object"},
		`{"error":{"message":"m"}}`: {why: "error.code is missing or not a string"},
		`{"error":{"code":"x"}}`:    {why: "error.message is missing or not a string"},
		`{"error":{"code":"x","message":"m","detail":3}}`: {why: "error.detail is neither an object, a string nor null", inferred: true},
	} {
		why, inferred := Fault([]byte(body))
		if why != want.why || inferred != want.inferred {
			t.Errorf("Fault(%s) = %q, %v; want %q, %v", body, why, inferred, want.why, want.inferred)
		}
	}
}

func TestExtras(t *testing.T) {
	if got := Extras(map[string]any{"error": 1, "z": 1, "a": 2}); len(got) != 2 || got[0] != "a" || got[1] != "z" {
		t.Errorf("Extras = %v, want [a z]", got)
	}
	if got := Extras(nil); len(got) != 0 {
		t.Errorf("Extras(nil) = %v", got)
	}
}
