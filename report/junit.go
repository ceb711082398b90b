package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
)

// JUnit mapping (one <testsuite>, one <testcase> per rule):
//
//	classname  "§4.4" — the rule's section (Jenkins splits class names on
//	           dots, so it files §4.4 as package "§4", class "4")
//	name       "<id> — <title>"
//	PASS       a passing testcase
//	FAIL       <failure type="MUST|MUST NOT|REQUIRED" message=first finding>
//	           with every finding and its evidence as text
//	WARN       a passing testcase whose <system-out> carries the warning, so
//	           a SHOULD never turns a pipeline red
//	SKIP       <skipped type="not-applicable|needs-option|undecided"
//	           message=reason>, an undecided one's reason marked so
//	ERROR      <error type="checker" message=first line of the reason>
//	baselined  <skipped message="known failure (baseline): …">, the
//	FAIL       finding in <system-out>
//
// failures counts unexcused FAILs; skipped counts SKIPs and baselined FAILs.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  xmlText         `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitSkipped `xml:"skipped"`
	SystemOut xmlText       `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string
	Type    string
	Text    string
}

// MarshalXML writes the problem with its text as character data whose
// newlines stay newlines, so the XML reads as well as the text report.
func (p junitProblem) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Attr = append(start.Attr,
		xml.Attr{Name: xml.Name{Local: "message"}, Value: p.Message},
		xml.Attr{Name: xml.Name{Local: "type"}, Value: p.Type})
	return xmlText(p.Text).MarshalXML(e, start)
}

// xmlText is element content written with literal newlines (a ",chardata"
// field would write each as "&#xA;"). It must already be xmlSafe.
type xmlText string

// MarshalXML writes start, the text, and the end tag.
func (t xmlText) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	if err := e.EncodeToken(xml.CharData(t)); err != nil {
		return err
	}
	return e.EncodeToken(start.End())
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
}

// maxMessage caps a message attribute; the full text is in the element.
const maxMessage = 300

// WriteJUnit writes the report as JUnit XML for CI test dashboards.
func WriteJUnit(w io.Writer, r *Report) error {
	suite := junitSuiteOf(r)
	return writeJUnit(w, r.tool(), suite.Time, []junitSuite{suite})
}

// junitSuiteOf is the report as one <testsuite>.
func junitSuiteOf(r *Report) junitSuite {
	c := r.Counts()
	suite := junitSuite{
		Name:      xmlSafe(clean("postern-conformance " + r.Target)),
		Tests:     len(r.Results),
		Failures:  c.Fail,
		Errors:    c.Error,
		Skipped:   c.Skip + c.Baselined,
		Time:      seconds(r.Elapsed),
		Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{
			{"tool", r.tool()},
			{"tool_version", r.ToolVersion},
			{"target", r.Target},
			{"schemas", r.Schemas},
			{"origin", r.Options.Origin},
			{"execute", strconv.FormatBool(r.Options.Execute)},
			{"rules", strings.Join(r.Options.Rules, " ")},
			{"declared_level", strconv.Itoa(r.Verdict.Declared)},
			{"conformant", strconv.FormatBool(r.Verdict.Conformant)},
			{"verdict", r.Verdict.Text},
			{"skipped_not_applicable", strconv.Itoa(c.NotApplicable)},
			{"skipped_needs_option", strconv.Itoa(c.NeedsOption)},
			{"skipped_undecided", strconv.Itoa(c.Undecided)},
		},
		SystemOut: xmlText(xmlSafe(clean(r.Verdict.Text) + "\n" + countsLine(c) + "\n")),
	}
	if r.AgentStarts != nil {
		suite.Properties = append(suite.Properties, junitProperty{"agent_starts", strconv.Itoa(*r.AgentStarts)})
	}
	for i := range suite.Properties {
		p := &suite.Properties[i]
		p.Value = xmlSafe(clean(p.Value))
	}
	for _, res := range r.Results {
		suite.Cases = append(suite.Cases, junitCaseOf(r, res))
	}
	return suite
}

// writeJUnit writes suites as one <testsuites> document named name, that
// took time (in seconds), its totals summed over the suites.
func writeJUnit(w io.Writer, name, time string, suites []junitSuite) error {
	doc := junitSuites{Name: name, Time: time, Suites: suites}
	for _, s := range suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitCaseOf(r *Report, res engine.Record) junitCase {
	rule := ruleOf(res)
	tc := junitCase{
		Classname: xmlSafe("§" + clean(rule.Section)),
		Name:      xmlSafe(clean(rule.ID) + " — " + clean(rule.Title)),
		Time:      seconds(res.Elapsed),
	}
	switch res.Outcome {
	case engine.Pass:
	case engine.Fail, engine.Warn:
		detail := junitDetail(res)
		switch {
		case r.baselined(res):
			tc.Skipped = &junitSkipped{Message: xmlSafe(clip("known failure (baseline): "+firstMessage(res), maxMessage))}
			tc.SystemOut = xmlText(xmlSafe(detail))
		case res.Outcome == engine.Fail:
			tc.Failure = &junitProblem{
				Message: xmlSafe(clip(firstMessage(res), maxMessage)),
				Type:    xmlSafe(clean(string(rule.Keyword))),
				Text:    xmlSafe(detail),
			}
		default:
			tc.SystemOut = xmlText(xmlSafe(fmt.Sprintf("WARN (%s): %s\n%s", clean(string(rule.Keyword)), clean(rule.Title), detail)))
		}
		return tc
	case engine.Skip:
		tc.Skipped = &junitSkipped{Message: xmlSafe(firstLine(skipReason(res), maxMessage)), Type: string(res.Kind)}
	default:
		tc.Error = &junitProblem{
			Message: xmlSafe(firstLine(res.Reason, maxMessage)),
			Type:    "checker",
			Text:    xmlSafe(strings.Join(lines(res.Reason), "\n")),
		}
	}
	if notes := notesText(res); notes != "" {
		tc.SystemOut = xmlText(xmlSafe(notes))
	}
	return tc
}

// junitDetail is the findings with their evidence, and the notes, as the
// plain text report draws them.
func junitDetail(res engine.Record) string {
	t := newText(Style{})
	t.findings("", res, true)
	t.b.WriteString(notesText(res))
	return t.b.String()
}

func notesText(res engine.Record) string {
	var b strings.Builder
	for _, n := range res.Notes {
		for _, l := range lines(n) {
			b.WriteString("note: " + l + "\n")
		}
	}
	return b.String()
}

func firstMessage(res engine.Record) string {
	if len(res.Findings) == 0 {
		return ""
	}
	return firstLine(res.Findings[0].Message, 0)
}

// seconds is d in seconds, to the millisecond, as JUnit's time attribute.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
