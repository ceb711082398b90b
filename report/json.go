package report

import (
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
)

// The JSON report's identity. FORMAT.md states the versioning policy:
// additive changes keep FormatVersion, breaking changes bump it.
const (
	Format        = "postern-conformance/report"
	FormatVersion = 1
)

// jsonBodyCap is the most of a request or response body a JSON report
// carries.
const jsonBodyCap = 4096

//go:embed report.schema.json
var schema []byte

// Schema returns the JSON Schema (draft 2020-12) of the JSON report.
func Schema() []byte { return append([]byte(nil), schema...) }

type jsonReport struct {
	Format        string       `json:"format"`
	FormatVersion int          `json:"format_version"`
	Tool          jsonTool     `json:"tool"`
	Target        string       `json:"target"`
	Schemas       string       `json:"schemas"`
	Options       jsonOptions  `json:"options"`
	Started       string       `json:"started"`
	ElapsedMS     int64        `json:"elapsed_ms"`
	AgentStarts   *int         `json:"agent_starts,omitempty"`
	DeclaredLevel int          `json:"declared_level"`
	Verdict       jsonVerdict  `json:"verdict"`
	Counts        jsonCounts   `json:"counts"`
	Baseline      []string     `json:"baseline"`
	Stale         []string     `json:"stale_baseline"`
	Results       []jsonResult `json:"results"`
}

type jsonTool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type jsonOptions struct {
	Origin     *string  `json:"origin"`
	Execute    bool     `json:"execute"`
	Rules      []string `json:"rules"`
	TimeoutMS  int64    `json:"timeout_ms"`
	DeadlineMS int64    `json:"deadline_ms"`
	Headers    []string `json:"headers"`
	MaxRuns    *int     `json:"max_runs,omitempty"`
}

type jsonVerdict struct {
	Conformant bool   `json:"conformant"`
	Determined bool   `json:"determined"`
	MustBroken int    `json:"must_broken"`
	Baselined  int    `json:"baselined"`
	Undecided  int    `json:"undecided"`
	Text       string `json:"text"`
}

type jsonCounts struct {
	Total     int `json:"total"`
	Pass      int `json:"pass"`
	Fail      int `json:"fail"`
	Warn      int `json:"warn"`
	Skip      int `json:"skip"`
	Error     int `json:"error"`
	Baselined int `json:"baselined"`
	// The SKIPs by kind; they add up to Skip.
	NotApplicable int `json:"not_applicable"`
	NeedsOption   int `json:"needs_option"`
	Undecided     int `json:"undecided"`
}

type jsonResult struct {
	ID        string          `json:"id"`
	Section   string          `json:"section"`
	Level     int             `json:"level"`
	Keyword   string          `json:"keyword"`
	Binding   string          `json:"binding"`
	Chain     string          `json:"chain,omitempty"`
	Advisory  bool            `json:"advisory"`
	Title     string          `json:"title"`
	Needs     []string        `json:"needs"`
	Outcome   string          `json:"outcome"`
	Skip      *string         `json:"skip"`
	Baselined bool            `json:"baselined"`
	Reason    string          `json:"reason"`
	Notes     []string        `json:"notes"`
	Findings  []jsonFinding   `json:"findings"`
	Exchanges *[]jsonExchange `json:"exchanges,omitempty"`
	ElapsedMS int64           `json:"elapsed_ms"`
}

type jsonFinding struct {
	Message   string         `json:"message"`
	Inferred  bool           `json:"inferred"`
	Evidence  *jsonExchange  `json:"evidence"`
	Reproduce *jsonReproduce `json:"reproduce"`
}

// jsonReproduce is wire.Reproduction: the curl line, or null and why not.
type jsonReproduce struct {
	Curl *string `json:"curl"`
	Note string  `json:"note"`
}

type jsonExchange struct {
	Request   jsonRequest   `json:"request"`
	Response  *jsonResponse `json:"response"`
	Error     *string       `json:"error"`
	ElapsedMS int64         `json:"elapsed_ms"`
}

type jsonRequest struct {
	Method    string              `json:"method"`
	URL       string              `json:"url"`
	Headers   map[string][]string `json:"headers"`
	Body      string              `json:"body"`
	Truncated bool                `json:"truncated"`
	Note      string              `json:"note"`
}

type jsonResponse struct {
	Proto     string              `json:"proto"`
	Status    int                 `json:"status"`
	Headers   map[string][]string `json:"headers"`
	Body      string              `json:"body"`
	Truncated bool                `json:"truncated"`
}

// WriteJSON writes the report as one JSON document in the versioned format
// FORMAT.md describes and Schema validates.
func WriteJSON(w io.Writer, r *Report) error {
	c := r.Counts()
	doc := jsonReport{
		Format:        Format,
		FormatVersion: FormatVersion,
		Tool:          jsonTool{Name: r.tool(), Version: r.ToolVersion},
		Target:        r.Target,
		Schemas:       r.Schemas,
		Options: jsonOptions{
			Execute:    r.Options.Execute,
			Rules:      nonNil(r.Options.Rules),
			TimeoutMS:  r.Options.Timeout.Milliseconds(),
			DeadlineMS: r.Options.Deadline.Milliseconds(),
			Headers:    nonNil(r.Options.Headers),
			MaxRuns:    positive(r.Options.MaxRuns),
		},
		Started:       r.Started.UTC().Format(time.RFC3339),
		ElapsedMS:     r.Elapsed.Milliseconds(),
		AgentStarts:   r.AgentStarts,
		DeclaredLevel: r.Verdict.Declared,
		Verdict: jsonVerdict{
			Conformant: r.Verdict.Conformant,
			Determined: r.Verdict.Determined(),
			MustBroken: r.Verdict.Broken,
			Baselined:  r.Verdict.Baselined,
			Undecided:  r.Verdict.Undecided,
			Text:       r.Verdict.Text,
		},
		Counts: jsonCounts{
			Total: c.Total(), Pass: c.Pass, Fail: c.Fail, Warn: c.Warn,
			Skip: c.Skip, Error: c.Error, Baselined: c.Baselined,
			NotApplicable: c.NotApplicable, NeedsOption: c.NeedsOption, Undecided: c.Undecided,
		},
		Baseline: r.baselineIDs(),
		Stale:    make([]string, 0, len(r.Stale)),
		Results:  make([]jsonResult, 0, len(r.Results)),
	}
	if r.Options.Origin != "" {
		o := r.Options.Origin
		doc.Options.Origin = &o
	}
	for _, st := range r.Stale {
		doc.Stale = append(doc.Stale, st.ID)
	}
	for _, res := range r.Results {
		doc.Results = append(doc.Results, jsonResultOf(r, res))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func jsonResultOf(r *Report, res engine.Record) jsonResult {
	rule := ruleOf(res)
	out := jsonResult{
		ID:        rule.ID,
		Section:   rule.Section,
		Level:     rule.Level,
		Keyword:   string(rule.Keyword),
		Binding:   string(rule.Binding),
		Chain:     rule.Chain,
		Advisory:  rule.Advisory,
		Title:     rule.Title,
		Needs:     nonNil(rule.Needs),
		Outcome:   string(res.Outcome),
		Baselined: r.baselined(res),
		Reason:    res.Reason,
		Notes:     nonNil(res.Notes),
		Findings:  make([]jsonFinding, 0, len(res.Findings)),
		ElapsedMS: res.Elapsed.Milliseconds(),
	}
	if res.Outcome == engine.Skip {
		kind := string(res.Kind)
		out.Skip = &kind
	}
	for _, f := range res.Findings {
		jf := jsonFinding{Message: f.Message, Inferred: f.Inferred, Evidence: jsonExchangeOf(f.Ex)}
		if f.Ex != nil {
			rep := r.Reproduce(f)
			jf.Reproduce = &jsonReproduce{Note: rep.Note}
			if rep.Curl != "" {
				jf.Reproduce.Curl = &rep.Curl
			}
		}
		out.Findings = append(out.Findings, jf)
	}
	switch {
	case (res.Outcome == engine.Pass || res.Outcome == engine.Skip) && !r.Options.AllEvidence:
	default:
		exs := make([]jsonExchange, 0, len(res.Exchanges))
		for _, ex := range res.Exchanges {
			if ex != nil {
				exs = append(exs, *jsonExchangeOf(ex))
			}
		}
		out.Exchanges = &exs
	}
	return out
}

func jsonExchangeOf(ex *wire.Exchange) *jsonExchange {
	if ex == nil {
		return nil
	}
	body, cut := excerpt(ex.ReqBody, jsonBodyCap)
	out := &jsonExchange{
		Request: jsonRequest{
			Method:    ex.Method,
			URL:       ex.URL,
			Headers:   headerMap(ex.ReqHeader),
			Body:      body,
			Truncated: cut,
			Note:      ex.Note,
		},
		ElapsedMS: ex.Elapsed.Milliseconds(),
	}
	if ex.Answered() {
		body, cut := excerpt(ex.Body, jsonBodyCap)
		out.Response = &jsonResponse{
			Proto:     ex.Proto,
			Status:    ex.Status,
			Headers:   headerMap(ex.Header),
			Body:      body,
			Truncated: cut || ex.Truncated,
		}
	}
	if ex.Err != nil {
		e := ex.Err.Error()
		out.Error = &e
	}
	return out
}

// excerpt is at most max bytes of b, cut on a character boundary, as valid
// UTF-8 (invalid bytes become U+FFFD), and whether anything was cut.
func excerpt(b []byte, max int) (string, bool) {
	cut := len(b) > max
	if cut {
		n := max
		// Back off to the start of a character, at most utf8.UTFMax bytes.
		for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); i++ {
			n--
		}
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

// headerMap copies h so that it encodes as an object, never null.
func headerMap(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		out[k] = nonNil(vs)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// positive is &n where n is above zero, nil otherwise.
func positive(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}
