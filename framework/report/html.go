package report

import (
	_ "embed" // for reportTemplate
	"fmt"
	"html/template"
	"io"

	"github.com/meshbench/meshbench/framework/measure"
)

//go:embed report.html.tmpl
var reportTemplate string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"span":    span,
	"num":     num,
	"money":   money,
	"secured": secured,
	"dash":    dash,
	"cell":    func(m map[measure.Role]string, r measure.Role) string { return m[r] },
}).Parse(reportTemplate))

// htmlChart is a chart with its drawing and the id of its data block.
type htmlChart struct {
	Chart
	DataID string
	SVG    template.HTML
}

// htmlRun is a run with its charts drawn.
type htmlRun struct {
	run
	Index        int
	Charts       []htmlChart
	VerdictWord  string
	VerdictLines []string
	Roles        []measure.Role
	Rows         []armRow
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
	var runs []htmlRun
	for i, r := range p.Runs {
		hr := htmlRun{run: r, Index: i, Env: envRows(r.Results)}
		hr.VerdictWord, hr.VerdictLines = r.Verdict()
		hr.Roles, hr.Rows = r.resourceRows()
		for _, c := range r.charts(o.SpectrumC) {
			svg, err := c.SVG()
			if err != nil {
				return fmt.Errorf("html report: %s: %w", r.File, err)
			}
			id := fmt.Sprintf("data-r%d-%s", i, c.ID)
			hr.Charts = append(hr.Charts, htmlChart{Chart: c, DataID: id, SVG: template.HTML(svg)}) // #nosec: drawn by gonum from numbers
		}
		runs = append(runs, hr)
	}
	return htmlTemplate.Execute(w, struct {
		page
		HRuns []htmlRun
	}{p, runs})
}
