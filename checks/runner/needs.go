package runner

import (
	"fmt"

	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// The needs every family shares. Posture needs that only one family uses
// live beside that family; those several files use live in posture.go, with
// the posture predicates they are built on.
var (
	NeedStatus = Need{Name: "status", Check: func(e *Env) string {
		if e.Status.Obj == nil {
			return "GET status gave no JSON object (" + e.Status.Err + ")"
		}
		return ""
	}, Kind: engine.Undecided}
	NeedDescribe = Need{Name: "describe", Check: func(e *Env) string {
		if e.Describe.Obj == nil {
			return "GET describe gave no JSON object (" + e.Describe.Err + ")"
		}
		return ""
	}, Kind: engine.Undecided}
	NeedOrigin = Need{Name: "origin", Check: func(e *Env) string {
		if e.Origin == "" {
			return "needs --origin: an origin the runner is configured to allow"
		}
		return ""
	}, Kind: engine.NeedsOption}
	NeedExecute = Need{Name: "execute", Check: func(e *Env) string {
		if !e.Execute {
			return "needs --execute: deciding it means running the agent"
		}
		return ""
	}, Kind: engine.NeedsOption}
	NeedAuth = Need{Name: "auth", Check: func(e *Env) string {
		if !e.Client.HasHeader("Authorization") {
			return "needs --header 'Authorization: …': for a runner that requires inbound authentication (§7)"
		}
		return ""
	}, Kind: engine.NeedsOption}
	NeedNoAuth = Need{Name: "no-auth", Check: func(e *Env) string {
		if e.Client.HasHeader("Authorization") {
			return "applies to a runner that requires no inbound authentication; --header gave one"
		}
		return ""
	}}
)

// needStatusField is met when status carries a member equal to want.
func needStatusField(name string, want any, path ...string) Need {
	return Need{Name: name, Check: func(e *Env) string {
		if e.Status.Obj == nil {
			return "GET status gave no JSON object"
		}
		v, _ := Path(e.Status.Obj, path...)
		if !sameJSON(v, want) {
			return fmt.Sprintf("applies where status.%s is %v; this runner reports %v", joinPath(path), want, show(v))
		}
		return ""
	}}
}

func joinPath(p []string) string {
	s := ""
	for i, k := range p {
		if i > 0 {
			s += "."
		}
		s += k
	}
	return s
}

func show(v any) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprint(v)
}

// sameJSON compares a decoded JSON value with a Go value by JSON type as
// well as text: "true" is not true, and 1 is not "1".
func sameJSON(v, want any) bool {
	switch w := want.(type) {
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	case string:
		s, ok := v.(string)
		return ok && s == w
	case int:
		n, ok := AsInt(v)
		return ok && n == w
	}
	return fmt.Sprint(v) == fmt.Sprint(want)
}
