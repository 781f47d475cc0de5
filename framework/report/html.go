package report

import (
	_ "embed" // for reportTemplate
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
)

//go:embed report.html.tmpl
var reportTemplate string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"span":    span,
	"mean":    mean,
	"delta":   delta,
	"num":     num,
	"money":   money,
	"secured": secured,
	"dash":    dash,
	"cell":    func(m map[measure.Role]string, r measure.Role) string { return m[r] },
	"pct":     cpuprofile.Pct,
	"pp":      cpuprofile.PP,
}).Parse(reportTemplate))

// htmlChart is a chart with its drawing and the id of its data block.
type htmlChart struct {
	Chart
	DataID string
	SVG    template.HTML
}

// htmlGroup is one scenario's charts, drawn.
type htmlGroup struct {
	Scenario, Axis string
	Path           testbed.Path
	Charts         []htmlChart
}

// htmlRun is a run with its charts drawn.
type htmlRun struct {
	run
	Index        int
	Groups       []htmlGroup
	VerdictWord  string
	VerdictLines []string
	Roles        []measure.Role
	Rows         []armRow
	Procs        []procRow
	Nodes        []nodeRow
	Env          [][2]string
}

// HTML writes the report as one self-contained HTML page: the charts are
// inline SVG drawn from the results, each with its data in a
// <script type="application/json" id="data-…"> block, and nothing is
// loaded from anywhere else.
func HTML(w io.Writer, ins []Input, o Options) error {
	if len(ins) == 0 {
		return fmt.Errorf("html report: no results")
	}
	p := newPage(ins, o)
	var compare []htmlChart
	if p.Multi {
		for _, c := range compareCharts(p.Runs) {
			hc, err := drawn(c, "data-cmp-"+c.ID)
			if err != nil {
				return fmt.Errorf("html report: %w", err)
			}
			compare = append(compare, hc)
		}
	}
	var runs []htmlRun
	for i, r := range p.Runs {
		hr := htmlRun{run: r, Index: i, Env: envRows(r.Results)}
		hr.VerdictWord, hr.VerdictLines = r.Verdict()
		hr.Roles, hr.Rows = r.resourceRows()
		hr.Procs, hr.Nodes = r.processRows()
		for _, g := range r.charts(o.SpectrumC) {
			hg := htmlGroup{Scenario: g.Scenario, Axis: g.Axis, Path: g.Path}
			for _, c := range g.Charts {
				hc, err := drawn(c, fmt.Sprintf("data-r%d-%s", i, c.ID))
				if err != nil {
					return fmt.Errorf("html report: %s: %w", r.File, err)
				}
				hg.Charts = append(hg.Charts, hc)
			}
			hr.Groups = append(hr.Groups, hg)
		}
		runs = append(runs, hr)
	}
	return htmlTemplate.Execute(w, struct {
		page
		HRuns   []htmlRun
		Compare []htmlChart
	}{p, runs, compare})
}

// drawn draws a chart, its data to be embedded under dataID.
func drawn(c Chart, dataID string) (htmlChart, error) {
	svg, err := c.SVG()
	if err != nil {
		return htmlChart{}, err
	}
	// The root element carries the chart's scenario and axis, escaped,
	// for a reader or a test to find the chart of a sweep.
	svg = strings.Replace(svg, "<svg", fmt.Sprintf(`<svg data-scenario="%s" data-axis="%s"`,
		template.HTMLEscapeString(c.Scenario), template.HTMLEscapeString(c.Axis)), 1)
	// The SVG is gonum's drawing of numbers and labels it escapes itself.
	return htmlChart{Chart: c, DataID: dataID, SVG: template.HTML(svg)}, nil
}
