package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Input is one results file for a report.
type Input struct {
	// File is where the results came from, as given; it names the run.
	File string
	// Results is the file's content.
	Results *Results
}

// Name is how the run is called in a comparison: the mesh and version,
// and the file when two runs share them.
func (in Input) Name() string {
	m := in.Results.Environment.Mesh
	return strings.TrimSpace(m.Name + " " + m.Version)
}

// Base is the file's name without directory and extension.
func (in Input) Base() string {
	return strings.TrimSuffix(filepath.Base(in.File), filepath.Ext(in.File))
}

// run is one input with the figures a report shows, all computed from its
// records.
type run struct {
	Input
	Label string
	// Comparisons are recomputed from the records, so every figure of the
	// current code is there even for a file written by an older one.
	Comparisons []Comparison
	Proofs      []Proof
	Costs       []Cost
	Problems    []RunProblem
}

// RunProblem is an invalid run, a run whose CPU figures alone are not
// valid, or a warning, for the highlighted table.
type RunProblem struct {
	Run     string // the record's sub-benchmark name and repeat
	Invalid bool   // false for a warning or a CPU reason
	CPU     bool   // a reason not to trust the run's CPU figures alone
	// Reason is the problem, one line.
	Reason string
}

// Kind is how the table names the problem: INVALID, CPU not valid, or
// warning.
func (p RunProblem) Kind() string {
	switch {
	case p.Invalid:
		return "INVALID"
	case p.CPU:
		return "CPU not valid"
	}
	return "warning"
}

func newRun(in Input, p *Prices) run {
	r := run{Input: in, Label: in.Name(), Comparisons: Compare(in.Results.Records), Proofs: Proofs(in.Results.Records)}
	if r.Label == "" {
		r.Label = in.Base()
	}
	if p != nil {
		for _, c := range r.Comparisons {
			if cost, ok := p.Cost(c); ok {
				r.Costs = append(r.Costs, cost)
			}
		}
	}
	for _, c := range r.Comparisons {
		for _, why := range c.Problems {
			r.Problems = append(r.Problems, RunProblem{Run: c.Scenario(), Invalid: true, Reason: why})
		}
	}
	for _, rec := range in.Results.Records {
		name := fmt.Sprintf("%s repeat %d", rec.Name(), rec.Repeat+1)
		for _, why := range rec.Invalid {
			r.Problems = append(r.Problems, RunProblem{Run: name, Invalid: true, Reason: why.Detail})
		}
		for _, why := range rec.CPUInvalid {
			r.Problems = append(r.Problems, RunProblem{Run: name, CPU: true, Reason: why.Detail})
		}
		for _, why := range rec.Warnings {
			r.Problems = append(r.Problems, RunProblem{Run: name, Reason: why.Detail})
		}
	}
	return r
}

// arm names an arm's statistics in a comparison.
type arm struct {
	Name  testbed.Arm
	Stats func(Comparison) ArmStats
}

var arms = []arm{
	{testbed.Baseline, func(c Comparison) ArmStats { return c.Baseline }},
	{testbed.Meshed, func(c Comparison) ArmStats { return c.Meshed }},
}

// quantiles are the latencies a latency chart draws.
var quantiles = []struct {
	name string
	get  func(ArmStats) stats.Summary
}{
	{"p50", func(a ArmStats) stats.Summary { return a.P50 }},
	{"p99", func(a ArmStats) stats.Summary { return a.P99 }},
	{"p99.9", func(a ArmStats) stats.Summary { return a.P999 }},
}

// latencyChart is p50, p99 and p99.9 against the sweep's axis, per arm.
func latencyChart(s sweep) Chart {
	ch := s.chart("latency", "Latency vs "+axisTitle(s.Axis), "latency (ms)")
	ch.LogY = true
	for _, a := range arms {
		for i, q := range quantiles {
			ch.Series = append(ch.Series, s.series(fmt.Sprintf("%s %s", a.Name, q.name), i, a.Name == testbed.Baseline,
				func(c Comparison) stats.Summary { return q.get(a.Stats(c)) }))
		}
	}
	return ch
}

// throughputChart is the achieved req/s against the sweep's axis, per arm.
func throughputChart(s sweep) Chart {
	ch := s.chart("throughput", "Throughput vs "+axisTitle(s.Axis), "achieved req/s")
	for _, a := range arms {
		ch.Series = append(ch.Series, s.series(string(a.Name), -1, false, func(c Comparison) stats.Summary { return a.Stats(c).QPS }))
	}
	return ch
}

// lossChart is the paired throughput loss against the sweep's axis.
func lossChart(s sweep) Chart {
	ch := s.chart("loss", "Throughput loss vs "+axisTitle(s.Axis), "throughput loss (% of baseline)")
	ch.Series = append(ch.Series, s.series("meshed vs baseline", 1, false, func(c Comparison) stats.Summary { return c.QPSLossPct }))
	return ch
}

// spectrumChart is the latency at each percentile of the merged histogram
// of every repeat, per arm, at one point of a sweep.
func spectrumChart(s sweep, c Comparison) Chart {
	ch := Chart{ID: "spectrum-" + s.slug(), Title: fmt.Sprintf("Latency spectrum, %s at c=%d (all repeats merged)", c.Path, c.Concurrency),
		Kind: Spectrum, XLabel: "percentile", YLabel: "latency (ms)", LogY: true, Scenario: s.Scenario, Axis: s.Axis}
	for _, a := range arms {
		h := a.Stats(c).Merged
		if h == nil {
			continue
		}
		ser := Series{Name: string(a.Name), Scenario: s.Scenario, Colour: -1}
		for _, q := range SpectrumPercentiles() {
			v := stats.Percentile(h, q) * 1e3
			ser.Points = append(ser.Points, Point{X: q, Y: v, Lo: v, Hi: v, Run: c.Scenario()})
		}
		ch.Series = append(ch.Series, ser)
	}
	return ch
}

// measuredArms are the arms that ran at some point of the sweep.
func measuredArms(s sweep) []arm {
	var out []arm
	for _, a := range arms {
		for _, c := range s.Points {
			if a.Stats(c).Repeats > 0 {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// cpuChart stacks each role's figure (get: millicores, or CPU-ms per 1k
// requests) per point of the sweep and arm: one bar each.
func cpuChart(id, title, yLabel string, s sweep, get func(ArmStats) map[measure.Role]stats.Summary) Chart {
	ch := s.chart(id, title, yLabel)
	ch.Kind, ch.XLabel = Stacked, ""
	for _, role := range roles(s.Points) {
		ser := Series{Name: string(role), Scenario: s.Scenario}
		for i, c := range s.Points {
			for _, a := range measuredArms(s) {
				v := get(a.Stats(c))[role] // the zero Summary when the arm has no such role
				ser.Points = append(ser.Points, Point{X: float64(len(ser.Points)), Y: v.Median, Lo: v.Lo, Hi: v.Hi,
					Label: fmt.Sprintf("%s %s", s.tick(i), a.Name), Run: c.Scenario()})
			}
		}
		ch.Series = append(ch.Series, ser)
	}
	return ch
}

// roles lists every role that used CPU in any arm, in measure's order.
func roles(cs []Comparison) []measure.Role {
	var out []measure.Role
	for _, c := range cs {
		for _, a := range arms {
			for r := range a.Stats(c).CPU {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b measure.Role) int { return cmp.Compare(roleRank(a), roleRank(b)) })
	return out
}

func roleRank(r measure.Role) string {
	for i, k := range []measure.Role{measure.RoleLoadgen, measure.RoleApp, measure.RoleSidecar, measure.RoleNodeProxy, "waypoint", measure.RoleControlPlane, "other"} {
		if r == k {
			return fmt.Sprint(i)
		}
	}
	return "9" + string(r)
}

// spectrumAt picks the point whose spectrum and memory are drawn:
// concurrency c when the sweep has it, else the highest concurrency.
func spectrumAt(cs []Comparison, c int) (Comparison, bool) {
	var best Comparison
	found := false
	for _, x := range cs {
		if x.Concurrency == c {
			return x, true
		}
		if !found || x.Concurrency > best.Concurrency {
			best, found = x, true
		}
	}
	return best, found
}

// chartGroup is one scenario's charts, under its name.
type chartGroup struct {
	Scenario string
	Path     testbed.Path
	Axis     string
	Charts   []Chart
}

// charts are one run's charts, one group per sweep: latency, throughput,
// loss and CPU per request against the sweep's own axis; a concurrency
// sweep adds latency against the achieved rate with its knee, the latency
// spectrum, CPU per role and memory, and a rate ladder its knee. The cost
// of the extra hop (two-hop minus one-hop) closes, when both were swept.
func (r run) charts(spectrumC int) []chartGroup {
	var out []chartGroup
	for _, s := range sweeps(r.Comparisons) {
		g := chartGroup{Scenario: s.Scenario, Path: s.Path, Axis: s.Axis}
		g.Charts = append(g.Charts, latencyChart(s), throughputChart(s), lossChart(s))
		if s.Axis == labels.Concurrency || s.Axis == labels.QPS {
			g.Charts = append(g.Charts, rateChart(s))
		}
		c, ok := spectrumAt(s.Points, spectrumC)
		if s.Axis == labels.Concurrency && ok {
			g.Charts = append(g.Charts, spectrumChart(s, c))
		}
		if s.Axis == labels.Concurrency {
			g.Charts = append(g.Charts, cpuChart("cpu", "CPU per role", "CPU (millicores)", s, func(a ArmStats) map[measure.Role]stats.Summary { return a.CPU }))
		}
		g.Charts = append(g.Charts, cpuChart("cpu1k", "CPU per 1k requests per role", "CPU-ms per 1000 requests", s,
			func(a ArmStats) map[measure.Role]stats.Summary { return a.CPUPer1k }))
		if s.Axis == labels.Concurrency && ok {
			g.Charts = append(g.Charts, rssChart(s, c))
		}
		if g.Charts = drawable(g.Charts); len(g.Charts) > 0 {
			out = append(out, g)
		}
	}
	if hop := extraHopCharts(r.Comparisons); len(hop) > 0 {
		out = append(out, chartGroup{Scenario: hop[0].Scenario, Axis: labels.Concurrency, Charts: hop})
	}
	return out
}

// drawable drops the charts without a single point (a loss chart of a
// scenario that ran one arm only).
func drawable(cs []Chart) []Chart {
	var out []Chart
	for _, c := range cs {
		for _, s := range c.Series {
			if len(s.Points) > 0 {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// extraHopCharts draw the cost of one more meshed hop against
// concurrency: each concurrency sweep on two hops minus its one-hop twin
// (ExtraHops), one chart per pair of sweeps.
func extraHopCharts(cs []Comparison) []Chart {
	var out []Chart
	index := map[string]int{}
	for _, e := range ExtraHops(cs) {
		if e.Key != labels.Concurrency+"="+strconv.Itoa(e.TwoHop.Concurrency) {
			continue // a twin at some other point than a plain concurrency sweep
		}
		name := e.TwoHop.Labels.Without(labels.Concurrency).String() + " − " + e.OneHop.Labels.Without(labels.Concurrency).String()
		i, ok := index[name]
		if !ok {
			i, index[name] = len(out), len(out)
			out = append(out, Chart{ID: "extrahop-" + strings.Map(slugRune, name), Title: "Cost of one more meshed hop (two-hop minus one-hop; differences of medians)",
				Kind: Lines, XLabel: axisTitle(labels.Concurrency), YLabel: "extra latency (ms)", Scenario: name, Axis: labels.Concurrency,
				Series: []Series{{Name: "extra hop Δ p50", Scenario: name, Colour: 0}, {Name: "extra hop Δ p99", Scenario: name, Colour: 1}}})
		}
		run := e.TwoHop.Scenario() + " − " + e.OneHop.Scenario()
		x, tick := float64(e.TwoHop.Concurrency), e.Key
		for j, y := range []float64{e.P50DeltaMs, e.P99DeltaMs} {
			out[i].Series[j].Points = append(out[i].Series[j].Points, Point{X: x, Y: y, Lo: y, Hi: y, Label: tick, Run: run})
		}
	}
	return out
}

// compareCharts put the runs side by side, concurrency sweep by
// concurrency sweep: the meshed arm's p50 and p99, the throughput loss and
// the mesh cores per 1k req/s, one series per run, against concurrency.
func compareCharts(runs []run) []Chart {
	var order []string
	bySweep := map[string]sweep{}
	perRun := make([]map[string]sweep, len(runs))
	for i, r := range runs {
		perRun[i] = map[string]sweep{}
		for _, s := range sweeps(r.Comparisons) {
			if s.Axis != labels.Concurrency {
				continue
			}
			key := s.slug()
			perRun[i][key] = s
			if _, ok := bySweep[key]; !ok {
				bySweep[key] = s
				order = append(order, key)
			}
		}
	}
	var out []Chart
	for _, key := range order {
		for _, f := range compareFigures {
			ch := bySweep[key].chart("compare-"+f.id, f.title, f.y)
			ch.LogY = f.logY
			for i, r := range runs {
				s, ok := perRun[i][key]
				for j, get := range f.get {
					ser := Series{Name: r.Label + " " + f.names[j], Scenario: ch.Scenario, Colour: i, Dashed: j > 0}
					if ok {
						ser = s.series(ser.Name, i, j > 0, get)
					}
					ch.Series = append(ch.Series, ser)
				}
			}
			out = append(out, ch)
		}
	}
	return out
}

// compareFigures are the figures compareCharts draws.
var compareFigures = []struct {
	id, title, y string
	logY         bool
	get          []func(Comparison) stats.Summary
	names        []string
}{
	{"latency", "Meshed latency per run", "latency (ms)", true,
		[]func(Comparison) stats.Summary{func(c Comparison) stats.Summary { return c.Meshed.P50 }, func(c Comparison) stats.Summary { return c.Meshed.P99 }},
		[]string{"p50", "p99"}},
	{"loss", "Throughput loss per run", "throughput loss (% of baseline)", false,
		[]func(Comparison) stats.Summary{func(c Comparison) stats.Summary { return c.QPSLossPct }}, []string{"loss"}},
	{"cores", "Mesh cores per 1k req/s per run", "cores per 1000 req/s", false,
		[]func(Comparison) stats.Summary{func(c Comparison) stats.Summary { return c.Meshed.MeshCoresPer1kRPS }}, []string{"cores"}},
}

// KneeFactor defines the knee of a latency-against-rate curve: the highest
// achieved rate whose p99 is still at most KneeFactor times the p99 at the
// lowest rate. Past it, more load buys queueing, not throughput.
const KneeFactor = 2

// rateChart is p50 and p99 against the achieved rate, per arm, with each
// arm's knee as a one-point series.
func rateChart(s sweep) Chart {
	ch := s.chart("rate", fmt.Sprintf("Latency vs achieved rate (knee: last p99 ≤ %d× the lowest-rate p99)", KneeFactor), "latency (ms)")
	ch.Kind, ch.XLabel, ch.LogY = Rate, "achieved req/s", true
	for i, a := range arms {
		var p50, p99 []Point
		for j, c := range s.Points {
			if st := a.Stats(c); st.Repeats > 0 {
				p50 = append(p50, Point{X: st.QPS.Median, Y: st.P50.Median, Lo: st.P50.Lo, Hi: st.P50.Hi, Label: s.tick(j), Run: c.Scenario()})
				p99 = append(p99, Point{X: st.QPS.Median, Y: st.P99.Median, Lo: st.P99.Lo, Hi: st.P99.Hi, Label: s.tick(j), Run: c.Scenario()})
			}
		}
		byX := func(a, b Point) int { return cmp.Compare(a.X, b.X) }
		slices.SortStableFunc(p50, byX)
		slices.SortStableFunc(p99, byX)
		ch.Series = append(ch.Series,
			Series{Name: fmt.Sprintf("%s p50", a.Name), Scenario: s.Scenario, Points: p50, Colour: i, Dashed: true},
			Series{Name: fmt.Sprintf("%s p99", a.Name), Scenario: s.Scenario, Points: p99, Colour: i})
		if k, ok := knee(p99); ok {
			ch.Series = append(ch.Series, Series{Name: fmt.Sprintf("%s knee", a.Name), Scenario: s.Scenario, Points: []Point{k}, Colour: i + 2})
		}
	}
	return ch
}

// knee returns the point of p99s sorted by rate where the curve bends:
// the highest rate whose p99 is at most KneeFactor × the lowest rate's.
func knee(p99 []Point) (Point, bool) {
	if len(p99) < 2 || p99[0].Y <= 0 {
		return Point{}, false
	}
	k := p99[0]
	for _, q := range p99[1:] {
		if q.Y <= KneeFactor*p99[0].Y && q.X > k.X {
			k = q
		}
	}
	return k, true
}

// rssChart is each role's largest resident memory idle and under load, in
// the meshed arm at one point of a sweep.
func rssChart(s sweep, c Comparison) Chart {
	ch := Chart{ID: "rss-" + s.slug(), Title: fmt.Sprintf("RSS idle vs under load, %s meshed at c=%d", c.Path, c.Concurrency), Kind: Stacked,
		YLabel: "largest RSS of the role (MiB)", Scenario: s.Scenario, Axis: s.Axis}
	ser := Series{Name: "MiB", Scenario: s.Scenario}
	for _, role := range roles([]Comparison{c}) {
		idle, load := c.Meshed.IdleRSS[role], c.Meshed.RSS[role]
		ser.Points = append(ser.Points,
			Point{X: float64(len(ser.Points)), Y: idle.Median, Lo: idle.Lo, Hi: idle.Hi, Label: string(role) + " idle", Run: c.Scenario()},
			Point{X: float64(len(ser.Points) + 1), Y: load.Median, Lo: load.Lo, Hi: load.Hi, Label: string(role) + " load", Run: c.Scenario()})
	}
	ch.Series = append(ch.Series, ser)
	return ch
}
