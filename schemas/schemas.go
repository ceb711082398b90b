// Package schemas holds the project's own JSON Schemas (draft 2020-12) for
// every Postern payload, written from SPEC.md §1–§8, embedded in the binary
// and compiled with format assertions on (date-time and uri are enforced).
//
// A Set validates a decoded JSON document against one schema by name and
// reports each failure as a leaf Violation with a JSON-pointer path.
//
// Binding. The schemas are the project's own reading of SPEC.md, and not
// every constraint in them binds a runner. One binds where a bold MUST,
// MUST NOT or REQUIRED states it, or where SPEC's prose states it as the
// wire contract of a verb (a member's presence, type, range or meaning:
// §3 makes a runner implement its verbs as §2 and §4 define them). The
// others rest on the schema or an example alone, on latitude SPEC leaves, or
// on a reading a careful implementer could contest, and each such
// constraint is annotated where it
// is written, with the custom keyword "x-inferred" on the subschema that
// holds it (or on one above it): an object mapping the constraint's keyword
// path relative to that subschema ("pattern", "required/postern",
// "properties/latest" for a false schema, "properties/name/type") to why it
// is inferred. A Violation of such a constraint has Inferred set and Why
// filled, and its Message says so; a checker reports it as a warning rather
// than a failure. A set loaded with FromDir from files without the
// annotation classifies nothing as inferred.
//
// Besides the file names in Names, a Set answers to three sub-schema names
// for the stream payloads of §4.3: "stream-event/start", "stream-event/step"
// and "stream-event/delta", which map to #/$defs/start, #/$defs/step and
// #/$defs/delta of stream-event.schema.json. Callers should use those, since
// the payloads are open objects and the bare "stream-event" schema only asks
// that a document fit at least one of them.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed *.schema.json
var embedded embed.FS

// Names are the payloads a set covers; each is the file <name>.schema.json.
var Names = []string{"describe", "status", "error", "run-request", "run-response", "stream-event", "entitlement", "version"}

// subNames maps the extra names a Set answers to onto a schema file and a
// fragment inside it.
var subNames = map[string][2]string{
	"stream-event/start": {"stream-event", "#/$defs/start"},
	"stream-event/step":  {"stream-event", "#/$defs/step"},
	"stream-event/delta": {"stream-event", "#/$defs/delta"},
}

// Set is a compiled set of schemas.
type Set struct {
	// Source says where the set came from: "embedded" or a directory.
	Source string

	compiled map[string]*jsonschema.Schema
	// raw is each file's decoded JSON by its resource URL, read for the
	// x-inferred annotations.
	raw map[string]any
}

// Violation is one leaf failure of a document against a schema.
type Violation struct {
	// Path is the JSON pointer of the offending instance location ("" is
	// the root). For "required" and "additionalProperties" failures it
	// names the missing or extra property itself.
	Path string
	// Keyword is the failing schema keyword: "required", "type", "pattern",
	// "enum", "const", "format", "minimum", "additionalProperties", ...;
	// "false" for a false schema (a member not allowed there).
	Keyword string
	// Message is a plain-English description; for an inferred constraint it
	// ends "(inferred: Why)".
	Message string
	// Inferred marks a constraint no bold keyword of SPEC.md binds (see the
	// package doc): a checker warns on it rather than failing.
	Inferred bool
	// Why says, for an inferred constraint, what it rests on instead.
	Why string
}

func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "(root)"
	}
	return fmt.Sprintf("%s: %s [%s]", p, v.Message, v.Keyword)
}

var (
	embeddedOnce sync.Once
	embeddedSet  *Set
	embeddedErr  error
)

// Embedded returns the project's own set, compiled once per process.
func Embedded() (*Set, error) {
	embeddedOnce.Do(func() {
		embeddedSet, embeddedErr = load(embedded, "embedded")
	})
	return embeddedSet, embeddedErr
}

// FromDir loads <name>.schema.json for every name in Names from dir (for
// example a checkout of the specification's schemas/ folder). A missing
// file is an error naming it. $refs between those files resolve, by each
// file's $id where it has one; nothing else is fetched. Sub-schema names
// (see the package doc) are available only if the directory's
// stream-event schema has the matching $defs.
func FromDir(dir string) (*Set, error) {
	return load(os.DirFS(dir), dir)
}

// load reads and compiles every schema in Names from fsys.
func load(fsys fs.FS, source string) (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})

	urls := map[string]string{}
	raw := map[string]any{}
	for _, name := range Names {
		file := name + ".schema.json"
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("schemas %s: missing %s", source, file)
			}
			return nil, fmt.Errorf("schemas %s: %s: %w", source, file, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schemas %s: %s: %w", source, file, err)
		}
		u := resourceURL(doc, source, file)
		if err := c.AddResource(u, doc); err != nil {
			return nil, fmt.Errorf("schemas %s: %s: %w", source, file, err)
		}
		urls[name] = u
		raw[u] = doc
	}

	s := &Set{Source: source, compiled: map[string]*jsonschema.Schema{}, raw: raw}
	for _, name := range Names {
		sch, err := c.Compile(urls[name])
		if err != nil {
			return nil, fmt.Errorf("schemas %s: %s.schema.json: %w", source, name, err)
		}
		s.compiled[name] = sch
	}
	for sub, ref := range subNames {
		if sch, err := c.Compile(urls[ref[0]] + ref[1]); err == nil {
			s.compiled[sub] = sch
		}
	}
	return s, nil
}

// resourceURL is the URL a schema file is registered under: its own
// absolute $id if it declares one, so that refs by $id resolve among the
// set, otherwise a file URL under the source.
func resourceURL(doc any, source, file string) string {
	if m, ok := doc.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok && strings.Contains(id, "://") {
			id, _, _ = strings.Cut(id, "#")
			return id
		}
	}
	dir, err := filepath.Abs(source)
	if err != nil || source == "embedded" {
		dir = "/embedded"
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, file))}).String()
}

// noLoader refuses every URL, so a set never reads or fetches anything
// beyond the files it was given (meta-schemas are built into the library).
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not one of the schema files in the set", u)
}

// Has reports whether the set can validate against name.
func (s *Set) Has(name string) bool {
	_, ok := s.compiled[name]
	return ok
}

// Validate checks a decoded JSON document against the named schema and
// returns its leaf violations sorted by Path; nil means valid. doc may be
// anything encoding/json can marshal (as decoded with or without
// UseNumber), or raw JSON as json.RawMessage or []byte. An unknown name
// yields one Violation saying so.
func (s *Set) Validate(name string, doc any) []Violation {
	sch, ok := s.compiled[name]
	if !ok {
		return []Violation{{Keyword: "schema", Message: fmt.Sprintf("no schema named %q", name)}}
	}
	inst, err := normalise(doc)
	if err != nil {
		return []Violation{{Keyword: "json", Message: "document is not JSON: " + err.Error()}}
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Keyword: "schema", Message: err.Error()}}
	}
	return dedupe(sortViolations(s.leaves(ve, nil)))
}

// sortViolations orders violations by Path, then Keyword, then Message.
func sortViolations(vs []Violation) []Violation {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Keyword != b.Keyword {
			return a.Keyword < b.Keyword
		}
		return a.Message < b.Message
	})
	return vs
}

// normalise turns doc into the value shape the validator expects, with
// numbers as json.Number, by a round trip through encoding/json.
func normalise(doc any) (any, error) {
	var raw []byte
	switch d := doc.(type) {
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

var printer = message.NewPrinter(language.English)

// leaves flattens an error tree into leaf violations. anyOf/oneOf failures
// where no branch matched are reported as one violation at that location,
// carrying each branch's reasons, since the leaves of branches that were
// never meant to apply would mislead.
func (s *Set) leaves(e *jsonschema.ValidationError, out []Violation) []Violation {
	path := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			var why []string
			for i, c := range e.Causes {
				var parts []string
				for _, v := range sortViolations(s.leaves(c, nil)) {
					parts = append(parts, v.String())
				}
				why = append(why, fmt.Sprintf("alternative %d: %s", i+1, strings.Join(parts, "; ")))
			}
			return append(out, s.classify(e, []string{keyword(k)}, Violation{Path: path, Keyword: keyword(k),
				Message: "matches none of the allowed alternatives (" + strings.Join(why, " | ") + ")"}))
		}
	case *kind.PropertyNames:
		// The causes describe the name validated as a bare string; report
		// them at the property itself.
		var inner []Violation
		for _, c := range e.Causes {
			inner = s.leaves(c, inner)
		}
		var parts []string
		for _, v := range sortViolations(inner) {
			parts = append(parts, v.Message)
		}
		return append(out, s.classify(e, []string{"propertyNames"}, Violation{Path: path + "/" + escape(k.Property), Keyword: "propertyNames",
			Message: fmt.Sprintf("property name %q is not allowed: %s", k.Property, strings.Join(parts, "; "))}))
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = s.leaves(c, out)
		}
		return out
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			out = append(out, s.classify(e, []string{"required", p}, Violation{Path: path + "/" + escape(p), Keyword: "required",
				Message: fmt.Sprintf("required property %q is missing", p)}))
		}
		return out
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, s.classify(e, []string{"additionalProperties"}, Violation{Path: path + "/" + escape(p), Keyword: "additionalProperties",
				Message: fmt.Sprintf("property %q is not allowed here", p)}))
		}
		return out
	case *kind.FalseSchema:
		return append(out, s.classify(e, nil, Violation{Path: path, Keyword: "false",
			Message: "this member is not allowed here"}))
	case *kind.Not:
		return append(out, s.classify(e, []string{"not"}, Violation{Path: path, Keyword: "not",
			Message: "matches a form the schema excludes" + s.describeNot(e)}))
	}
	kp := e.ErrorKind.KeywordPath()
	if len(kp) == 0 {
		kp = []string{keyword(e.ErrorKind)}
	}
	return append(out, s.classify(e, kp, Violation{Path: path, Keyword: keyword(e.ErrorKind),
		Message: e.ErrorKind.LocalizedString(printer)}))
}

// classify marks v inferred where the constraint that failed, at keyword
// path kw below e's schema location, carries an x-inferred annotation on
// its subschema or on one enclosing it in the same file.
func (s *Set) classify(e *jsonschema.ValidationError, kw []string, v Violation) Violation {
	if why, ok := s.inferred(e.SchemaURL, kw); ok {
		v.Inferred, v.Why = true, why
		v.Message += " (inferred: " + why + ")"
	}
	return v
}

// inferred looks for the annotation of the constraint at schemaURL + kw.
func (s *Set) inferred(schemaURL string, kw []string) (string, bool) {
	base, frag, _ := strings.Cut(schemaURL, "#")
	doc, ok := s.raw[base]
	if !ok {
		return "", false
	}
	toks := append(unpointer(frag), kw...)
	for i := len(toks); i >= 0; i-- {
		m, ok := walk(doc, toks[:i]).(map[string]any)
		if !ok {
			continue
		}
		if ann, ok := m["x-inferred"].(map[string]any); ok {
			if why, ok := ann[strings.Join(toks[i:], "/")].(string); ok {
				return why, true
			}
		}
	}
	return "", false
}

// describeNot says, for a failed "not" of a single pattern, what the
// pattern was.
func (s *Set) describeNot(e *jsonschema.ValidationError) string {
	base, frag, _ := strings.Cut(e.SchemaURL, "#")
	m, _ := walk(s.raw[base], unpointer(frag)).(map[string]any)
	n, _ := m["not"].(map[string]any)
	if p, ok := n["pattern"].(string); ok && len(n) == 1 {
		return fmt.Sprintf(": it matches the excluded pattern %q", p)
	}
	return ""
}

// unpointer splits a JSON pointer (RFC 6901, possibly percent-encoded as a
// URL fragment) into its tokens.
func unpointer(frag string) []string {
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if frag == "" || frag == "/" {
		return nil
	}
	var out []string
	for _, t := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		out = append(out, pointerUnescaper.Replace(t))
	}
	return out
}

// walk follows tokens down a decoded JSON document; nil where they lead
// nowhere.
func walk(doc any, toks []string) any {
	for _, t := range toks {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// keyword names the schema keyword behind an error kind.
func keyword(k jsonschema.ErrorKind) string {
	if kp := k.KeywordPath(); len(kp) > 0 {
		return kp[0]
	}
	switch k.(type) {
	case *kind.FalseSchema:
		return "false"
	case *kind.Not:
		return "not"
	case *kind.InvalidJsonValue:
		return "type"
	case *kind.RefCycle:
		return "$ref"
	}
	return "schema"
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(tok string) string {
	return pointerEscaper.Replace(tok)
}

// dedupe drops exact repeats from a sorted slice.
func dedupe(vs []Violation) []Violation {
	out := vs[:0]
	for i, v := range vs {
		if i > 0 && v == vs[i-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}

// pointerEscaper and pointerUnescaper turn a key into a JSON pointer token
// and back (RFC 6901).
var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)
