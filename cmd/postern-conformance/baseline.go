package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks"
)

// A baseline is a text file of rule IDs whose FAIL a CI gate accepts for
// now: one ID per line, blank lines and # comments ignored. A FAIL it lists
// is reported as KNOWN and does not fail the run; a listed rule that no
// longer fails is pointed out so the line can be deleted.

func readBaseline(name string) (map[string]bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if checks.Lookup(line) == nil {
			return nil, fmt.Errorf("--baseline %s:%d: %q is not a rule ID (`postern-conformance list` shows them)", name, n, line)
		}
		ids[line] = true
	}
	return ids, sc.Err()
}

func writeBaseline(name string, results []checks.Result) error {
	var ids []string
	for _, r := range results {
		if r.Outcome == checks.Fail {
			ids = append(ids, r.Rule.ID+"  # "+r.Rule.Title)
		}
	}
	sort.Strings(ids)
	body := "# postern-conformance baseline: rules known to FAIL, excused by --baseline.\n" +
		"# Delete a line once its rule passes.\n" + strings.Join(ids, "\n")
	if len(ids) > 0 {
		body += "\n"
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		return fmt.Errorf("--write-baseline: %w", err)
	}
	return nil
}

// reportStaleBaseline names baselined rules that no longer fail.
func reportStaleBaseline(w io.Writer, baseline map[string]bool, results []checks.Result) {
	for _, r := range results {
		if baseline[r.Rule.ID] && r.Outcome != checks.Fail {
			fmt.Fprintf(w, "postern-conformance: %s is in the baseline but now %s; delete its line\n", r.Rule.ID, r.Outcome)
		}
	}
}
