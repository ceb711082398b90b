package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/wire"
)

// The inputs describe declares (§4.1.1) and their value spaces, read into
// one model for every family that sends inputs: §4.2's input refusals and
// executed runs, §4.3's streams, and §4.6's complete requests.
//
// A valid value is found in one of two ways:
//   - validValue tries what describe itself offers (the default, then the
//     examples) and then a few plain guesses, keeping the first that
//     accepts passes. Where none passes, the input cannot be built.
//     validInputs, base and otherInputs use it (§4.2, §4.3).
//   - constructed builds a value from the validation members: a number well
//     inside min and max, or a string meeting options, pattern (sampled
//     from the expression) and max_length at once. complete uses it (§4.6).

// inputDecl is one input describe declares (§4.1.1).
type inputDecl struct {
	key, typ   string // typ is "" where the type member is not a string
	rawType    any    // the type member as describe gives it, for messages
	required   bool
	def        any
	validation map[string]any
}

// inputSet is describe's inputs, with the example values describe gives.
type inputSet struct {
	listed   bool             // describe carries an inputs array
	entries  []inputDecl      // every entry of that array in order, keyless ones included
	decls    []inputDecl      // the entries that have a key
	examples map[string][]any // the values describe's examples give each key
}

func readInputs(doc map[string]any) *inputSet {
	in := &inputSet{examples: map[string][]any{}}
	l, listed := doc["inputs"].([]any)
	in.listed = listed
	for _, x := range l {
		m, _ := x.(map[string]any)
		key, _ := m["key"].(string)
		typ, _ := m["type"].(string)
		req, _ := m["required"].(bool)
		val, _ := m["validation"].(map[string]any)
		d := inputDecl{key: key, typ: typ, rawType: m["type"], required: req, def: m["default"], validation: val}
		in.entries = append(in.entries, d)
		if key != "" {
			in.decls = append(in.decls, d)
		}
	}
	exs, _ := doc["examples"].([]any)
	for _, x := range exs {
		ex, _ := x.(map[string]any)
		m, _ := ex["inputs"].(map[string]any)
		for k, v := range m {
			in.examples[k] = append(in.examples[k], v)
		}
	}
	return in
}

func (in *inputSet) first(pred func(inputDecl) bool) (inputDecl, bool) {
	for _, d := range in.decls {
		if pred(d) {
			return d, true
		}
	}
	return inputDecl{}, false
}

func (in *inputSet) firstRequired() (inputDecl, bool) {
	return in.first(func(d inputDecl) bool { return d.required })
}

// kind is the type a value is judged by; an unrecognised type reads as
// text, as §4.1.1 asks of every reader.
func (d inputDecl) kind() string {
	if d.typ == "number" || d.typ == "select" {
		return d.typ
	}
	return "text"
}

// options are the strings among validation.options.
func (d inputDecl) options() []string {
	l, _ := d.validation["options"].([]any)
	var out []string
	for _, o := range l {
		if s, ok := o.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// without is d with one validation member dropped.
func (d inputDecl) without(member string) inputDecl {
	v := map[string]any{}
	for k, x := range d.validation {
		if k != member {
			v[k] = x
		}
	}
	d.validation = v
	return d
}

// accepts reports whether v passes every declared check this checker can
// evaluate. §4.1.1 leaves open whether a pattern must match the whole value
// or only some of it, so a string passes only where it matches both ways: a
// runner reading the pattern either way takes it as valid. A pattern in a
// dialect Go cannot compile is taken as passed.
func (d inputDecl) accepts(v any) bool {
	if d.kind() == "number" {
		n, ok := floatOf(v)
		if !ok {
			return false
		}
		if lo, ok := floatOf(d.validation["min"]); ok && n < lo {
			return false
		}
		if hi, ok := floatOf(d.validation["max"]); ok && n > hi {
			return false
		}
		return true
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	if n, ok := AsInt(d.validation["max_length"]); ok && utf8.RuneCountInString(s) > n {
		return false
	}
	if p, ok := d.validation["pattern"].(string); ok && !matchesEitherWay(p, s) {
		return false
	}
	if opts := d.options(); d.kind() == "select" && len(opts) > 0 && !slices.Contains(opts, s) {
		return false
	}
	return true
}

// matchesEitherWay reports whether s matches pattern p both as written and
// anchored to the whole string (a whole-string match is a match as written
// too, so the anchored test decides); true where Go cannot compile p.
func matchesEitherWay(p, s string) bool {
	if _, err := regexp.Compile(p); err != nil {
		return true
	}
	full, err := regexp.Compile(`^(?:` + p + `)$`)
	return err != nil || full.MatchString(s)
}

// patternUnreadable reports whether d declares a pattern in a dialect Go
// cannot compile, which accepts therefore takes as passed.
func (d inputDecl) patternUnreadable() bool {
	p, ok := d.validation["pattern"].(string)
	if !ok {
		return false
	}
	_, err := regexp.Compile(p)
	return err != nil
}

// validValue finds a value d accepts: its default, an example, then a few
// plain guesses.
func (d inputDecl) validValue(examples []any) (any, bool) {
	cands := append([]any{d.def}, examples...)
	switch d.kind() {
	case "number":
		cands = append(cands, d.validation["min"], d.validation["max"], json.Number("1"), json.Number("0"))
	case "select":
		for _, o := range d.options() {
			cands = append(cands, o)
		}
	default:
		for _, s := range []string{"probe", "ab", "a", "x", "1", "12", "A", "AB", "a1", "conformance probe"} {
			cands = append(cands, s)
		}
	}
	for _, v := range cands {
		if v != nil && d.accepts(v) {
			return v, true
		}
	}
	return nil, false
}

// alternatives are values worth trying for d, valid or not.
func (d inputDecl) alternatives() []any {
	switch d.kind() {
	case "select":
		var out []any
		for _, o := range d.options() {
			out = append(out, o)
		}
		return out
	case "number":
		return []any{d.validation["min"], d.validation["max"], json.Number("2"), json.Number("1"), json.Number("0")}
	}
	return []any{"probe-two", "other", "ab", "cd", "a", "b", "x", "12", "AB"}
}

// base is every required input but skip at a valid value; unbuilt lists
// those no valid value could be found for.
func (in *inputSet) base(skip string) (inputs map[string]any, unbuilt []string) {
	inputs = map[string]any{}
	for _, d := range in.decls {
		if !d.required || d.key == skip {
			continue
		}
		if v, ok := d.validValue(in.examples[d.key]); ok {
			inputs[d.key] = v
		} else {
			unbuilt = append(unbuilt, d.key)
		}
	}
	return inputs, unbuilt
}

// addOptionals sets in inputs every optional input whose declared default
// passes its checks.
func (in *inputSet) addOptionals(inputs map[string]any) {
	for _, d := range in.decls {
		if !d.required && d.def != nil && d.accepts(d.def) {
			inputs[d.key] = d.def
		}
	}
}

// validInputs builds inputs every declared check passes: each required
// input at a valid value and, with optionals, each optional input whose
// declared default passes too. why says what could not be built.
func validInputs(describe map[string]any, optionals bool) (map[string]any, string) {
	in := readInputs(describe)
	inputs, unbuilt := in.base("")
	if len(unbuilt) > 0 {
		return nil, "found no value passing the declared validation of the required input(s) " + strings.Join(unbuilt, ", ") +
			", so no valid request could be built"
	}
	if optionals {
		in.addOptionals(inputs)
	}
	return inputs, ""
}

// unreadablePatterns lists the keys sent whose pattern this checker cannot
// evaluate, so a refusal of them may be right.
func (in *inputSet) unreadablePatterns(sent map[string]any) []string {
	var out []string
	for _, d := range in.decls {
		if _, ok := sent[d.key]; ok && d.patternUnreadable() {
			out = append(out, d.key)
		}
	}
	return out
}

// otherInputs changes one input of inputs to another value its declaration
// accepts (a required input if it can), for a request with different but
// valid inputs. A declared default is never the new value, so a runner
// filling in defaults cannot read the two requests as one.
func (in *inputSet) otherInputs(inputs map[string]any) (map[string]any, string, bool) {
	decls := append([]inputDecl(nil), in.decls...)
	sort.SliceStable(decls, func(i, j int) bool { return decls[i].required && !decls[j].required })
	for _, d := range decls {
		cur, sent := inputs[d.key]
		for _, v := range d.alternatives() {
			if !d.accepts(v) || (sent && fmt.Sprint(v) == fmt.Sprint(cur)) || (d.def != nil && fmt.Sprint(v) == fmt.Sprint(d.def)) {
				continue
			}
			out := withInput(inputs, d.key, v)
			if sent {
				return out, fmt.Sprintf("%s %s instead of %s", d.key, jsonText(v), jsonText(cur)), true
			}
			return out, fmt.Sprintf("%s %s added", d.key, jsonText(v)), true
		}
	}
	return nil, "", false
}

// withInput is a copy of inputs with key set to v.
func withInput(inputs map[string]any, key string, v any) map[string]any {
	m := make(map[string]any, len(inputs)+1)
	for k, x := range inputs {
		m[k] = x
	}
	m[key] = v
	return m
}

// complete builds inputs that satisfy every declaration: each required
// input at a constructed value, tag filling a free-text value nothing else
// constrains. why says what could not be satisfied; unsure lists validation
// members the checker does not know, which a runner might enforce all the
// same.
func (in *inputSet) complete(tag string) (inputs map[string]any, unsure []string, why string) {
	if !in.listed {
		return nil, nil, "describe carries no inputs array"
	}
	inputs = map[string]any{}
	for _, d := range in.entries {
		if !d.required {
			continue
		}
		if d.key == "" {
			return nil, nil, "a required input has no key"
		}
		for m := range d.validation {
			if !knownValidation[m] {
				unsure = append(unsure, d.key+".validation."+m)
			}
		}
		value, why := d.constructed(tag)
		if why != "" {
			return nil, nil, fmt.Sprintf("input %q: %s", d.key, why)
		}
		inputs[d.key] = value
	}
	sort.Strings(unsure)
	return inputs, unsure, ""
}

// knownValidation are the validation members §4.1.1 recognises.
var knownValidation = map[string]bool{"max_length": true, "min": true, "max": true, "pattern": true, "options": true}

// constructed builds a value d's type and validation admit, or says why it
// cannot. Unlike kind, it fills no type it does not know.
func (d inputDecl) constructed(tag string) (any, string) {
	switch d.typ {
	case "number":
		return numberWithin(d.validation)
	case "text", "select":
		return textWithin(d.validation, tag, d.typ == "select")
	default:
		return nil, fmt.Sprintf("its type %s is not one the checker can fill", show(d.rawType))
	}
}

// numberWithin picks a whole number well inside min and max where it can,
// so that neither bound's inclusiveness matters.
func numberWithin(val map[string]any) (any, string) {
	lo, hasLo := floatOf(val["min"])
	hi, hasHi := floatOf(val["max"])
	var n float64
	switch {
	case hasLo && hasHi && lo > hi:
		return nil, "its min exceeds its max"
	case hasLo && hasHi:
		if n = math.Floor((lo + hi) / 2); n < lo {
			n = (lo + hi) / 2
		}
	case hasLo:
		n = math.Ceil(lo) + 1
	case hasHi:
		n = math.Floor(hi) - 1
	default:
		n = 1
	}
	return json.Number(strconv.FormatFloat(n, 'f', -1, 64)), ""
}

// textWithin picks a string meeting options, pattern and max_length at once.
// A pattern must match both as written and anchored to the whole string, so
// the value passes a runner reading it either way.
func textWithin(val map[string]any, tag string, isSelect bool) (any, string) {
	maxLen := -1
	if v, ok := val["max_length"]; ok {
		n, ok := AsInt(v)
		if !ok || n < 1 {
			return nil, fmt.Sprintf("its max_length %v leaves no value to send", v)
		}
		maxLen = n
	}
	var search, full *regexp.Regexp
	var candidates []string
	switch p, has := val["pattern"]; {
	case !has:
	case p == nil:
		return nil, "its pattern is not a string"
	default:
		ps, ok := p.(string)
		var err error
		if search, err = regexp.Compile(ps); ok && err == nil {
			full, err = regexp.Compile(`^(?:` + ps + `)$`)
		}
		if !ok || err != nil {
			return nil, fmt.Sprintf("its pattern %v is beyond what the checker can satisfy", p)
		}
		if s, ok := sampleMatching(ps); ok {
			candidates = append(candidates, s)
		}
	}
	if opts, has := val["options"]; has {
		list, ok := stringList(opts)
		if !ok || len(list) == 0 {
			return nil, "its options are not a list of strings"
		}
		candidates = list
	} else if isSelect {
		return nil, "a select with no options"
	}
	if len(candidates) == 0 && search == nil {
		candidates = []string{truncate(tag, maxLen)}
	}
	for _, s := range candidates {
		if (maxLen < 0 || utf8.RuneCountInString(s) <= maxLen) && (search == nil || (search.MatchString(s) && full.MatchString(s))) {
			return s, ""
		}
	}
	return nil, "no value the checker can construct meets its options, pattern and max_length together"
}

func truncate(s string, n int) string {
	if r := []rune(s); n >= 0 && len(r) > n {
		return string(r[:n])
	}
	return s
}

// sampleMatching constructs a string matching a simple regular expression:
// literals, classes, groups, repetition and alternation. Anything else
// (word boundaries, back-references) makes it give up.
func sampleMatching(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !sampleInto(&b, re.Simplify()) {
		return "", false
	}
	return b.String(), true
}

func sampleInto(b *strings.Builder, re *syntax.Regexp) bool {
	if b.Len() > 4096 {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
		return true
	case syntax.OpCharClass:
		r, ok := classRune(re.Rune)
		b.WriteRune(r)
		return ok
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
		return true
	case syntax.OpCapture, syntax.OpPlus, syntax.OpAlternate:
		return sampleInto(b, re.Sub[0])
	case syntax.OpRepeat:
		for i := 0; i < re.Min; i++ {
			if !sampleInto(b, re.Sub[0]) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !sampleInto(b, sub) {
				return false
			}
		}
		return true
	}
	return false
}

// classRune picks a member of a character class (pairs of low, high),
// preferring a letter or digit, then any other visible ASCII character.
func classRune(ranges []rune) (rune, bool) {
	in := func(c rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= c && c <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
		if in(c) {
			return c, true
		}
	}
	for c := rune(0x21); c < 0x7f; c++ {
		if in(c) {
			return c, true
		}
	}
	return 0, false
}

// runRequest is a POST to verb of a body carrying inputs (valid or not),
// with an Idempotency-Key where key is not empty.
func runRequest(verb string, inputs any, key, note string) wire.Request {
	b, _ := json.Marshal(map[string]any{"inputs": inputs})
	r := wire.PostJSON(verb, string(b))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	r.Note = note
	return r
}

// caseVariantCase leaves a required input out and sends, in its place and
// at a value it accepts, its key spelled otherwise only in case, every
// other required input valid. A runner comparing keys as written refuses
// it for the missing input; one folding case runs it. why says where no
// such request can be built.
func (in *inputSet) caseVariantCase() (inputCase, string) {
	d, variant, ok := in.caseVariant()
	if !ok {
		return inputCase{}, "describe declares no required input whose key can be spelled otherwise only in case without naming a declared key"
	}
	v, ok := d.validValue(in.examples[d.key])
	if !ok {
		return inputCase{}, fmt.Sprintf("found no value passing the declared validation of %s to send under %q", d.key, variant)
	}
	inputs, unbuilt := in.base(d.key)
	if len(unbuilt) > 0 {
		return inputCase{}, "no valid value could be built for the required input(s) " + strings.Join(unbuilt, ", ") +
			", so no request would have a single defect"
	}
	return inputCase{
		what:   fmt.Sprintf("%s left out, and %s sent in its place as %q, the same key but for case; every other required input valid", d.key, jsonText(v), variant),
		inputs: withInput(inputs, variant, v),
		passed: fmt.Sprintf("the runner took %q for the required %q, but inputs is keyed by describe's keys as written, and §4.1.1's key grammar makes those two distinct keys", variant, d.key),
	}, ""
}

// caseVariant picks a required input and a spelling of its key that
// differs only in case and that describe does not declare itself. It
// prefers an input whose key no other declared key equals but for case:
// there a runner folding case can take the variant for nothing else.
func (in *inputSet) caseVariant() (inputDecl, string, bool) {
	declared := map[string]bool{}
	for _, d := range in.decls {
		declared[d.key] = true
	}
	var fallback *inputDecl
	var fallbackVariant string
	for _, d := range in.decls {
		if !d.required {
			continue
		}
		variant := ""
		for _, v := range caseSpellings(d.key) {
			if !declared[v] {
				variant = v
				break
			}
		}
		if variant == "" {
			continue
		}
		if !slices.ContainsFunc(in.decls, func(o inputDecl) bool { return o.key != d.key && strings.EqualFold(o.key, d.key) }) {
			return d, variant, true
		}
		if fallback == nil {
			fallback, fallbackVariant = &d, variant
		}
	}
	if fallback != nil {
		return *fallback, fallbackVariant, true
	}
	return inputDecl{}, "", false
}

// caseSpellings are other spellings of key differing only in case: all
// upper, all lower, every letter's case swapped, the first letter's alone.
func caseSpellings(key string) []string {
	swap := func(r rune) rune {
		if u := unicode.ToUpper(r); u != r {
			return u
		}
		return unicode.ToLower(r)
	}
	first := []rune(key)
	for i, r := range first {
		if s := swap(r); s != r {
			first[i] = s
			break
		}
	}
	var out []string
	for _, v := range []string{strings.ToUpper(key), strings.ToLower(key), strings.Map(swap, key), string(first)} {
		if v != key && strings.EqualFold(v, key) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
