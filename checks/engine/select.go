package engine

import "strings"

// Lookup returns the rule of rules with id, or nil.
func Lookup[E any](rules []*Rule[E], id string) *Rule[E] {
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Select keeps the rules whose ID or section matches any pattern. A pattern
// is a rule ID, a section ("4.4", "§4.4", which includes 4.4.x), or an ID
// prefix ending in "*". No patterns keeps everything.
func Select[E any](rules []*Rule[E], patterns []string) []*Rule[E] {
	if len(patterns) == 0 {
		return rules
	}
	var out []*Rule[E]
	for _, r := range rules {
		for _, p := range patterns {
			if Matches(r, p) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Matches reports whether pattern names r.
func Matches[E any](r *Rule[E], pattern string) bool {
	p := strings.TrimPrefix(strings.TrimSpace(pattern), "§")
	switch {
	case p == "":
		return false
	case strings.HasSuffix(p, "*"):
		return strings.HasPrefix(r.ID, strings.TrimSuffix(p, "*"))
	default:
		return r.ID == p || r.Section == p || strings.HasPrefix(r.Section, p+".")
	}
}
