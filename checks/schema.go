package checks

import (
	"fmt"
	"strings"

	"github.com/sigrix-io/postern-conformance/schemas"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Schema violations are shared out between rules. A rule that judges part of
// a document more precisely than its schema rule claims that part with Owns
// ("status:/entitlement/checked_at", "describe:/inputs/*/key",
// "error:/*#additionalProperties"); the claimed violations become that
// rule's findings and leave the document's schema rule, so one breach is
// reported by exactly one rule.

// owner is one claim: a document, a path pattern and optionally a keyword.
type owner struct {
	rule, doc, keyword string
	path               []string
}

func parseOwns(r *Rule) []owner {
	var out []owner
	for _, o := range r.Owns {
		doc, rest, _ := strings.Cut(o, ":")
		path, kw, _ := strings.Cut(rest, "#")
		out = append(out, owner{rule: r.ID, doc: doc, keyword: kw, path: split(path)})
	}
	return out
}

func split(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// claims reports whether o claims violation v of doc. A pattern claims the
// path it names and everything below it; "*" matches one segment.
func (o owner) claims(doc string, v schemas.Violation) bool {
	if o.doc != doc || (o.keyword != "" && o.keyword != v.Keyword) {
		return false
	}
	got := split(v.Path)
	if len(got) < len(o.path) {
		return false
	}
	for i, seg := range o.path {
		if seg != "*" && seg != got[i] {
			return false
		}
	}
	return true
}

// ownerOf returns the selected rule that claims v, or "".
func (e *Env) ownerOf(doc string, v schemas.Violation) string {
	for _, r := range e.selected {
		for _, o := range parseOwns(r) {
			if o.claims(doc, v) {
				return o.rule
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
func (t *T) schemaFindings(doc string, ex *wire.Exchange, v any) {
	mine := false
	for _, o := range parseOwns(t.Rule) {
		mine = mine || o.doc == doc
	}
	var passed []string
	for _, viol := range t.Env.Violations(doc, v) {
		own := t.Env.ownerOf(doc, viol)
		switch {
		case own == t.Rule.ID, !mine && own == "":
			t.report(viol.Inferred)(ex, "%s %s: %s", doc, violationAt(viol), viol.Message)
		case !mine:
			passed = append(passed, fmt.Sprintf("%s %s → %s", doc, viol.Path, own))
		}
	}
	if len(passed) > 0 {
		t.Note("left to the rule that judges them: %s", strings.Join(passed, "; "))
	}
}
