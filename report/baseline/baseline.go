// Package baseline reads, writes and applies baseline files: the rule IDs
// whose FAIL a CI gate accepts for now.
//
// A baseline file lists one rule ID per line; blank lines and everything
// from a # to the end of a line are ignored. A FAIL it lists is reported as
// KNOWN and does not fail the run. An entry whose rule was checked and no
// longer fails is stale: it is named so the line can be deleted, and it
// fails the run where the caller asks for a strict baseline.
package baseline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
)

// Baseline is a parsed baseline file.
type Baseline struct {
	// File names where the entries came from, for messages; it may be
	// empty.
	File    string
	entries map[string]int // rule ID → the line that lists it first
}

// Read reads the baseline file name.
func Read(name string) (*Baseline, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, name)
}

// maxLine bounds one line of a baseline file; a rule ID is far shorter.
const maxLine = 4096

// Parse reads a baseline from r; file names it in messages. Every entry
// must be the ID of a rule in the registry (runner.Lookup): an error names
// the file and line of the first that is not.
func Parse(r io.Reader, file string) (*Baseline, error) {
	b := &Baseline{File: file, entries: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	n := 0
	for sc.Scan() {
		n++
		entry := sc.Text()
		if n == 1 {
			entry = strings.TrimPrefix(entry, "\uFEFF") // an editor's byte-order mark
		}
		if i := strings.IndexByte(entry, '#'); i >= 0 {
			entry = entry[:i]
		}
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := checkEntry(entry); err != nil {
			return nil, fmt.Errorf("%s: %w", b.where(n), err)
		}
		if _, seen := b.entries[entry]; !seen {
			b.entries[entry] = n
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line longer than %d bytes: this is not a baseline file (one rule ID per line)", b.where(n+1), maxLine)
		}
		return nil, fmt.Errorf("%s: %w", b.fileName(), err)
	}
	return b, nil
}

// checkEntry says why entry is not a rule ID.
func checkEntry(entry string) error {
	if _, ok := checks.TracedRule(entry); ok {
		return nil // a rule of the check or of the entitlement walk
	}
	const list = "`postern-conformance list` and `list --entitlement` show the IDs"
	switch {
	case strings.ContainsAny(entry, " \t"):
		return fmt.Errorf("%q: one rule ID per line, nothing after it but a # comment", clip(entry))
	case strings.HasSuffix(entry, "*") || len(runner.Select(runner.All(), []string{entry})) > 0:
		return fmt.Errorf("%q is a pattern, not a rule ID: a baseline lists each excused rule by its ID (%s)", clip(entry), list)
	}
	return fmt.Errorf("%q is not a rule ID (%s)", clip(entry), list)
}

// clip keeps a quoted entry short in a message.
func clip(s string) string {
	const max = 60
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

func (b *Baseline) fileName() string {
	if b.File == "" {
		return "baseline"
	}
	return b.File
}

func (b *Baseline) where(line int) string { return fmt.Sprintf("%s:%d", b.fileName(), line) }

// Of makes a baseline of the rule IDs given, as though read from a file
// listing them in order; it does not check that they name rules.
func Of(ids ...string) *Baseline {
	b := &Baseline{entries: map[string]int{}}
	for i, id := range ids {
		if _, seen := b.entries[id]; !seen {
			b.entries[id] = i + 1
		}
	}
	return b
}

// Excuses reports whether the baseline lists the rule id. A nil baseline
// excuses nothing.
func (b *Baseline) Excuses(id string) bool {
	if b == nil {
		return false
	}
	_, ok := b.entries[id]
	return ok
}

// IDs lists the baseline's rule IDs, sorted.
func (b *Baseline) IDs() []string {
	if b == nil {
		return nil
	}
	ids := make([]string, 0, len(b.entries))
	for id := range b.entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Set is the baseline as a set of rule IDs (nil for a nil or empty
// baseline), the shape levels.Decide and report.Report take.
func (b *Baseline) Set() map[string]bool {
	if b == nil || len(b.entries) == 0 {
		return nil
	}
	set := make(map[string]bool, len(b.entries))
	for id := range b.entries {
		set[id] = true
	}
	return set
}

// Stale is a baseline entry whose rule was checked and no longer fails.
type Stale struct {
	File    string // the baseline file, or ""
	Line    int    // the line that lists the rule
	ID      string
	Outcome engine.Outcome // what the rule came to instead: PASS or WARN
}

// String is the notice a user reads: where the entry is, and what to do.
func (s Stale) String() string {
	where := s.File
	if where == "" {
		where = "baseline"
	}
	return fmt.Sprintf("%s:%d: %s is in the baseline but now %s; delete its line", where, s.Line, s.ID, s.Outcome)
}

// Comparison is a baseline held against the results of a run.
type Comparison struct {
	// Known are the FAILs the baseline excuses, in result order.
	Known []engine.Record
	// Stale are the entries whose rule was checked and no longer fails
	// (it came to PASS or WARN), in the baseline's line order.
	Stale []Stale
	// Undecided are the entries whose rule the run did not decide: not
	// selected, skipped, or an ERROR in the checker. They are neither
	// excused nor stale; a later run may decide them. Sorted.
	Undecided []string
}

// Compare holds the baseline against results. A nil baseline compares
// empty.
func (b *Baseline) Compare(results []engine.Record) Comparison {
	var c Comparison
	if b == nil {
		return c
	}
	decided := map[string]bool{}
	for _, r := range results {
		if r.Rule.ID == "" || !b.Excuses(r.Rule.ID) {
			continue
		}
		switch r.Outcome {
		case engine.Fail:
			c.Known = append(c.Known, r)
		case engine.Pass, engine.Warn:
			c.Stale = append(c.Stale, Stale{File: b.File, Line: b.entries[r.Rule.ID], ID: r.Rule.ID, Outcome: r.Outcome})
		default:
			continue
		}
		decided[r.Rule.ID] = true
	}
	sort.SliceStable(c.Stale, func(i, j int) bool { return c.Stale[i].Line < c.Stale[j].Line })
	for _, id := range b.IDs() {
		if !decided[id] {
			c.Undecided = append(c.Undecided, id)
		}
	}
	return c
}

// Write writes a baseline file listing every rule that FAILs in results,
// each with its title as a comment, so the file can be read by Read.
func Write(name string, results []engine.Record) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := Format(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Format writes the baseline of results (see Write) to w.
func Format(w io.Writer, results []engine.Record) error {
	var lines []string
	seen := map[string]bool{}
	for _, r := range results {
		if r.Outcome != engine.Fail || r.Rule.ID == "" || seen[r.Rule.ID] {
			continue
		}
		seen[r.Rule.ID] = true
		lines = append(lines, r.Rule.ID+"  # "+oneLine(r.Rule.Title))
	}
	sort.Strings(lines)
	var sb strings.Builder
	sb.WriteString("# postern-conformance baseline: rules known to FAIL, excused by --baseline.\n")
	sb.WriteString("# Delete a line once its rule passes.\n")
	for _, l := range lines {
		sb.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// oneLine keeps a title on its comment line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
