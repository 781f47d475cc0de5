package history

import (
	_ "embed" // for pageTemplate
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"

	"github.com/meshbench/meshbench/framework/report"
)

//go:embed history.html.tmpl
var pageTemplate string

var htmlTemplate = template.Must(template.New("history").Parse(pageTemplate))

// htmlChart is a chart with its drawing.
type htmlChart struct {
	report.Chart
	SVG template.HTML
}

type changeRow struct {
	Group, Run                              int
	Scenario, Metric, File, Started         string
	Before, After, Change, Interval, PValue string
	Worse                                   bool
}

type runRow struct {
	N                      int
	Started, File, Sidecar string
}

type scenarioCharts struct {
	Name   string
	Charts []htmlChart
}

type htmlGroup struct {
	*Group
	Holds     []string
	RunRows   []runRow
	Scenarios []scenarioCharts
}

// HTML writes the history as one self-contained page: the change points,
// then per group what it holds, why it is apart, its runs and one chart
// per scenario and metric, inline SVG with its data beside it in a
// <script type="application/json" id="data-…"> block; nothing is loaded
// from anywhere else.
func (h *History) HTML(w io.Writer) error {
	var groups []htmlGroup
	var changes []changeRow
	for _, g := range h.Groups {
		hg := htmlGroup{Group: g, Holds: g.Holds()}
		for i, in := range g.Runs {
			hg.RunRows = append(hg.RunRows, runRow{i + 1, stamp(in.Results.Started), filepath.Base(in.File), Sidecar(in.Results)})
		}
		byName := map[string]int{}
		for i, s := range g.Series {
			k, ok := byName[s.Scenario]
			if !ok {
				k = len(hg.Scenarios)
				byName[s.Scenario] = k
				hg.Scenarios = append(hg.Scenarios, scenarioCharts{Name: s.Scenario})
			}
			c := g.Chart(s, fmt.Sprintf("g%d-s%d", g.ID, i))
			svg, err := c.SVG()
			if err != nil {
				return fmt.Errorf("history html: %w", err)
			}
			// The SVG is gonum's drawing of numbers and labels it escapes itself.
			hg.Scenarios[k].Charts = append(hg.Scenarios[k].Charts, htmlChart{Chart: c, SVG: template.HTML(svg)})
			for _, ch := range s.Changes {
				changes = append(changes, changeRow{Group: g.ID, Run: ch.Run + 1, Scenario: s.Scenario, Metric: s.Metric.Label() + " (" + s.Metric.Unit() + ")",
					File: filepath.Base(ch.File), Started: stamp(ch.Started), Before: num(ch.MeanBefore), After: num(ch.MeanAfter),
					Change: fmt.Sprintf("%+.1f %%", ch.Percent), Interval: interval(ch), PValue: fmt.Sprintf("%.2g", ch.PValue), Worse: ch.Worse})
			}
		}
		groups = append(groups, hg)
	}
	return htmlTemplate.Execute(w, struct {
		Runs, Window  int
		PValue        float64
		FollowVersion bool
		Method        string
		Changes       []changeRow
		Skipped       []string
		Groups        []htmlGroup
	}{h.Runs(), h.Options.Window, h.Options.PValue, h.FollowVersion, Method, changes, h.Skipped, groups})
}

// Chart draws one series over the group's runs (X: the run's number in
// the group, oldest 1): its values, the mean of each segment between
// change points as a dashed step line, and each change point's first run
// after it as a large dot, red when worse, green when better.
func (g *Group) Chart(s Series, id string) report.Chart {
	c := report.Chart{ID: id, Title: s.Metric.Label(), Kind: report.Rate,
		XLabel: fmt.Sprintf("run of group %d (oldest 1)", g.ID), YLabel: s.Metric.Unit()}
	values := report.Series{Name: "value", Colour: 0}
	for _, p := range s.Points {
		x := float64(p.Run + 1)
		values.Points = append(values.Points, report.Point{X: x, Y: p.Value, Lo: p.Value, Hi: p.Value})
	}
	c.Series = append(c.Series, values, g.means(s))
	for _, ch := range s.Changes {
		col := 2
		if ch.Worse {
			col = 1
		}
		v := s.Points[ch.Index].Value
		c.Series = append(c.Series, report.Series{Name: fmt.Sprintf("change at run %d: %+.1f %%", ch.Run+1, ch.Percent), Colour: col,
			Points: []report.Point{{X: float64(ch.Run + 1), Y: v, Lo: v, Hi: v}}})
	}
	return c
}

// means is the line of the segments' means, each drawn from its first
// run to its last.
func (g *Group) means(s Series) report.Series {
	out := report.Series{Name: "mean between change points", Colour: 7, Dashed: true}
	bounds := []int{0}
	for _, ch := range s.Changes {
		bounds = append(bounds, ch.Index)
	}
	bounds = append(bounds, len(s.Points))
	xs := s.values()
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		m := mean(xs[lo:hi])
		if slices.Min(xs[lo:hi]) == slices.Max(xs[lo:hi]) {
			m = xs[lo] // not a rounding error away, which the axis would magnify
		}
		for _, x := range []float64{float64(s.Points[lo].Run + 1), float64(s.Points[hi-1].Run + 1)} {
			out.Points = append(out.Points, report.Point{X: x, Y: m, Lo: m, Hi: m})
		}
	}
	return out
}
