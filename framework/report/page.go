package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
)

// Options choose what a report shows beyond the results.
type Options struct {
	// Prices price the mesh; nil leaves the cost section out.
	Prices *Prices
	// SpectrumC is the concurrency whose latency spectrum is drawn; 0 or
	// one the run lacks picks the highest measured.
	SpectrumC int
}

// page is everything a rendered report shows, HTML and Markdown alike.
type page struct {
	Title    string
	Runs     []run
	Multi    bool
	Prices   *Prices
	Side     []sideRow
	Differs  []diffRow // what is not the same between the runs
	Headers  []string  // run labels, for the side-by-side columns
	Formula  []string
	Subtitle string
}

func newPage(ins []Input, o Options) page {
	p := page{Multi: len(ins) > 1, Prices: o.Prices}
	for _, in := range ins {
		r := newRun(in, o.Prices)
		p.Runs = append(p.Runs, r)
		p.Headers = append(p.Headers, r.Label)
	}
	// Two runs of the same mesh and version are told apart by file.
	for i := range p.Runs {
		for j := range p.Runs {
			if i != j && p.Runs[i].Label == p.Runs[j].Input.Name() {
				p.Runs[i].Label = p.Runs[i].Label + " (" + p.Runs[i].Base() + ")"
				p.Headers[i] = p.Runs[i].Label
				break
			}
		}
	}
	first := p.Runs[0].Results
	p.Title = fmt.Sprintf("meshbench report: %s, %s", first.Environment.Target, p.Runs[0].Label)
	p.Subtitle = fmt.Sprintf("run started %s, %d runs", first.Started.UTC().Format("2006-01-02 15:04:05 UTC"), len(first.Records))
	if p.Multi {
		p.Title = "meshbench comparison: " + strings.Join(p.Headers, " vs ")
		p.Subtitle = fmt.Sprintf("%d results files; the first is the reference", len(ins))
		p.Side = sideBySide(p.Runs)
		p.Differs = differences(p.Runs)
	}
	if o.Prices != nil {
		p.Formula = formula(o.Prices)
	}
	return p
}

func formula(p *Prices) []string {
	return []string{
		"vCPU-hours per 1M requests = mesh cores / achieved req/s × 1,000,000 / 3600",
		fmt.Sprintf("CPU cost per 1M requests = vCPU-hours per 1M × %g %s per vCPU-hour", p.VCPUHour, p.Currency),
		fmt.Sprintf("memory cost per 1M requests = mesh GiB × %g %s per GiB-hour × 1,000,000 / (achieved req/s × 3600)", p.GiBHour, p.Currency),
		fmt.Sprintf("monthly cost at R req/s = mesh cores / achieved req/s × R × %g h × %g + mesh GiB × %g h × %g", p.HoursPerMonth, p.VCPUHour, p.HoursPerMonth, p.GiBHour),
		fmt.Sprintf("average R = %s req/s, peak R = %s req/s (prices: %s)", thousands(p.AverageRPS), thousands(p.PeakRPS), p.File),
	}
}

// Verdict is the run's gate, as one word and its lines.
func (r run) Verdict() (string, []string) {
	res := r.Results
	invalid := 0
	for _, c := range r.Comparisons {
		invalid += c.Baseline.Invalid + c.Meshed.Invalid
	}
	switch {
	case len(res.Breaches) > 0:
		return "FAIL", res.Breaches
	case invalid > 0:
		return "INVALID", []string{fmt.Sprintf("%d invalid run(s): the limits prove nothing on them; see the reasons below", invalid)}
	case res.Thresholds == "":
		return "NOT GATED", []string{"thresholds were off (-thresholds=none)"}
	case len(res.Undecided) > 0:
		return "UNDECIDED", append([]string{fmt.Sprintf("no limit of %s was broken, but %d comparison(s) are undecided: their intervals hold the limit, or, not judged, their figures were not valid; more repeats (-count) decide them", res.Thresholds, len(res.Undecided))}, res.Undecided...)
	}
	return "PASS", []string{"every limit of " + res.Thresholds + " held"}
}

// sideRow is one figure of one scenario across runs.
type sideRow struct {
	Scenario string
	Metric   string
	Cells    []sideCell
}

type sideCell struct {
	Text  string
	Noise bool // the interval overlaps the reference's: within noise
	Ref   bool // this is the reference column
}

// sideMetrics are the figures of the side-by-side table.
var sideMetrics = []struct {
	name string
	prec int
	get  func(Comparison) stats.Summary
	cpu  bool // a CPU figure of the meshed arm, marked as its CPUMark
}{
	{"Δ p50 ms", 3, func(c Comparison) stats.Summary { return c.P50Delta }, false},
	{"Δ p99 ms", 3, func(c Comparison) stats.Summary { return c.P99Delta }, false},
	{"Δ p99.9 ms", 3, func(c Comparison) stats.Summary { return c.P999Delta }, false},
	{"throughput loss %", 1, func(c Comparison) stats.Summary { return c.QPSLossPct }, false},
	{"mesh cores", 3, func(c Comparison) stats.Summary { return c.Meshed.MeshCores }, true},
	{"mesh cores per 1k req/s", 3, func(c Comparison) stats.Summary { return c.Meshed.MeshCoresPer1kRPS }, true},
}

// sideBySide lines the runs up scenario by scenario (Comparison.Scenario),
// the first run as the reference; a cell whose interval overlaps the
// reference's is marked within noise.
func sideBySide(runs []run) []sideRow {
	var keys []string
	byKey := make([]map[string]Comparison, len(runs))
	costs := make([]map[string]Cost, len(runs))
	for i, r := range runs {
		byKey[i], costs[i] = map[string]Comparison{}, map[string]Cost{}
		for _, c := range r.Comparisons {
			byKey[i][c.Scenario()] = c
			if !slices.Contains(keys, c.Scenario()) {
				keys = append(keys, c.Scenario())
			}
		}
		for _, k := range r.Costs {
			costs[i][k.Scenario] = k
		}
	}
	var rows []sideRow
	for _, k := range keys {
		for _, m := range sideMetrics {
			vals := make([]stats.Summary, len(runs))
			marks := make([]string, len(runs))
			for i := range runs {
				if c, ok := byKey[i][k]; ok {
					vals[i] = m.get(c)
					if m.cpu {
						marks[i] = cpuMark(c.Meshed)
					}
				}
			}
			row := sideRow{Scenario: k, Metric: m.name, Cells: cells(vals, m.prec)}
			for i := range row.Cells {
				row.Cells[i].Text = marked(row.Cells[i].Text, marks[i])
			}
			rows = append(rows, row)
		}
		if runs[0].Costs != nil {
			vals := make([]stats.Summary, len(runs))
			for i := range runs {
				vals[i] = costs[i][k].Per1M
			}
			rows = append(rows, sideRow{Scenario: k, Metric: "cost per 1M requests", Cells: cells(vals, 6)})
		}
	}
	return rows
}

func cells(vals []stats.Summary, prec int) []sideCell {
	out := make([]sideCell, len(vals))
	for i, v := range vals {
		out[i] = sideCell{Text: span(v, prec), Ref: i == 0}
		if i > 0 && v.N > 0 && vals[0].N > 0 {
			out[i].Noise = v.Lo <= vals[0].Hi && vals[0].Lo <= v.Hi
		}
	}
	return out
}

// armRow is one arm of one scenario in the resources table.
type armRow struct {
	Scenario, Arm                       string
	CPU, Per1k, RSS                     map[measure.Role]string
	MeshCores, MeshPer1k, MeshRSS, Node string
	Ratio, PodRatio                     string
}

func (r run) resourceRows() ([]measure.Role, []armRow) {
	roles := roles(r.Comparisons)
	var rows []armRow
	for _, c := range r.Comparisons {
		for _, a := range arms {
			s := a.Stats(c)
			m := cpuMark(s)
			row := armRow{Scenario: c.Scenario(), Arm: string(a.Name), CPU: map[measure.Role]string{}, Per1k: map[measure.Role]string{}, RSS: map[measure.Role]string{},
				MeshCores: marked(span(s.MeshCores, 3), m), MeshPer1k: marked(span(s.MeshCoresPer1kRPS, 3), m), MeshRSS: num(s.MeshRSSMiB, 0),
				Node: marked(num(s.NodeUtil, 0), m), Ratio: "-", PodRatio: "-"}
			for _, role := range roles {
				row.CPU[role], row.Per1k[role] = marked(role2(s.CPU, role, 0), m), marked(role2(s.CPUPer1k, role, 1), m)
				row.RSS[role] = "-"
				if l, ok := s.RSS[role]; ok {
					row.RSS[role] = fmt.Sprintf("%.0f → %.0f", s.IdleRSS[role].Median, l.Median)
				}
			}
			if a.Name == "meshed" {
				row.Ratio, row.PodRatio = marked(ratio(c.ProxyAppRatio), m), marked(ratio(c.PodSidecarAppRatio), m)
			}
			rows = append(rows, row)
		}
	}
	return roles, rows
}

// CPULegend is the legend of the run's marked CPU figures (CPULegend),
// or "".
func (r run) CPULegend() string { return CPULegend(r.Comparisons) }

func role2(m map[measure.Role]stats.Summary, r measure.Role, prec int) string {
	if s, ok := m[r]; ok {
		return span(s, prec)
	}
	return "-"
}

// delta prints a paired delta with its interval, and ≈ when the interval
// holds 0: the arms do not differ beyond the noise of the repeats.
func delta(s stats.Summary, prec int) string {
	if s.N > 1 && s.Lo <= 0 && s.Hi >= 0 {
		return span(s, prec) + " ≈"
	}
	return span(s, prec)
}

func ratio(s stats.Summary) string {
	if s.N == 0 {
		return "-"
	}
	return span(s, 2) + "×"
}

// envRows are the environment as label/value pairs, settings included.
func envRows(res *Results) [][2]string {
	e := res.Environment
	rows := [][2]string{
		{"target", e.Target}, {"mesh", strings.TrimSpace(e.Mesh.Name + " " + e.Mesh.Version)},
		{"proxy worker threads", threads(e.Mesh.Threads)}, {"loadgen", e.Loadgen},
		{"nodes", fmt.Sprint(e.Nodes)}, {"cores", fmt.Sprint(e.Cores)}, {"memory", fmt.Sprintf("%d MiB", e.MemoryMiB)},
		{"CPU", e.CPUModel}, {"kernel", e.Kernel}, {"OS", e.OSImage}, {"Kubernetes", e.Kubernetes},
		{"container runtime", e.Runtime}, {"Go", e.GoVersion},
	}
	if e.MTU > 0 {
		rows = append(rows, [2]string{"MTU", fmt.Sprint(e.MTU)})
	}
	if e.CPUCounters != "" {
		rows = append(rows, [2]string{"CPU counters", e.CPUCounters})
	}
	if e.Baseline != "" {
		rows = append(rows, [2]string{"baseline arm", e.Baseline})
	}
	for _, k := range slices.Sorted(maps.Keys(e.Mesh.Config)) {
		if !strings.HasPrefix(k, "helm.") { // Helm values are long; they stay in the JSON
			rows = append(rows, [2]string{"mesh config " + k, e.Mesh.Config[k]})
		}
	}
	rows = append(rows, settingsRows(res.Settings)...)
	rows = append(rows, [2]string{"started", res.Started.UTC().Format("2006-01-02 15:04:05 UTC")},
		[2]string{"finished", res.Finished.UTC().Format("2006-01-02 15:04:05 UTC")},
		[2]string{"command", strings.Join(res.Command, " ")})
	out := rows[:0]
	for _, r := range rows {
		if r[1] != "" {
			out = append(out, r)
		}
	}
	return out
}

func threads(n int) string {
	if n == 0 {
		return "proxy default"
	}
	return fmt.Sprint(n)
}

// settingsRows flattens the settings' top-level keys; they are whatever
// the harness recorded, so they are read as plain JSON.
func settingsRows(s any) [][2]string {
	data, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, _ := json.Marshal(m[k])
		text := strings.Trim(string(v), `"`)
		// The harness's durations (time.Duration) are stored in nanoseconds.
		if ns, ok := m[k].(float64); ok && (k == "duration" || k == "warmup" || strings.HasSuffix(k, "Timeout")) {
			text = time.Duration(ns).String()
		}
		out = append(out, [2]string{"setting " + k, text})
	}
	return out
}

// thousands prints a rate with thousands separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Round(v))
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func money(v float64, cur string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%s %s", thousands(v), cur)
	case v >= 1:
		return fmt.Sprintf("%.2f %s", v, cur)
	}
	return fmt.Sprintf("%.6f %s", v, cur)
}

// diffRow is one environment row or setting whose value is not the same in
// every run of a comparison.
type diffRow struct {
	Name   string
	Values []string
}

// notCompared are the rows that differ between any two runs by nature.
var notCompared = []string{"started", "finished", "command", "setting resultsDir"}

// differences lists the environment rows and settings that differ between
// the runs, so a reader can tell whether they are comparable: the same
// machine, load and versions of everything but what is compared.
func differences(runs []run) []diffRow {
	var names []string
	vals := make([]map[string]string, len(runs))
	for i, r := range runs {
		vals[i] = map[string]string{}
		for _, e := range envRows(r.Results) {
			vals[i][e[0]] = e[1]
			if !slices.Contains(names, e[0]) && !slices.Contains(notCompared, e[0]) {
				names = append(names, e[0])
			}
		}
	}
	var out []diffRow
	for _, n := range names {
		d := diffRow{Name: n}
		same := true
		for i := range runs {
			d.Values = append(d.Values, dash(vals[i][n]))
			same = same && vals[i][n] == vals[0][n]
		}
		if !same {
			out = append(out, d)
		}
	}
	return out
}
