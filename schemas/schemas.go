// Package schemas holds the project's own JSON Schemas (draft 2020-12) for
// every Postern payload, written from SPEC.md §1–§8, embedded in the binary
// and compiled with format assertions on (date-time and uri are enforced).
//
// A Set validates a decoded JSON document against one schema by name and
// reports each failure as a leaf Violation with a JSON-pointer path.
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
	// Message is a plain-English description.
	Message string
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
	}

	s := &Set{Source: source, compiled: map[string]*jsonschema.Schema{}}
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
	return dedupe(sortViolations(leaves(ve, nil)))
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
func leaves(e *jsonschema.ValidationError, out []Violation) []Violation {
	path := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			var why []string
			for i, c := range e.Causes {
				var parts []string
				for _, v := range sortViolations(leaves(c, nil)) {
					parts = append(parts, v.String())
				}
				why = append(why, fmt.Sprintf("alternative %d: %s", i+1, strings.Join(parts, "; ")))
			}
			return append(out, Violation{Path: path, Keyword: keyword(k),
				Message: "matches none of the allowed alternatives (" + strings.Join(why, " | ") + ")"})
		}
	case *kind.PropertyNames:
		// The causes describe the name validated as a bare string; report
		// them at the property itself.
		var inner []Violation
		for _, c := range e.Causes {
			inner = leaves(c, inner)
		}
		var parts []string
		for _, v := range sortViolations(inner) {
			parts = append(parts, v.Message)
		}
		return append(out, Violation{Path: path + "/" + escape(k.Property), Keyword: "propertyNames",
			Message: fmt.Sprintf("property name %q is not allowed: %s", k.Property, strings.Join(parts, "; "))})
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = leaves(c, out)
		}
		return out
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			out = append(out, Violation{Path: path + "/" + escape(p), Keyword: "required",
				Message: fmt.Sprintf("required property %q is missing", p)})
		}
		return out
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, Violation{Path: path + "/" + escape(p), Keyword: "additionalProperties",
				Message: fmt.Sprintf("property %q is not allowed here", p)})
		}
		return out
	case *kind.FalseSchema:
		return append(out, Violation{Path: path, Keyword: "false",
			Message: "this member is not allowed here"})
	}
	return append(out, Violation{Path: path, Keyword: keyword(e.ErrorKind),
		Message: e.ErrorKind.LocalizedString(printer)})
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
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
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
