// Package envelope reads a refusal's body as §2.1's error envelope, the
// same way for every mode: the runner check, the entitlement walk and the
// distributor check judge the closed root and the envelope's members with
// these, each in its own rules and words.
package envelope

import (
	"encoding/json"
	"maps"
	"slices"
)

// Extras is the members a body's root carries beside error, sorted: §2.1
// closes the root, so any is a sibling a conforming implementation does not
// emit. A root that is not an object (nil) has none.
func Extras(root map[string]any) []string {
	return slices.DeleteFunc(slices.Sorted(maps.Keys(root)), func(k string) bool { return k == "error" })
}

// Fault says how body fails to be §2.1's closed envelope, "" where it is
// one: a JSON object whose only member is error, an object holding code and
// message as strings. inferred marks the one breach only the schema states,
// a detail that is neither an object, a string nor null.
func Fault(body []byte) (why string, inferred bool) {
	var root map[string]any
	if err := json.Unmarshal(body, &root); err != nil || root == nil {
		return "the body is not a JSON object", false
	}
	if extra := Extras(root); len(extra) > 0 {
		return "the root has a member " + extra[0] + " beside error", false
	}
	e, _ := root["error"].(map[string]any)
	if e == nil {
		return "error is missing or not an object", false
	}
	if _, ok := e["code"].(string); !ok {
		return "error.code is missing or not a string", false
	}
	if _, ok := e["message"].(string); !ok {
		return "error.message is missing or not a string", false
	}
	switch e["detail"].(type) {
	case nil, map[string]any, string:
	default:
		return "error.detail is neither an object, a string nor null", true
	}
	return "", false
}
