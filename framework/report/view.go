package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/target"
)

// Input is one results file for a report.
type Input struct {
	// File is where the results came from, as given; it names the run.
	File    string
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

// RunProblem is an invalid run or a warning, for the highlighted table.
type RunProblem struct {
	Run     string // the record's sub-benchmark name and repeat
	Invalid bool   // false for a warning
	Reason  string
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
		for _, why := range rec.Warnings {
			r.Problems = append(r.Problems, RunProblem{Run: name, Reason: why.Detail})
		}
	}
	return r
}

// paths lists the comparisons' paths in order of first appearance.
func paths(cs []Comparison) []target.Path {
	var out []target.Path
	for _, c := range cs {
		if !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}

func onPath(cs []Comparison, p target.Path) []Comparison {
	var out []Comparison
	for _, c := range cs {
		if c.Path == p {
			out = append(out, c)
		}
	}
	return out
}

// point is a summary as a chart point at x.
func point(x float64, s stats.Summary) Point {
	return Point{X: x, Y: s.Median, Lo: s.Lo, Hi: s.Hi}
}

// arm names an arm's statistics in a comparison.
type arm struct {
	Name  target.Arm
	Stats func(Comparison) ArmStats
}

var arms = []arm{
	{target.Baseline, func(c Comparison) ArmStats { return c.Baseline }},
	{target.Meshed, func(c Comparison) ArmStats { return c.Meshed }},
}

// latencyChart is p50, p99 and p99.9 against concurrency, per arm.
func latencyChart(id string, p target.Path, cs []Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("Latency vs concurrency, %s", p), Kind: Lines, XLabel: "concurrency (connections)", YLabel: "latency (ms)", LogY: true}
	quantiles := []struct {
		name string
		get  func(ArmStats) stats.Summary
	}{
		{"p50", func(a ArmStats) stats.Summary { return a.P50 }},
		{"p99", func(a ArmStats) stats.Summary { return a.P99 }},
		{"p99.9", func(a ArmStats) stats.Summary { return a.P999 }},
	}
	for _, a := range arms {
		for i, q := range quantiles {
			s := Series{Name: fmt.Sprintf("%s %s", a.Name, q.name), Colour: i, Dashed: a.Name == target.Baseline}
			for _, c := range cs {
				if st := a.Stats(c); st.Repeats > 0 {
					s.Points = append(s.Points, point(float64(c.Concurrency), q.get(st)))
				}
			}
			ch.Series = append(ch.Series, s)
		}
	}
	return ch
}

// throughputChart is achieved req/s against concurrency, per arm.
func throughputChart(id string, p target.Path, cs []Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("Throughput vs concurrency, %s", p), Kind: Lines, XLabel: "concurrency (connections)", YLabel: "achieved req/s"}
	for _, a := range arms {
		s := Series{Name: string(a.Name), Colour: -1}
		for _, c := range cs {
			if st := a.Stats(c); st.Repeats > 0 {
				s.Points = append(s.Points, point(float64(c.Concurrency), st.QPS))
			}
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

// lossChart is the paired throughput loss against concurrency.
func lossChart(id string, p target.Path, cs []Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("Throughput loss vs concurrency, %s", p), Kind: Lines, XLabel: "concurrency (connections)", YLabel: "throughput loss (% of baseline)"}
	s := Series{Name: "meshed vs baseline", Colour: 1}
	for _, c := range cs {
		if c.QPSLossPct.N > 0 {
			s.Points = append(s.Points, point(float64(c.Concurrency), c.QPSLossPct))
		}
	}
	ch.Series = append(ch.Series, s)
	return ch
}

// spectrumChart is the latency at each percentile of the merged histogram
// of every repeat, per arm, at one comparison's concurrency.
func spectrumChart(id string, c Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("Latency spectrum, %s at c=%d (all repeats merged)", c.Path, c.Concurrency), Kind: Spectrum, XLabel: "percentile", YLabel: "latency (ms)", LogY: true}
	for _, a := range arms {
		h := a.Stats(c).Merged
		if h == nil {
			continue
		}
		s := Series{Name: string(a.Name), Colour: -1}
		for _, q := range SpectrumPercentiles() {
			v := stats.Percentile(h, q) * 1e3
			s.Points = append(s.Points, Point{X: q, Y: v, Lo: v, Hi: v})
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

// cpuChart stacks the CPU of each role per concurrency and arm.
func cpuChart(id string, p target.Path, cs []Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("CPU per role, %s", p), Kind: Stacked, XLabel: "", YLabel: "CPU (millicores)"}
	for _, role := range roles(cs) {
		s := Series{Name: string(role)}
		i := 0
		for _, c := range cs {
			for _, a := range arms {
				st := a.Stats(c)
				v := st.CPU[role] // the zero Summary when the arm has no such role
				s.Points = append(s.Points, Point{X: float64(i), Y: v.Median, Lo: v.Lo, Hi: v.Hi, Label: fmt.Sprintf("c=%d %s", c.Concurrency, a.Name)})
				i++
			}
		}
		ch.Series = append(ch.Series, s)
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

// spectrumAt picks the comparison whose spectrum is drawn: concurrency c
// when the run has it, else the highest concurrency measured.
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

// charts are one run's charts, path by path.
func (r run) charts(spectrumC int) []Chart {
	var out []Chart
	for _, p := range paths(r.Comparisons) {
		cs := onPath(r.Comparisons, p)
		out = append(out, latencyChart("latency-"+string(p), p, cs), throughputChart("throughput-"+string(p), p, cs),
			lossChart("loss-"+string(p), p, cs))
		c, ok := spectrumAt(cs, spectrumC)
		if ok {
			out = append(out, spectrumChart("spectrum-"+string(p), c))
		}
		out = append(out, rateChart("rate-"+string(p), p, cs), cpuChart("cpu-"+string(p), p, cs), cpuPer1kChart("cpu1k-"+string(p), p, cs))
		if ok {
			out = append(out, rssChart("rss-"+string(p), c))
		}
	}
	return out
}

// compareCharts put the runs side by side, path by path: the meshed arm's
// p50 and p99, the throughput loss and the mesh cores per 1k req/s, one
// series per run, against concurrency.
func compareCharts(runs []run) []Chart {
	var ps []target.Path
	for _, r := range runs {
		for _, p := range paths(r.Comparisons) {
			if !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
	}
	figures := []struct {
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
	var out []Chart
	for _, p := range ps {
		for _, f := range figures {
			ch := Chart{ID: fmt.Sprintf("compare-%s-%s", f.id, p), Title: fmt.Sprintf("%s, %s", f.title, p), Kind: Lines,
				XLabel: "concurrency (connections)", YLabel: f.y, LogY: f.logY}
			for i, r := range runs {
				for j, get := range f.get {
					s := Series{Name: r.Label + " " + f.names[j], Colour: i, Dashed: j > 0}
					for _, c := range onPath(r.Comparisons, p) {
						if v := get(c); v.N > 0 {
							s.Points = append(s.Points, point(float64(c.Concurrency), v))
						}
					}
					ch.Series = append(ch.Series, s)
				}
			}
			out = append(out, ch)
		}
	}
	return out
}

// KneeFactor defines the knee of a latency-against-rate curve: the highest
// achieved rate whose p99 is still at most KneeFactor times the p99 at the
// lowest rate. Past it, more load buys queueing, not throughput.
const KneeFactor = 2

// rateChart is p50 and p99 against the achieved rate, per arm, with each
// arm's knee as a one-point series.
func rateChart(id string, p target.Path, cs []Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("Latency vs achieved rate, %s (knee: last p99 ≤ %d× the lowest-rate p99)", p, KneeFactor),
		Kind: Rate, XLabel: "achieved req/s", YLabel: "latency (ms)", LogY: true}
	for i, a := range arms {
		var p50, p99 []Point
		for _, c := range cs {
			if st := a.Stats(c); st.Repeats > 0 {
				p50 = append(p50, Point{X: st.QPS.Median, Y: st.P50.Median, Lo: st.P50.Lo, Hi: st.P50.Hi})
				p99 = append(p99, Point{X: st.QPS.Median, Y: st.P99.Median, Lo: st.P99.Lo, Hi: st.P99.Hi})
			}
		}
		byX := func(a, b Point) int { return cmp.Compare(a.X, b.X) }
		slices.SortStableFunc(p50, byX)
		slices.SortStableFunc(p99, byX)
		ch.Series = append(ch.Series,
			Series{Name: fmt.Sprintf("%s p50", a.Name), Points: p50, Colour: i, Dashed: true},
			Series{Name: fmt.Sprintf("%s p99", a.Name), Points: p99, Colour: i})
		if k, ok := knee(p99); ok {
			ch.Series = append(ch.Series, Series{Name: fmt.Sprintf("%s knee", a.Name), Points: []Point{k}, Colour: i + 2})
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

// cpuPer1kChart stacks each role's CPU per 1000 requests per concurrency
// and arm: what a request costs, role by role.
func cpuPer1kChart(id string, p target.Path, cs []Comparison) Chart {
	ch := cpuChart(id, p, cs)
	ch.Title, ch.YLabel = fmt.Sprintf("CPU per 1k requests per role, %s", p), "CPU-ms per 1000 requests"
	for i := range ch.Series {
		role := measure.Role(ch.Series[i].Name)
		j := 0
		for _, c := range cs {
			for _, a := range arms {
				v := a.Stats(c).CPUPer1k[role]
				ch.Series[i].Points[j].Y, ch.Series[i].Points[j].Lo, ch.Series[i].Points[j].Hi = v.Median, v.Lo, v.Hi
				j++
			}
		}
	}
	return ch
}

// rssChart is each role's largest resident memory idle and under load, in
// the meshed arm at one comparison's concurrency.
func rssChart(id string, c Comparison) Chart {
	ch := Chart{ID: id, Title: fmt.Sprintf("RSS idle vs under load, %s meshed at c=%d", c.Path, c.Concurrency), Kind: Stacked, YLabel: "largest RSS of the role (MiB)"}
	s := Series{Name: "MiB"}
	for _, role := range roles([]Comparison{c}) {
		idle, load := c.Meshed.IdleRSS[role], c.Meshed.RSS[role]
		s.Points = append(s.Points,
			Point{X: float64(len(s.Points)), Y: idle.Median, Lo: idle.Lo, Hi: idle.Hi, Label: string(role) + " idle"},
			Point{X: float64(len(s.Points) + 1), Y: load.Median, Lo: load.Lo, Hi: load.Hi, Label: string(role) + " load"})
	}
	ch.Series = append(ch.Series, s)
	return ch
}
