// Package levels is the runner check's verdict: the level the runner
// declares in status (§3, §4.4), and whether every binding rule at or
// below it held, and was decided.
package levels

import (
	"fmt"
	"net/http"
	"net/url"
	"path"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// Names are the §3 level names.
var Names = map[int]string{1: "Describe", 2: "Execute", 3: "Stream"}

// Verbs are the verbs each level requires.
var Verbs = map[int]string{1: "describe, status", 2: "describe, status, run", 3: "describe, status, run, stream"}

// Verdict is the line a report ends on.
type Verdict = engine.Verdict

// Decide reads the records. excused names rule IDs whose failure a baseline
// accepts; they are counted apart and do not break conformance. A rule at
// or below the declared level that is undecided keeps the runner from
// being called conformant: the verdict is then not determined, and names
// what kept it so.
func Decide(declared int, records []engine.Record, excused map[string]bool) Verdict {
	v := Verdict{Declared: declared, Scope: Scope(declared)}
	var undecided []engine.Record
	for _, r := range records {
		if declared != 0 && r.Rule.Level > declared {
			continue
		}
		switch {
		case r.Undecided():
			v.Undecided++
			undecided = append(undecided, r)
		case r.Outcome != engine.Fail:
		case excused[r.Rule.ID]:
			v.Baselined++
		default:
			v.Broken++
		}
	}
	v.Conformant = declared != 0 && v.Broken == 0 && v.Undecided == 0
	switch {
	case declared == 0:
		v.Text = fmt.Sprintf("No conformance level declared: status must carry level 1, 2 or 3 (§3). %s broken.", plural(v.Broken))
	case v.Conformant:
		v.Text = fmt.Sprintf("Conformant at Level %d.", declared)
	case v.Broken == 0:
		cause := authCause(undecided)
		if cause == "" {
			cause = engine.Cause(undecided, "the runner")
		}
		v.Text = fmt.Sprintf("Not determined at Level %d: %s (%s).", declared, undecidedWords(v.Undecided), cause)
	default:
		v.Text = fmt.Sprintf("Nonconformant at declared Level %d: %s broken.", declared, plural(v.Broken))
	}
	if v.Broken > 0 && v.Undecided > 0 {
		v.Text += fmt.Sprintf(" (%s as well.)", undecidedWords(v.Undecided))
	}
	if v.Baselined > 0 {
		v.Text += fmt.Sprintf(" (%s excused by the baseline.)", engine.Count(v.Baselined, "known failure", "known failures"))
	}
	return v
}

// Scope is the line a report writes about the declared level.
func Scope(declared int) string {
	if declared == 0 {
		return "Declared level: none"
	}
	if name, ok := Names[declared]; ok {
		return fmt.Sprintf("Declared level: %d — %s (%s)", declared, name, Verbs[declared])
	}
	return fmt.Sprintf("Declared level: %d", declared)
}

func undecidedWords(n int) string { return engine.Count(n, "rule", "rules") + " undecided" }

func plural(n int) string { return engine.Count(n, "MUST rule", "MUST rules") }

// authCause names inbound authentication as what left the rules
// undecided, where it left at least half of them so: each such rule was
// refused 401 unauthorized on a request that carried no Authorization (a
// runner guarding run and stream, checked without --header). The user's
// remedy is then one flag, which the verdict names. "" otherwise.
func authCause(undecided []engine.Record) string {
	var first *wire.Exchange
	n := 0
	for _, rec := range undecided {
		for _, ex := range rec.Exchanges {
			if ex != nil && ex.Is(http.StatusUnauthorized, "unauthorized") && ex.ReqHeader.Get("Authorization") == "" {
				if first == nil {
					first = ex
				}
				n++
				break
			}
		}
	}
	if first == nil || 2*n < len(undecided) {
		return ""
	}
	verb := first.URL
	if u, err := url.Parse(first.URL); err == nil {
		verb = path.Base(u.Path)
	}
	return fmt.Sprintf("%s %s was answered 401 unauthorized: the runner requires inbound authentication (§7); pass --header 'Authorization: …'", first.Method, verb)
}
