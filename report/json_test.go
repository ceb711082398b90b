package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire"
)

// compile compiles the embedded schema; strict additionally forbids, on
// every object the schema describes, members it does not name, so that a
// field the writer emits but the schema omits is caught.
func compile(t *testing.T, strict bool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
	assert.NilError(t, err)
	if strict {
		closeObjects(doc)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	assert.NilError(t, c.AddResource("report.schema.json", doc))
	s, err := c.Compile("report.schema.json")
	assert.NilError(t, err)
	return s
}

func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
		}
		for _, x := range v {
			closeObjects(x)
		}
	case []any:
		for _, x := range v {
			closeObjects(x)
		}
	}
}

func writeJSON(t *testing.T, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, report.WriteJSON(&b, r))
	return b.Bytes()
}

func TestJSONValidates(t *testing.T) {
	out := writeJSON(t, fixture())
	golden.AssertBytes(t, out, "report.golden.json")
	assert.Check(t, utf8.Valid(out))
	assert.Check(t, !bytes.ContainsAny(out, "\x00\x1b"))

	for _, strict := range []bool{false, true} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		assert.NilError(t, err)
		assert.NilError(t, compile(t, strict).Validate(inst), "strict=%v", strict)
	}

	// The schema rejects what the format forbids.
	var doc map[string]any
	assert.NilError(t, json.Unmarshal(out, &doc))
	doc["format_version"] = 2
	bad, _ := json.Marshal(doc)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	assert.Check(t, compile(t, false).Validate(inst) != nil)
}

func TestJSONContent(t *testing.T) {
	var doc struct {
		Format        string `json:"format"`
		FormatVersion int    `json:"format_version"`
		Started       string `json:"started"`
		DeclaredLevel int    `json:"declared_level"`
		Baseline      []string
		Options       struct {
			Origin  *string  `json:"origin"`
			Headers []string `json:"headers"`
		} `json:"options"`
		Counts  map[string]int `json:"counts"`
		Results []struct {
			ID        string            `json:"id"`
			Outcome   string            `json:"outcome"`
			Baselined bool              `json:"baselined"`
			Exchanges *[]map[string]any `json:"exchanges"`
			Findings  []struct {
				Message  string `json:"message"`
				Evidence *struct {
					Request struct {
						Headers map[string][]string `json:"headers"`
					} `json:"request"`
					Response *struct {
						Status int    `json:"status"`
						Body   string `json:"body"`
					} `json:"response"`
					Error *string `json:"error"`
				} `json:"evidence"`
			} `json:"findings"`
		} `json:"results"`
	}
	assert.NilError(t, json.Unmarshal(writeJSON(t, fixture()), &doc))
	assert.Equal(t, doc.Format, "postern-conformance/report")
	assert.Equal(t, doc.FormatVersion, 1)
	assert.Equal(t, doc.Started, "2026-01-02T03:04:05Z")
	assert.Equal(t, doc.DeclaredLevel, 2)
	assert.DeepEqual(t, doc.Baseline, []string{"5/revoked"})
	assert.Equal(t, *doc.Options.Origin, "https://app.example.com")
	assert.DeepEqual(t, doc.Counts, map[string]int{"total": 8, "pass": 3, "fail": 1, "warn": 1, "skip": 1, "error": 1, "baselined": 1,
		"not_applicable": 0, "needs_option": 1, "undecided": 0})

	byID := map[string]int{}
	for i, r := range doc.Results {
		byID[r.ID] = i
	}
	for id, want := range map[string]bool{"4.4/no-credentials": false, "4.2/missing-input": false, "2.3/media-type-run": true, "2.3/no-wildcard": true, "4.6/order": true, "5/revoked": true} {
		assert.Check(t, (doc.Results[byID[id]].Exchanges != nil) == want, "%s: exchanges present should be %v", id, want)
	}
	known := doc.Results[byID["5/revoked"]]
	assert.Check(t, known.Outcome == "FAIL" && known.Baselined)

	fail := doc.Results[byID["2.3/media-type-run"]]
	ev := fail.Findings[0].Evidence
	assert.Equal(t, ev.Response.Status, 200)
	assert.Equal(t, ev.Response.Body, strings.ToValidUTF8(hostileBody, "\uFFFD"))
	assert.DeepEqual(t, ev.Request.Headers["Authorization"], []string{"[redacted]"})
	assert.Check(t, fail.Findings[1].Evidence == nil)

	warn := doc.Results[byID["2.3/no-wildcard"]].Findings[0].Evidence
	assert.Check(t, warn.Response == nil)
	assert.Equal(t, *warn.Error, wire.ErrNoAnswer.Error())
}

func TestJSONBodyCap(t *testing.T) {
	r := fixture()
	ex := r.Results[2].Findings[0].Ex
	// 4095 ASCII bytes then a 3-byte character straddling the 4 KiB cap.
	ex.Body = append(bytes.Repeat([]byte("a"), 4095), "€€"...)
	var doc struct {
		Results []struct {
			Findings []struct {
				Evidence struct {
					Response struct {
						Body      string `json:"body"`
						Truncated bool   `json:"truncated"`
					} `json:"response"`
				} `json:"evidence"`
			} `json:"findings"`
		} `json:"results"`
	}
	assert.NilError(t, json.Unmarshal(writeJSON(t, r), &doc))
	got := doc.Results[2].Findings[0].Evidence.Response
	assert.Check(t, got.Truncated)
	assert.Check(t, is.Len(got.Body, 4095))
	assert.Check(t, !strings.Contains(got.Body, "\uFFFD"))
}

func TestSchemaIsACopy(t *testing.T) {
	s := report.Schema()
	s[0] = 'x'
	assert.Check(t, report.Schema()[0] == '{')
}
