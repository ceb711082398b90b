package posterntest

import (
	"flag"
	"regexp"
	"strings"
	"unicode"
)

// goTestSelects reports whether go test's -run and -skip flags let the
// test named name (its slash-separated full name) run, as the testing
// package decides it: name is split at its slashes, each -run element
// must match the element of the name at its place, and a -skip that
// matches every one of its elements skips the test. Run asks it before
// checking anything, so that `go test -run 'TestRunner/4.2/run-id-unique'`
// probes the runner for that rule alone, rather than for every rule with
// only one of them shown (with Execute, every run would start the agent).
//
// It errs towards running: an unreadable pattern selects everything. And
// where it is wrong the other way (a subtest the testing package runs
// though this said it would not), Run checks that rule on its own when its
// subtest starts.
func goTestSelects(name string) bool {
	elem := strings.Split(name, "/")
	if run := flagValue("test.run"); run != "" {
		if ok, _ := matches(splitPattern(run), elem); !ok {
			return false
		}
	}
	if skip := flagValue("test.skip"); skip != "" {
		// A -skip skips a test only once all its elements are matched, at
		// the test or at one of its parents.
		for n := 1; n <= len(elem); n++ {
			if ok, partial := matches(splitPattern(skip), elem[:n]); ok && !partial {
				return false
			}
		}
	}
	return true
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// splitPattern reads a -run or -skip value: alternatives separated by a
// top-level "|", each a sequence of regular expressions separated by a
// top-level "/" ("top-level": outside brackets and parentheses, and not
// escaped by a backslash).
func splitPattern(s string) [][]string {
	var alts [][]string
	var seq []string
	brackets, parens, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0)
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '/', '|':
			if brackets != 0 || parens != 0 {
				continue
			}
			seq = append(seq, s[start:i])
			start = i + 1
			if s[i] == '|' {
				alts = append(alts, seq)
				seq = nil
			}
		}
	}
	return append(alts, append(seq, s[start:]))
}

// matches reports whether a name's elements match any alternative; partial
// is true where they match all the alternative's elements they reach but
// the alternative has more.
func matches(alts [][]string, elem []string) (ok, partial bool) {
	for _, seq := range alts {
		if ok, partial = matchSeq(seq, elem); ok {
			return ok, partial
		}
	}
	return false, false
}

func underscoreSpace(r rune) rune {
	if unicode.IsSpace(r) {
		return '_'
	}
	return r
}

func matchSeq(seq, elem []string) (ok, partial bool) {
	for i, e := range elem {
		if i >= len(seq) {
			break
		}
		// The testing package writes spaces in patterns as underscores,
		// as it does in test names.
		re, err := regexp.Compile(strings.Map(underscoreSpace, seq[i]))
		if err != nil {
			return true, false // unreadable: err towards running
		}
		if !re.MatchString(e) {
			return false, false
		}
	}
	return true, len(elem) < len(seq)
}
