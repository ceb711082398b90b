package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/sigrix-io/postern-conformance/report"
)

type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []struct {
		Name      string `xml:"name,attr"`
		Tests     int    `xml:"tests,attr"`
		Failures  int    `xml:"failures,attr"`
		Errors    int    `xml:"errors,attr"`
		Skipped   int    `xml:"skipped,attr"`
		Timestamp string `xml:"timestamp,attr"`
		Props     []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []jCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type jCase struct {
	Classname string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	Time      string `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

func writeJUnit(t *testing.T, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, report.WriteJUnit(&b, r))
	return b.Bytes()
}

// wellFormed reads every token strictly: encoding/xml rejects characters
// XML 1.0 does not allow.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		assert.NilError(t, err)
	}
}

func TestJUnit(t *testing.T) {
	out := writeJUnit(t, fixture())
	golden.AssertBytes(t, out, "junit.golden.xml")
	assert.Check(t, utf8.Valid(out))
	assert.Check(t, !bytes.ContainsAny(out, "\x00\x1b\x07"))
	wellFormed(t, out)

	var doc jSuites
	assert.NilError(t, xml.Unmarshal(out, &doc))
	assert.Equal(t, doc.Name, "postern-conformance")
	assert.Check(t, doc.Tests == 8 && doc.Failures == 1 && doc.Errors == 1 && doc.Skipped == 2,
		"tests=%d failures=%d errors=%d skipped=%d", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	assert.Equal(t, doc.Time, "2.345")
	assert.Assert(t, is.Len(doc.Suites, 1))
	s := doc.Suites[0]
	assert.Equal(t, s.Name, "postern-conformance http://127.0.0.1:8787")
	assert.Equal(t, s.Timestamp, "2026-01-02T03:04:05")
	assert.Check(t, s.Tests == 8 && s.Failures == 1 && s.Errors == 1 && s.Skipped == 2)
	assert.Assert(t, is.Len(s.Cases, 8))

	byID := map[string]jCase{}
	for _, c := range s.Cases {
		byID[strings.SplitN(c.Name, " ", 2)[0]] = c
	}
	pass := byID["4.4/no-credentials"]
	assert.Check(t, pass.Classname == "§4.4" && pass.Name == "4.4/no-credentials — status answers without credentials")
	assert.Check(t, pass.Failure == nil && pass.Skipped == nil && pass.Error == nil)
	assert.Equal(t, pass.Time, "0.003")

	fail := byID["2.3/media-type-run"]
	assert.Assert(t, fail.Failure != nil)
	assert.Equal(t, fail.Failure.Type, "MUST")
	assert.Equal(t, fail.Failure.Message, "run parsed a text/plain body and answered 200")
	assert.Check(t, is.Contains(fail.Failure.Text, "> POST http://127.0.0.1:8787/postern/v0/run\n"))
	assert.Check(t, is.Contains(fail.Failure.Text, "< HTTP/1.1 200\n"))
	assert.Check(t, is.Contains(fail.Failure.Text, `| {"ok":true}\x00\x1b[31mRED`))
	assert.Check(t, is.Contains(fail.Failure.Text, "| ]]></failure>"))

	warn := byID["2.3/no-wildcard"]
	assert.Check(t, warn.Failure == nil && warn.Skipped == nil && warn.Error == nil)
	assert.Check(t, is.Contains(warn.SystemOut, "WARN (SHOULD): preflight from an unknown origin is refused\nthe preflight got no answer\n"))

	skip := byID["4.2/missing-input"]
	assert.Assert(t, skip.Skipped != nil)
	assert.Equal(t, skip.Skipped.Message, "needs --execute: deciding it means running the agent")

	errc := byID["4.6/order"]
	assert.Assert(t, errc.Error != nil)
	assert.Equal(t, errc.Error.Message, "the checker failed evaluating this rule: boom")
	assert.Check(t, is.Contains(errc.Error.Text, "goroutine 1"))

	known := byID["5/revoked"]
	assert.Check(t, known.Failure == nil)
	assert.Assert(t, known.Skipped != nil)
	assert.Equal(t, known.Skipped.Message, "known failure (baseline): a revoked entitlement was accepted (answered 200)")
	assert.Check(t, is.Contains(known.SystemOut, "> POST"))

	assert.Check(t, byID["4.4/level"].SystemOut == "note: Execute — describe, status, run\n")
}

// Raw hostile bytes anywhere a runner could put them (a title will not come
// from a runner, but nothing should depend on that) still give valid XML.
func TestJUnitHostileEverywhere(t *testing.T) {
	r := fixture()
	nasty := "x\x00\x01\x0b\x1b[0m\xef\xbf\xbe\xff\ud7ff]]>&<'\""
	r.Target = nasty
	r.Schemas = nasty
	r.Verdict.Text = nasty
	r.Results[0].Rule.Title = nasty
	r.Results[0].Notes = []string{nasty}
	r.Results[4].Reason = nasty
	r.Results[5].Reason = nasty
	r.Results[2].Findings[0].Message = nasty
	out := writeJUnit(t, r)
	wellFormed(t, out)
	assert.Check(t, utf8.Valid(out))
	var doc jSuites
	assert.NilError(t, xml.Unmarshal(out, &doc))
	assert.Check(t, is.Contains(doc.Suites[0].Cases[2].Failure.Message, `]]>&<'"`))
}
