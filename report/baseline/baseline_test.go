package baseline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/runner"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// ids are three real rule IDs, taken from the registry so that renaming a
// rule does not break these tests.
func ids(t *testing.T) (a, b, c string) {
	t.Helper()
	all := runner.All()
	assert.Assert(t, len(all) >= 3)
	return all[0].ID, all[1].ID, all[2].ID
}

func TestParse(t *testing.T) {
	a, b, _ := ids(t)
	text := "\uFEFF# a comment\n\n  " + a + "  # why it is excused\n" + b + "\r\n" + a + "\n"
	bl, err := Parse(strings.NewReader(text), "ci/baseline.txt")
	assert.NilError(t, err)
	assert.Check(t, bl.Excuses(a) && bl.Excuses(b))
	assert.Check(t, !bl.Excuses("9.9/nothing"))
	assert.Check(t, is.Len(bl.IDs(), 2), "a repeated entry counts once")
	assert.DeepEqual(t, bl.Set(), map[string]bool{a: true, b: true})
	assert.Equal(t, bl.entries[a], 3, "an entry remembers the first line that lists it")

	bl, err = Parse(strings.NewReader("\uFEFF"+b+"\n"), "")
	assert.NilError(t, err, "a byte-order mark before the first entry")
	assert.Check(t, bl.Excuses(b))
}

func TestParseNamesFileAndLine(t *testing.T) {
	a, _, _ := ids(t)
	section := runner.All()[0].Section
	for _, c := range []struct{ text, want string }{
		{a + "\n9.9/not-a-rule\n", `ci.txt:2: "9.9/not-a-rule" is not a rule ID`},
		{"\n\n" + a + " extra\n", `ci.txt:3: "` + a + ` extra": one rule ID per line`},
		{section + "\n", `ci.txt:1: "` + section + `" is a pattern, not a rule ID`},
		{"2.*\n", `ci.txt:1: "2.*" is a pattern`},
		{strings.Repeat("x", maxLine+10) + "\n", "ci.txt:1: a line longer than"},
	} {
		_, err := Parse(strings.NewReader(c.text), "ci.txt")
		assert.Check(t, is.ErrorContains(err, c.want), "%.40q", c.text)
	}
}

func TestReadMissingFile(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "absent.txt"))
	assert.Check(t, os.IsNotExist(err), "%v", err)
}

func TestNilBaselineExcusesNothing(t *testing.T) {
	var bl *Baseline
	assert.Check(t, !bl.Excuses("x"))
	assert.Check(t, bl.Set() == nil && bl.IDs() == nil)
	c := bl.Compare(engine.Records([]runner.Result{{Rule: runner.All()[0], Outcome: runner.Fail}}))
	assert.Check(t, c.Known == nil && c.Stale == nil && c.Undecided == nil)
}

func TestCompare(t *testing.T) {
	all := runner.All()
	assert.Assert(t, len(all) >= 6)
	res := func(i int, o runner.Outcome) runner.Result { return runner.Result{Rule: all[i], Outcome: o} }
	results := []runner.Result{
		res(0, runner.Fail), // listed, still fails: known
		res(1, runner.Pass), // listed, passes now: stale
		res(2, runner.Warn), // listed, only warns now: stale
		res(3, runner.Skip), // listed, not decided: undecided
		res(4, runner.Fail), // not listed: not the baseline's business
		{Outcome: runner.Error},
	}
	// all[5] is listed but was not selected: undecided.
	text := strings.Join([]string{all[5].ID, all[2].ID, all[3].ID, all[1].ID, all[0].ID}, "\n")
	bl, err := Parse(strings.NewReader(text), "b.txt")
	assert.NilError(t, err)
	c := bl.Compare(engine.Records(results))

	assert.Assert(t, is.Len(c.Known, 1))
	assert.Equal(t, c.Known[0].Rule.ID, all[0].ID)
	assert.DeepEqual(t, c.Stale, []Stale{
		{File: "b.txt", Line: 2, ID: all[2].ID, Outcome: runner.Warn},
		{File: "b.txt", Line: 4, ID: all[1].ID, Outcome: runner.Pass},
	})
	want := []string{all[3].ID, all[5].ID}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	assert.DeepEqual(t, c.Undecided, want)
	assert.Equal(t, c.Stale[1].String(), "b.txt:4: "+all[1].ID+" is in the baseline but now PASS; delete its line")
}

func TestWriteThenRead(t *testing.T) {
	all := runner.All()
	results := []runner.Result{
		{Rule: all[2], Outcome: runner.Fail},
		{Rule: all[0], Outcome: runner.Fail},
		{Rule: all[1], Outcome: runner.Pass},
		{Rule: all[0], Outcome: runner.Fail}, // a repeat is written once
		{Outcome: runner.Fail},               // a result without a rule is skipped
	}
	file := filepath.Join(t.TempDir(), "baseline.txt")
	assert.NilError(t, Write(file, engine.Records(results)))
	text, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(text), all[0].ID+"  # "))
	assert.Check(t, !strings.Contains(string(text), all[1].ID+" "), "a PASS is not written")
	assert.Equal(t, strings.Count(string(text), all[0].ID+" "), 1)

	bl, err := Read(file)
	assert.NilError(t, err)
	assert.DeepEqual(t, bl.Set(), map[string]bool{all[0].ID: true, all[2].ID: true})
	c := bl.Compare(engine.Records(results))
	assert.Check(t, is.Len(c.Known, 3))
	assert.Check(t, is.Len(c.Stale, 0))
}

func TestFormatEmpty(t *testing.T) {
	var buf bytes.Buffer
	assert.NilError(t, Format(&buf, nil))
	bl, err := Parse(&buf, "")
	assert.NilError(t, err)
	assert.Check(t, is.Len(bl.IDs(), 0), "a baseline of a clean run lists nothing and still reads")
}
