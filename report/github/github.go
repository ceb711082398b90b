// Package github renders a report for a GitHub Actions workflow: one
// workflow command (an annotation) per finding, the step outputs a
// workflow reads, and a pause of command processing around text from the
// runner.
//
// GitHub reads a workflow command from any line of a step's stdout or
// stderr that starts, after leading blanks, with "::". Text from the runner
// is untrusted, so every value written here is cleaned as report's writers
// clean it (no control characters, no line breaks) and then escaped as the
// workflow-command format requires: in a message % CR LF become %25 %0D
// %0A, and in a property value : and , also become %3A %2C. A runner
// cannot end the line early, so it cannot start a command of its own.
package github

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
)

// Limits of what one annotation carries.
const (
	// MaxPerRule is the most annotations one rule gets; the last one
	// says how many findings were left out.
	MaxPerRule  = 5
	maxMessage  = 500 // runes of a message
	maxTitleLen = 200 // runes of a title
)

// Level is the kind of a workflow command written for a finding.
type Level string

// The workflow commands an annotation can be.
const (
	Error   Level = "error"
	Warning Level = "warning"
	Notice  Level = "notice"
)

// Annotation is one workflow command: its level, its title and its
// one-line message, as written before escaping.
type Annotation struct {
	Level   Level
	Title   string
	Message string
}

// String is the annotation as a workflow command, escaped, without the
// line break.
func (a Annotation) String() string {
	return "::" + string(a.Level) + " title=" + EscapeProperty(a.Title) + "::" + EscapeData(a.Message)
}

// Annotations lists the workflow commands a report calls for, in result
// order: an error for each finding of a FAIL, a warning for each of a
// WARN, a notice for each of a FAIL the baseline excuses (KNOWN), and an
// error for a rule the checker could not evaluate (ERROR), which fails the
// run as well, and one warning, last, where the verdict is not determined
// (rules left undecided, which fails the run too). PASS and SKIP say
// nothing one by one. Each title names the rule ID and
// section; each message is one finding's first line.
func Annotations(r *report.Report) []Annotation {
	var out []Annotation
	for _, res := range r.Results {
		rule := res.Rule
		if rule.ID == "" {
			rule = engine.About{ID: "?", Section: "?", Title: "(result without a rule)"}
		}
		var level Level
		prefix := ""
		switch res.Outcome {
		case engine.Fail:
			level = Error
			if r.Baseline[rule.ID] {
				level, prefix = Notice, "known failure, excused by the baseline: "
			}
		case engine.Warn:
			level = Warning
		case engine.Pass, engine.Skip:
			continue
		default:
			level, prefix = Error, "the checker could not evaluate this rule: "
		}
		title := report.Clip(report.Clean(rule.ID)+" (§"+report.Clean(rule.Section)+"): "+report.Clean(rule.Title), maxTitleLen)
		var msgs []string
		for _, f := range res.Findings {
			msgs = append(msgs, report.FirstLine(f.Message, maxMessage))
		}
		if len(msgs) == 0 {
			why := report.FirstLine(res.Reason, maxMessage)
			if why == "" {
				why = report.Clean(rule.Title)
			}
			msgs = []string{why}
		}
		if len(msgs) > MaxPerRule {
			more := len(msgs) - MaxPerRule + 1
			msgs = append(msgs[:MaxPerRule-1], fmt.Sprintf("and %d more findings (see the report)", more))
		}
		for _, m := range msgs {
			out = append(out, Annotation{Level: level, Title: title, Message: report.Clip(prefix+m, maxMessage)})
		}
	}
	if !r.Verdict.Determined() {
		out = append(out, Annotation{Level: Warning, Title: "Not determined: rules left undecided",
			Message: report.Clip(report.Clean(r.Verdict.Text), maxMessage)})
	}
	return out
}

// Write writes the report's annotations to w, one workflow command a line.
func Write(w io.Writer, r *report.Report) error {
	var b strings.Builder
	for _, a := range Annotations(r) {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EscapeData escapes a workflow command's message: % CR LF become %25 %0D
// %0A.
func EscapeData(s string) string {
	return dataEscaper.Replace(s)
}

// EscapeProperty escapes a workflow command's property value: as
// EscapeData, and : , become %3A %2C.
func EscapeProperty(s string) string {
	return propertyEscaper.Replace(s)
}

var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// Pause stops GitHub from reading workflow commands in what w shows next,
// until the returned resume is called: so a line of runner text in a text
// report cannot be taken for a command, whatever it holds. The token that
// resumes is random, so the paused text cannot guess it.
func Pause(w io.Writer) (resume func() error, err error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	token := "postern-conformance-" + hex.EncodeToString(raw[:])
	if _, err := io.WriteString(w, "::stop-commands::"+token+"\n"); err != nil {
		return nil, err
	}
	return func() error {
		_, err := io.WriteString(w, "::"+token+"::\n")
		return err
	}, nil
}

// Verdict is the verdict in one word, for a workflow's conditions:
// "conformant"; "nonconformant" (a binding rule broken, or, in a check, no
// level declared); or "undecided", where nothing is broken but rules the
// verdict needs could not be decided (the runner stopped answering, say).
func Verdict(r *report.Report) string {
	switch {
	case r.Verdict.Conformant:
		return "conformant"
	case !r.Verdict.Determined():
		return "undecided"
	}
	return "nonconformant"
}

// Files are the reports written to files, as the outputs name them.
type Files struct {
	JSON  string // the JSON report's path, or ""
	JUnit string // the JUnit report's path, or ""
	HTML  string // the HTML page's path, or ""
}

// Output is one step output: a name and its value.
type Output struct{ Name, Value string }

// Outputs are the step outputs of a report, in order: verdict (see
// Verdict), verdict-text (the verdict's sentence), level (the declared
// level, 0 for none and for a walk), failures (FAILs the baseline does not
// excuse), warnings, known (FAILs it does excuse), errors (rules the
// checker could not evaluate), undecided (SKIPs it could not decide),
// report-json, report-junit and report-html (the paths in f, empty when
// not written).
func Outputs(r *report.Report, f Files) []Output {
	c := r.Counts()
	return []Output{
		{"verdict", Verdict(r)},
		{"verdict-text", report.Clean(r.Verdict.Text)},
		{"level", strconv.Itoa(r.Verdict.Declared)},
		{"failures", strconv.Itoa(c.Fail)},
		{"warnings", strconv.Itoa(c.Warn)},
		{"known", strconv.Itoa(c.Baselined)},
		{"errors", strconv.Itoa(c.Error)},
		{"undecided", strconv.Itoa(c.Undecided)},
		{"report-json", f.JSON},
		{"report-junit", f.JUnit},
		{"report-html", f.HTML},
	}
}

// WriteOutputs appends the outputs of r to w in the form $GITHUB_OUTPUT
// reads: name=value, or, for a value with a line break in it, name<<EOF,
// the value, and a random delimiter that the value does not contain.
func WriteOutputs(w io.Writer, r *report.Report, f Files) error {
	var b strings.Builder
	for _, o := range Outputs(r, f) {
		if !strings.ContainsAny(o.Value, "\r\n") {
			b.WriteString(o.Name + "=" + o.Value + "\n")
			continue
		}
		var raw [12]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return err
		}
		delim := "EOF_" + hex.EncodeToString(raw[:])
		b.WriteString(o.Name + "<<" + delim + "\n" + o.Value + "\n" + delim + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
