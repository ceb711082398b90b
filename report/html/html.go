// Package html renders a report as one self-contained HTML page, for a
// person: the verdict as the text report words it, what was checked and
// how, a map of SPEC's sections coloured by their worst outcome, every
// rule (FAIL, WARN and ERROR open with their findings, evidence and the
// curl line that reproduces each; PASS and SKIP folded, SKIPs grouped by
// kind), how much of SPEC the run covered, and, for the timed rules of an
// entitlement walk or a distributor check, a timeline of what was
// answered when. A fleet's page adds a table of runners by section.
//
// It reads what every format reads (engine.Records, as report.Report
// and report.Fleet hold them) and judges nothing. The page opens offline
// from disk: its style and its one small script (filtering, which the
// page does without) are inline, and it fetches nothing.
//
// Everything the target sent (bodies, headers, messages quoting them,
// agent names) is untrusted. It reaches the page only through
// html/template, which escapes it for where it goes; nothing is marked
// safe. Each line is first cleaned as the text report cleans it, so a
// control or bidirectional character shows as an escape. The page's
// Content-Security-Policy allows only its own style and script, by hash,
// so even markup that got through could not run or load anything.
package html

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/report"
)

var (
	//go:embed page.gohtml
	pageSource string
	//go:embed style.css
	style string
	//go:embed filter.js
	script string
)

// page is what the template is given.
type page struct {
	CSP, Title, Tool, Generated string
	Fleet                       *fleetView
	Reports                     []*reportView
}

// csp allows the page its own style and script, by their hashes, and
// nothing else: no fetch, no image, no frame, no form, no other script.
var csp = "default-src 'none'; style-src '" + hash(style) + "'; script-src '" + hash(script) + "'; img-src 'none'; base-uri 'none'; form-action 'none'"

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// tmpl is the page, its style and script written in as they are hashed.
var tmpl = template.Must(template.New("page").Parse(
	strings.NewReplacer("/*STYLE*/", style, "/*SCRIPT*/", script).Replace(pageSource)))

// Write writes r as one HTML page.
func Write(w io.Writer, r *report.Report) error {
	v := view(r, "")
	v.Filters = true
	p := &page{CSP: csp, Title: report.Clean(fmt.Sprintf("%s — Postern %s · %s", r.Verdict.Text, r.ModeName(), r.Target)),
		Tool: toolOf(r.Tool, r.ToolVersion), Generated: generated(r.Started), Reports: []*reportView{v}}
	return tmpl.ExecuteTemplate(w, "page", p)
}

// WriteFleet writes the page of a fleet: its table of runners by section,
// then each runner's part as a page of its own would show it.
func WriteFleet(w io.Writer, f *report.Fleet) error {
	fv := fleetOf(f)
	p := &page{CSP: csp, Title: fmt.Sprintf("%s — Postern conformance · a fleet of %d", fv.Summary, len(f.Runners)),
		Tool: toolOf(f.Tool, f.ToolVersion), Generated: generated(f.Started), Fleet: fv}
	for i, rn := range f.Runners {
		prefix := fmt.Sprintf("r%d-", i+1)
		var v *reportView
		if rn.Report == nil {
			v = &reportView{Prefix: prefix, Heading: report.Clean("Postern conformance · " + rn.Target), Unchecked: report.FirstLine(rn.Err, 0)}
		} else {
			v = view(rn.Report, prefix)
		}
		v.Runner = fmt.Sprintf("runner-%d", i+1)
		v.Heading = fmt.Sprintf("Runner %d of %d · %s", i+1, len(f.Runners), v.Heading)
		p.Reports = append(p.Reports, v)
	}
	return tmpl.ExecuteTemplate(w, "page", p)
}

func toolOf(name, version string) string {
	if name == "" {
		name = report.ToolName
	}
	if version != "" {
		name += " " + version
	}
	return name
}

func generated(started time.Time) string {
	if started.IsZero() {
		return "for a run whose start was not recorded"
	}
	return "for the run started " + started.UTC().Format(time.RFC3339)
}

// fleetView is a fleet's own part of its page.
type fleetView struct {
	Heading, Summary, Class, Counts string
	Sections                        []string
	Rows                            []fleetRow
}

type fleetRow struct {
	Href, Target, Agent, Verdict string
	Cells                        []fleetCell
}

type fleetCell struct {
	Href, Class, Label, Title string
}

func fleetOf(f *report.Fleet) *fleetView {
	c := f.Counts()
	fv := &fleetView{Heading: fmt.Sprintf("Postern conformance · a fleet of %s", engine.Count(len(f.Runners), "runner", "runners"))}
	fv.Summary = fmt.Sprintf("%d conformant, %d nonconformant", c.Conformant, c.Nonconformant)
	if c.Undetermined > 0 {
		fv.Summary += fmt.Sprintf(", %d not determined", c.Undetermined)
	}
	if c.Unchecked > 0 {
		fv.Summary += fmt.Sprintf(", %d not checked", c.Unchecked)
	}
	fv.Summary += "."
	fv.Class = "good"
	switch {
	case c.Nonconformant > 0 || c.Unchecked > 0:
		fv.Class = "bad"
	case c.Undetermined > 0:
		fv.Class = "undetermined"
	}
	fv.Counts = fmt.Sprintf("%s checked in %s.", engine.Count(len(f.Runners), "runner", "runners"), f.Elapsed.Round(time.Millisecond))
	seen := map[string]bool{}
	for _, rn := range f.Runners {
		if rn.Report == nil {
			continue
		}
		order, _ := sections(rn.Report)
		for _, s := range order {
			if !seen[s] {
				seen[s] = true
				fv.Sections = append(fv.Sections, s)
			}
		}
	}
	for i, rn := range f.Runners {
		prefix := fmt.Sprintf("r%d-", i+1)
		row := fleetRow{Href: fmt.Sprintf("#runner-%d", i+1), Target: report.Clean(rn.Target), Agent: report.Clean(orNone(rn.Agent))}
		if rn.Report == nil {
			row.Agent, row.Verdict = "-", "Not checked: "+report.FirstLine(rn.Err, 200)
			for range fv.Sections {
				row.Cells = append(row.Cells, fleetCell{})
			}
			fv.Rows = append(fv.Rows, row)
			continue
		}
		row.Verdict = report.Clean(rn.Report.Verdict.Text)
		_, by := sections(rn.Report)
		for _, s := range fv.Sections {
			worst, cell := -1, fleetCell{}
			for _, res := range by[s] {
				if rank := rankOf(rn.Report, res); rank > worst {
					o := outcome(rn.Report, res)
					worst = rank
					cell = fleetCell{Href: "#" + prefix + "s-" + s, Class: classOf(o, res), Label: o, Title: "§" + s + ": " + worstWord(rn.Report, res)}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		fv.Rows = append(fv.Rows, row)
	}
	return fv
}
