package html

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/checks/timeline"
	"github.com/sigrix-io/postern-conformance/report"
	"github.com/sigrix-io/postern-conformance/wire"
)

// A timeline drawn: an inline SVG of two lanes over one axis of time, the
// other side's answers above (bands, and a mark where it was asked), the
// party under test below (a dot per probe where its answer came, coloured
// by what it reported), and the edges across both; and the same in words beside it, for a
// reader without the picture.

// The drawing's geometry, in the SVG's own units (it scales to the page).
const (
	svgW       = 760.0
	svgPad     = 12.0
	labelRow   = 11.0 // height of an edge label's row
	labelRows  = 3
	upperTop   = svgPad + labelRow*labelRows + 14
	laneH      = 22.0
	lowerTop   = upperTop + laneH + 26
	axisY      = lowerTop + laneH + 10
	svgH       = axisY + 22
	probeR     = 4.5
	judgedR    = 8.0
	bandLabelW = 70.0 // a band narrower than this shows its label only on hover
)

type timelineView struct {
	W, H          float64
	UpperLabel    string
	UpperLabelY   float64
	LowerLabel    string
	LowerLabelY   float64
	UpperY, LaneH float64
	LowerY        float64
	AxisY         float64
	X0, X1        float64
	Bands         []svgBand
	Calls         []svgMark
	Probes        []svgMark
	Edges         []svgEdge
	Ticks         []svgTick
	// In words.
	Span      string
	EdgeWords []string
	Answers   []string
}

type svgBand struct {
	X, Y, W, H   float64
	TextX, TextY float64
	Class, Label string
	Title        string
	ShowLabel    bool
}

type svgMark struct {
	X, Y, R float64
	Class   string
	Title   string
	Judged  bool
}

type svgEdge struct {
	X, Y1, Y2, LabelY float64
	Class, Label      string
	Title             string
	Anchor            string // the label's text-anchor
	Judged            bool
}

type svgTick struct {
	X, Y  float64
	Label string
}

// draw lays tl out, marking the probes res's findings were judged on and
// the edges they were judged against.
func draw(tl *timeline.Timeline, res engine.Record) *timelineView {
	span := tl.End.Sub(tl.Start)
	if span <= 0 {
		span = time.Second
	}
	span += span / 40 // room for the last mark
	x := func(at time.Time) float64 {
		f := float64(at.Sub(tl.Start)) / float64(span)
		return round(svgPad + math.Max(0, math.Min(1, f))*(svgW-2*svgPad))
	}
	v := &timelineView{W: svgW, H: svgH, UpperLabel: report.Clean(tl.Upper), LowerLabel: report.Clean(tl.Lower),
		UpperLabelY: upperTop - 4, LowerLabelY: lowerTop - 4, UpperY: upperTop, LaneH: laneH, LowerY: lowerTop,
		AxisY: axisY, X0: svgPad, X1: svgW - svgPad, Span: fmt.Sprintf("%.2f s", tl.End.Sub(tl.Start).Seconds())}

	judgedEx := map[*wire.Exchange]bool{}
	judgedEdge := map[timeline.Edge]bool{}
	for _, f := range res.Findings {
		if _, edges, ok := tl.Judged(f.Ex); ok {
			judgedEx[f.Ex] = true
			for _, e := range edges {
				judgedEdge[e] = true
			}
		}
	}

	for i, b := range tl.Bands {
		end := tl.End.Add(span / 40)
		if i+1 < len(tl.Bands) {
			end = tl.Bands[i+1].From
		}
		x0, x1 := x(b.From), x(end)
		label := report.Clean(b.Label)
		v.Bands = append(v.Bands, svgBand{X: x0, Y: upperTop, W: math.Max(1, x1-x0), H: laneH, TextX: x0 + 4, TextY: upperTop + laneH/2 + 4,
			Class: "st-" + string(b.State), Label: label, Title: fmt.Sprintf("from %s: %s", since(tl.Start, b.From), label), ShowLabel: x1-x0 >= bandLabelW})
		v.Answers = append(v.Answers, fmt.Sprintf("from %s: %s", since(tl.Start, b.From), label))
	}
	for _, c := range tl.Calls {
		v.Calls = append(v.Calls, svgMark{X: x(c.At), Y: upperTop + laneH/2, R: 3.5, Class: "st-" + string(c.State),
			Title: fmt.Sprintf("%s %s: %s", since(tl.Start, c.At), report.Clean(c.Label), report.Clean(c.Saw))})
	}
	for _, p := range tl.Probes {
		m := svgMark{X: x(p.Answered()), Y: lowerTop + laneH/2, R: probeR, Class: "st-" + string(p.State),
			Title: fmt.Sprintf("%s %s: %s (sent at %s, answered in %s)", since(tl.Start, p.Answered()), report.Clean(p.Label), report.Clean(p.Saw),
				since(tl.Start, p.At), p.Took.Round(time.Millisecond))}
		if judgedEx[p.Ex] {
			m.R, m.Judged = judgedR, true
			m.Title = "judged here: " + m.Title
		}
		v.Probes = append(v.Probes, m)
	}
	var rows labelRowsUsed
	for _, e := range tl.Edges {
		ex := x(e.At)
		label := report.Clean(e.Label)
		short, _, _ := strings.Cut(label, " (") // the details are in the title and the caption
		text := fmt.Sprintf("%s %s", since(tl.Start, e.At), short)
		anchor, from, to := "start", ex, ex+textWidth(text)
		if to > svgW-svgPad {
			anchor, from, to = "end", ex-textWidth(text), ex
		}
		row := rows.place(from, to)
		se := svgEdge{X: ex, Y1: svgPad + labelRow*float64(row) + 2, Y2: axisY, LabelY: svgPad + labelRow*float64(row+1) - 2,
			Class: "edge-" + string(e.Kind), Label: text, Title: label, Anchor: anchor, Judged: judgedEdge[e]}
		v.Edges = append(v.Edges, se)
		word := fmt.Sprintf("%s: %s", since(tl.Start, e.At), label)
		if se.Judged {
			word += " (a finding was judged against it)"
		}
		v.EdgeWords = append(v.EdgeWords, word)
	}
	step := tickStep(tl.End.Sub(tl.Start))
	for d := time.Duration(0); d <= span; d += step {
		v.Ticks = append(v.Ticks, svgTick{X: x(tl.Start.Add(d)), Y: axisY + 14, Label: fmt.Sprintf("%gs", d.Seconds())})
	}
	return v
}

// tickStep is the axis's step: about eight ticks over span.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute} {
		if span/s <= 10 {
			return s
		}
	}
	return 5 * time.Minute
}

func round(f float64) float64 { return math.Round(f*10) / 10 }

// textWidth estimates the width of an edge label (10px type).
func textWidth(s string) float64 { return float64(len([]rune(s)))*5.4 + 4 }

// labelRowsUsed places edge labels in the rows above the lanes, each in
// the first row where it overlaps none placed before, or else in the row
// whose last label ends first.
type labelRowsUsed [labelRows][][2]float64

func (l *labelRowsUsed) place(from, to float64) int {
	best, bestEnd := 0, math.Inf(1)
	for r := range l {
		free, end := true, math.Inf(-1)
		for _, span := range l[r] {
			if from < span[1] && span[0] < to {
				free = false
			}
			end = math.Max(end, span[1])
		}
		if free {
			l[r] = append(l[r], [2]float64{from, to})
			return r
		}
		if end < bestEnd {
			best, bestEnd = r, end
		}
	}
	l[best] = append(l[best], [2]float64{from, to})
	return best
}
