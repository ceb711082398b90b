package runner

import (
	"fmt"
	"strings"

	"github.com/sigrix-io/postern-conformance/schemas"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Schema violations are shared out between rules. A rule that judges part of
// a document more precisely than its schema rule claims that part (Rule.Claims:
// {Doc: "status", Path: "/entitlement/checked_at"}, {Doc: "error", Path:
// "/*", Keyword: "additionalProperties"}); the claimed violations become
// that rule's findings and leave the document's schema rule, so one breach
// is reported by exactly one rule. Claims are read from the whole registry,
// not from the rules a run selects, so what a rule reports does not depend
// on --rule.

func split(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// claims reports whether c claims violation v of doc. A pattern claims the
// path it names and everything below it; "*" matches one segment.
func claims(c Claim, doc string, v schemas.Violation) bool {
	if c.Doc != doc || (c.Keyword != "" && c.Keyword != v.Keyword) {
		return false
	}
	want, got := split(c.Path), split(v.Path)
	if len(got) < len(want) {
		return false
	}
	for i, seg := range want {
		if seg != "*" && seg != got[i] {
			return false
		}
	}
	return true
}

// ownerOf returns the rule of the registry that claims v, or "".
func ownerOf(registry []*Rule, doc string, v schemas.Violation) string {
	for _, r := range registry {
		for _, c := range r.Claims {
			if claims(c, doc, v) {
				return r.ID
			}
		}
	}
	return ""
}

// Violations validates v against the named schema.
func (e *Env) Violations(doc string, v any) []schemas.Violation {
	if v == nil {
		return nil
	}
	return e.Schemas.Validate(doc, v)
}

// bodyViolations is Violations of v, computed once per exchange and
// schema where v is the decoded body of ex: a schema whose name holds no
// slash judges a whole body (error, status, describe, run-response). One
// named with a slash (stream-event/delta) judges a part of one, an event,
// and is not memoised.
func (e *Env) bodyViolations(doc string, ex *wire.Exchange, v any) []schemas.Violation {
	if ex == nil || v == nil || strings.Contains(doc, "/") {
		return e.Violations(doc, v)
	}
	k := judgedKey{doc, ex}
	e.mu.Lock()
	vs, done := e.judged[k]
	e.mu.Unlock()
	if done {
		return vs
	}
	vs = e.Violations(doc, v)
	e.mu.Lock()
	if e.judged == nil {
		e.judged = map[judgedKey][]schemas.Violation{}
	}
	e.judged[k] = vs
	e.mu.Unlock()
	return vs
}

// violationAt is where v lies, for a message: its JSON pointer, or "(root)".
func violationAt(v schemas.Violation) string {
	if v.Path == "" {
		return "(root)"
	}
	return v.Path
}

// schemaFindings reports, for rule t.Rule, the violations of doc it is
// responsible for: those it claims if it has claims on doc, otherwise those
// no selected rule claims.
// why, where given, is added to each finding: the rule's own reading of
// the spec beside the schema's words.
func schemaFindings(t *T, doc string, ex *wire.Exchange, v any, why ...string) {
	suffix := ""
	if len(why) > 0 && why[0] != "" {
		suffix = "; " + why[0]
	}
	mine := false
	for _, c := range t.Rule.Claims {
		mine = mine || c.Doc == doc
	}
	var passed []string
	for _, viol := range t.Env.bodyViolations(doc, ex, v) {
		own := ownerOf(t.Registry(), doc, viol)
		switch {
		case own == t.Rule.ID, !mine && own == "":
			finding(t, viol.Inferred)(ex, "%s %s: %s%s", doc, violationAt(viol), viol.Message, suffix)
		case !mine:
			passed = append(passed, fmt.Sprintf("%s %s → %s", doc, viol.Path, own))
		}
	}
	if len(passed) > 0 {
		t.Note("left to the rule that judges them: %s", strings.Join(passed, "; "))
	}
}
