// Package report turns a sweep's runs into what people read and what tools
// re-read: the meshed-versus-baseline comparison per path and concurrency,
// the summary table in the shape the seed articles use, and a JSON results
// file that carries every raw histogram and setting, so any figure can be
// recomputed or merged with another run later.
package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
	"github.com/meshbench/meshbench/framework/verdict"
)

// Record is one measured run with its place in the sweep.
type Record struct {
	// Benchmark is the top-level benchmark, e.g. "BenchmarkOneHop".
	Benchmark string `json:"benchmark"`
	// Labels name the run's place in the sweep, in sub-benchmark order and
	// without the arm: benchmark=BenchmarkPayload, payload=16KiB, c=8.
	// Records with equal labels are the arms and repeats of one scenario.
	Labels labels.Set `json:"labels"`
	// Concurrency is the load's number of connections, each with one request
	// in flight (load.Options.Concurrency).
	Concurrency int `json:"concurrency"`
	// Repeat is the -count iteration, from 0. Records of the same repeat of
	// both arms were measured back to back and are compared as a pair.
	Repeat int `json:"repeat"`
	// Beyond marks a rate ladder's last rung, past the knee: the rate an
	// arm could not hold, or held outside the SLO. Its invalid runs are the
	// finding, not a failure of the run.
	Beyond string `json:"beyond,omitempty"`
	// Pair says how the round this run belongs to ran its arms, in a gate
	// with a candidate in the run; nil elsewhere.
	Pair *Pair `json:"pair,omitempty"`
	*testbed.Run
}

// Pair is how a gate's round ran its arms: enough to check that a duet's
// halves ran together and to replay the order.
type Pair struct {
	// Mode is sequential (each arm alone, one after another) or duet (the
	// reference and the candidate at once).
	Mode testbed.Mode `json:"mode"`
	// Order is the order the arms started in: in sequential mode every
	// arm of the round (testbed.RoundOrder), in a duet its two arms
	// (testbed.DuetOrder of Seed and the round).
	Order []testbed.Arm `json:"order"`
	// Seed is the duet's order seed (the run's settings hold it too); 0
	// in sequential mode.
	Seed uint64 `json:"seed,omitempty"`
	// Window is when this run's measured window ran (its loadgen's).
	Window testbed.Span `json:"window"`
	// Overlap is, in a duet, the share of the longer of its two windows
	// that both halves ran together (testbed.Overlap); below
	// testbed.MinDuetOverlap both halves are invalid (duet-apart).
	Overlap float64 `json:"overlap,omitempty"`
}

// Name is the sub-benchmark name, e.g. "BenchmarkOneHop/c=32/arm=meshed".
func (r Record) Name() string { return r.key().With(labels.Arm, string(r.Arm)).String() }

// key is the labels records of one scenario share: the record's labels,
// or, for records without any, benchmark and c.
func (r Record) key() labels.Set {
	if len(r.Labels) > 0 {
		return r.Labels.Without(labels.Arm)
	}
	return labels.Set{{Key: labels.Benchmark, Value: r.Benchmark}, {Key: labels.Concurrency, Value: strconv.Itoa(r.Concurrency)}}
}

// ArmStats summarises one arm's repeats at one concurrency.
type ArmStats struct {
	// Repeats is how many repeats the arm has, a count.
	Repeats int `json:"repeats"`
	// Invalid is how many of them are not valid, a rate ladder's last rung
	// (Record.Beyond) left out.
	Invalid int `json:"invalid"`
	// CPUInvalid counts the repeats whose CPU figures alone are not valid
	// (testbed.Run.CPUValid): every CPU figure of the arm includes them and
	// is marked (CPUMark), and no threshold judges it.
	CPUInvalid int `json:"cpuInvalid,omitempty"`
	// CPUInvalidKinds are the kinds of those runs' reasons, each once
	// (validity.CPUDiluted, validity.CPUCoarse).
	CPUInvalidKinds []validity.Kind `json:"cpuInvalidKinds,omitempty"`
	// Latencies in milliseconds, each summarised over repeats, read as
	// load.Result.Percentile reads them: corrected for coordinated omission
	// in open loop (see load.LatencySource).
	P50  stats.Summary `json:"p50Ms"`
	P90  stats.Summary `json:"p90Ms"`
	P99  stats.Summary `json:"p99Ms"`
	P999 stats.Summary `json:"p999Ms"`
	Max  stats.Summary `json:"maxMs"`
	// P50Uncorrected and P99Uncorrected are the open-loop repeats' p50 and
	// p99 as the requests were sent, without the correction; absent in
	// closed loop, where they equal P50 and P99.
	P50Uncorrected stats.Summary `json:"p50UncorrectedMs,omitzero"`
	P99Uncorrected stats.Summary `json:"p99UncorrectedMs,omitzero"`
	// Merged is every repeat's histogram merged bucket by bucket (seconds);
	// its percentiles are the whole arm's, never an average of repeats'.
	Merged *fstats.HistogramData `json:"merged,omitempty"`
	// QPS is the achieved rate, req/s, summarised over repeats.
	QPS stats.Summary `json:"qps"`
	// Window is the shortest measured window of the repeats, as asked
	// (load.Options.Duration): a calibration knows from it which runs
	// measured a point in shorter windows than others.
	Window time.Duration `json:"windowNs,omitzero"`
	// Errors is the failed requests summed over the repeats, a count.
	Errors int64 `json:"errors"`
	// MergedHDR is every repeat's HDR histograms merged, when every repeat
	// has them.
	MergedHDR *load.Latencies `json:"mergedHDR,omitempty"`
	// CPU per role in millicores, CPU-ms per 1000 requests per role, and
	// the largest single process's RSS under load per role in MiB.
	CPU      map[measure.Role]stats.Summary `json:"cpuMilli"`
	CPUPer1k map[measure.Role]stats.Summary `json:"cpuMsPer1kReq"`
	RSS      map[measure.Role]stats.Summary `json:"maxRSSMiB"`
	// IdleRSS is the largest single process's RSS while idle, per role, MiB.
	IdleRSS map[measure.Role]stats.Summary `json:"maxIdleRSSMiB"`
	// NodeUtil is the busiest node's CPU utilisation, percent.
	NodeUtil stats.Summary `json:"nodeUtilPct"`
	// MeshCores is the CPU of every mesh role (MeshRoles: sidecars, node
	// proxies, waypoints, control plane) in cores; MeshCoresPer1kRPS the
	// same per 1000 req/s achieved; MeshRSSMiB their memory summed, MiB.
	MeshCores         stats.Summary `json:"meshCores"`
	MeshCoresPer1kRPS stats.Summary `json:"meshCoresPer1kRPS"`
	MeshRSSMiB        stats.Summary `json:"meshRSSMiB"`
}

// Comparison is meshed against baseline for one path and concurrency. The
// overheads are summarised from repeat pairs measured back to back, so
// drift of the machine cancels out.
type Comparison struct {
	// Benchmark is the top-level benchmark, e.g. "BenchmarkOneHop".
	Benchmark string `json:"benchmark"`
	// Labels are the scenario's, as its records carry them (no arm).
	Labels labels.Set `json:"labels"`
	// Path is the request path compared (one-hop, two-hop …).
	Path testbed.Path `json:"path"`
	// Concurrency is the load's number of connections (Record.Concurrency).
	Concurrency int `json:"concurrency"`
	// Baseline and Meshed are each arm's figures over its repeats.
	Baseline ArmStats `json:"baseline"`
	Meshed   ArmStats `json:"meshed"`
	// P50Delta is meshed minus baseline p50 in ms; P50Pct the same as a
	// percentage of baseline; likewise p99.
	P50Delta stats.Summary `json:"p50DeltaMs"`
	P50Pct   stats.Summary `json:"p50DeltaPct"`
	P99Delta stats.Summary `json:"p99DeltaMs"`
	P99Pct   stats.Summary `json:"p99DeltaPct"`
	// QPSLossPct is the achieved-throughput loss versus baseline, percent.
	QPSLossPct stats.Summary `json:"qpsLossPct"`
	// ProxyAppRatio is sidecar CPU over app CPU in the meshed arm.
	ProxyAppRatio stats.Summary `json:"proxyAppCPURatio"`
	// Steps compare a user flow's steps; empty for other loads.
	Steps []StepComparison `json:"steps,omitempty"`
	// PodSidecarAppRatio is, per pod, the sidecar's CPU over the CPU of the
	// app beside it (the loadgen's sidecar left out), over pods and repeats.
	PodSidecarAppRatio stats.Summary `json:"podSidecarAppCPURatio"`
	// P999Delta and P999Pct are the p99.9 delta in ms and in percent.
	P999Delta stats.Summary `json:"p999DeltaMs"`
	P999Pct   stats.Summary `json:"p999DeltaPct"`
	// Problems lists why the comparison could not be made in full.
	Problems []string `json:"problems,omitempty"`
	// Beyond is why the meshed arm is past a rate ladder's knee (its
	// first such record's Record.Beyond); "" elsewhere. Its latency
	// there is a queue's, so thresholds leave it unjudged.
	Beyond string `json:"beyond,omitempty"`
	// limits are the figures of the table's threshold limits, each in its
	// limit's unit, as Observation hands them on; Compare sets them.
	limits map[verdict.Metric]stats.Summary
}

// Scenario is the name thresholds and messages use, e.g.
// "BenchmarkOneHop/c=32" or "BenchmarkPayload/payload=16KiB/c=8".
func (c Comparison) Scenario() string {
	if len(c.Labels) == 0 {
		return fmt.Sprintf("%s/c=%d", c.Benchmark, c.Concurrency)
	}
	return c.Labels.String()
}

// Compare groups records by their labels (and path) and compares the
// arms. Output is in sweep order. Records of nested sweeps stay apart: no
// record is ever overwritten by another.
func Compare(records []Record) []Comparison {
	records = upgradeArms(records)
	type key struct {
		labels string
		path   testbed.Path
	}
	groups := map[key]map[testbed.Arm]map[int]Record{}
	first := map[key]Record{}
	var order []key
	for _, r := range records {
		k := key{r.key().Key(), r.Path}
		if groups[k] == nil {
			groups[k] = map[testbed.Arm]map[int]Record{}
			first[k] = r
			order = append(order, k)
		}
		if groups[k][r.Arm] == nil {
			groups[k][r.Arm] = map[int]Record{}
		}
		groups[k][r.Arm][r.Repeat] = r
	}
	out := make([]Comparison, 0, len(order))
	for _, k := range order {
		g := groups[k]
		f := first[k]
		c := Comparison{Benchmark: f.Benchmark, Labels: f.key(), Path: k.path, Concurrency: f.Concurrency}
		// Pair repeats present in both arms, in repeat order.
		var reps []int
		for rep := range g[testbed.Baseline] {
			if _, ok := g[testbed.Meshed][rep]; ok {
				reps = append(reps, rep)
			}
		}
		sort.Ints(reps)
		base := make([]Record, len(reps))
		mesh := make([]Record, len(reps))
		for i, rep := range reps {
			base[i], mesh[i] = g[testbed.Baseline][rep], g[testbed.Meshed][rep]
		}
		c.Baseline, c.Meshed = armStats(base), armStats(mesh)
		c.addMeshFigures(base, mesh)
		if len(reps) == 0 {
			// One arm only (a fault scenario runs the meshed arm alone):
			// its own figures, errors included, without overheads.
			c.Baseline, c.Meshed = armStats(sortedRecords(g[testbed.Baseline])), armStats(sortedRecords(g[testbed.Meshed]))
			c.Problems = append(c.Problems, "no repeat has both arms")
			out = append(out, c)
			continue
		}
		c.addOverheads(base, mesh)
		out = append(out, c)
	}
	return out
}

// addOverheads compares the paired repeats of the arms: the latency and
// throughput overheads, the figures of the table's threshold limits, the
// sidecar-to-app CPU ratio and a flow's steps. A pairing that fails is
// one of c's Problems.
func (c *Comparison) addOverheads(base, mesh []Record) {
	var errs []error
	add := func(s stats.Summary, err error) stats.Summary {
		errs = append(errs, err)
		return s
	}
	c.P50Delta = add(paired(metric.P50, metric.Delta, base, mesh))
	c.P50Pct = add(paired(metric.P50, metric.Increase, base, mesh))
	c.P99Delta = add(paired(metric.P99, metric.Delta, base, mesh))
	c.P99Pct = add(paired(metric.P99, metric.Increase, base, mesh))
	c.QPSLossPct = add(paired(metric.Throughput, metric.Loss, base, mesh))
	c.limits = limitFigures(base, mesh)
	var ratios []float64
	for _, r := range mesh {
		if c.Beyond == "" {
			c.Beyond = r.Beyond
		}
		sc, _ := r.Resources.Role(measure.RoleSidecar)
		app, _ := r.Resources.Role(measure.RoleApp)
		if app.MilliCores > 0 {
			ratios = append(ratios, sc.MilliCores/app.MilliCores)
		}
	}
	c.ProxyAppRatio = stats.Summarize(ratios)
	c.Steps = compareSteps(base, mesh)
	for _, err := range errs {
		if err != nil {
			c.Problems = append(c.Problems, err.Error())
		}
	}
}

func armStats(rs []Record) ArmStats {
	a := ArmStats{Repeats: len(rs), Window: shortestWindow(rs), CPU: map[measure.Role]stats.Summary{}, CPUPer1k: map[measure.Role]stats.Summary{},
		RSS: map[measure.Role]stats.Summary{}, IdleRSS: map[measure.Role]stats.Summary{}}
	var p50, p90, p99, p999, mx, qps, node, p50u, p99u []float64
	var hdrs []*load.Latencies
	cpu, per1k, rss, idle := map[measure.Role][]float64{}, map[measure.Role][]float64{}, map[measure.Role][]float64{}, map[measure.Role][]float64{}
	var hs []*fstats.HistogramData
	res := stats.DefaultResolution
	for _, r := range rs {
		a.countInvalid(r)
		l := r.Load
		res = l.Options.Resolution
		hs = append(hs, l.Latency)
		p50 = append(p50, l.Percentile(50)*1e3)
		p90 = append(p90, l.Percentile(90)*1e3)
		p99 = append(p99, l.Percentile(99)*1e3)
		p999 = append(p999, l.Percentile(99.9)*1e3)
		mx = append(mx, l.Max()*1e3)
		hdrs = append(hdrs, l.HDR)
		if l.LatencySource() == load.FromCorrected {
			p50u = append(p50u, l.UncorrectedPercentile(50)*1e3)
			p99u = append(p99u, l.UncorrectedPercentile(99)*1e3)
		}
		qps = append(qps, l.AchievedQPS)
		a.Errors += l.Errors
		node = append(node, busiestNode(r.Resources))
		for _, t := range r.Resources.ByRole() {
			cpu[t.Role] = append(cpu[t.Role], t.MilliCores)
			if l.Requests > 0 {
				// millicores × seconds = CPU-ms; per 1000 requests.
				per1k[t.Role] = append(per1k[t.Role], r.CPUPer1k(t.MilliCores))
			}
			rss[t.Role] = append(rss[t.Role], metric.MiB(t.MaxLoadRSS))
			idle[t.Role] = append(idle[t.Role], metric.MiB(t.MaxIdleRSS))
		}
	}
	a.P50, a.P90, a.P99, a.P999, a.Max = stats.Summarize(p50), stats.Summarize(p90), stats.Summarize(p99), stats.Summarize(p999), stats.Summarize(mx)
	a.QPS, a.NodeUtil = stats.Summarize(qps), stats.Summarize(node)
	a.P50Uncorrected, a.P99Uncorrected = stats.Summarize(p50u), stats.Summarize(p99u)
	for role := range cpu {
		a.CPU[role] = stats.Summarize(cpu[role])
		a.CPUPer1k[role] = stats.Summarize(per1k[role])
		a.RSS[role] = stats.Summarize(rss[role])
		a.IdleRSS[role] = stats.Summarize(idle[role])
	}
	if merged, err := stats.Merge(res, hs...); err == nil && merged.Count > 0 {
		a.Merged = merged
	}
	if merged, err := load.MergeLatencies(hdrs...); err == nil {
		a.MergedHDR = merged
	}
	return a
}

// countInvalid counts r in a's invalid runs (a rate ladder's last rung
// left out) and in its runs with invalid CPU figures, with their kinds.
func (a *ArmStats) countInvalid(r Record) {
	if !r.Valid() && r.Beyond == "" {
		a.Invalid++
	}
	if !r.CPUValid() {
		a.CPUInvalid++
		for _, why := range r.CPUReasons() {
			a.CPUInvalidKinds = addKinds(a.CPUInvalidKinds, why.Kind)
		}
	}
}

// shortestWindow is the shortest window rs were asked for (ArmStats.Window).
func shortestWindow(rs []Record) time.Duration {
	var w time.Duration
	for _, r := range rs {
		if d := r.Load.Options.Duration; w == 0 || d < w {
			w = d
		}
	}
	return w
}

// addKinds appends the kinds of more that kinds lacks, each once.
func addKinds(kinds []validity.Kind, more ...validity.Kind) []validity.Kind {
	for _, k := range more {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// busiestNode is the CPU utilisation of w's busiest node, percent.
func busiestNode(w measure.Window) float64 {
	busiest := 0.0
	for _, u := range w.NodeUtilisation {
		busiest = max(busiest, u)
	}
	return busiest
}

// Observation is what the threshold check sees of a comparison Compare
// made: the figure of every threshold limit of the table (package metric).
// Its CPU metrics' limits are unjudged (verdict.Observation.Unjudged) when
// a meshed run's CPU figures are not valid: they include that run. A
// comparison decoded from a results file has no figures to observe;
// Compare its records again.
func (c Comparison) Observation() verdict.Observation {
	o := verdict.Observation{Scenario: c.Scenario(), Labels: c.Labels, Path: verdict.Path(c.Path), Concurrency: c.Concurrency, Values: map[verdict.Metric]stats.Summary{}}
	if len(c.Problems) > 0 {
		return o
	}
	maps.Copy(o.Values, c.limits)
	o.Unjudged = c.unjudged()
	o.PastKnee = c.Beyond
	o.Window = c.Meshed.Window
	return o
}

// unjudged is why the comparison's CPU limits cannot be judged: a meshed
// run's CPU figures that are not valid, or, for a ratio over the
// baseline's CPU, a baseline run's. It is nil when every one can.
func (c Comparison) unjudged() map[verdict.Metric]string {
	why := func(arm string, a ArmStats) string {
		return fmt.Sprintf("the CPU figures of %d of the %s arm's %d runs are not valid (their cpuInvalid reasons: %s)",
			a.CPUInvalid, arm, a.Repeats, cpuWhy(a.CPUInvalidKinds))
	}
	out := map[verdict.Metric]string{}
	for _, d := range metric.All() {
		for _, l := range d.Limits {
			over, _ := metric.Lookup(l.Over)
			switch {
			case d.CPU && c.Meshed.CPUInvalid > 0:
				out[verdict.Metric(l.Key)] = why("meshed", c.Meshed)
			case l.Of == metric.Ratio && over.CPU && c.Baseline.CPUInvalid > 0:
				out[verdict.Metric(l.Key)] = why("baseline", c.Baseline)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// limitFigures is the figure of every threshold limit of the table from
// the paired runs, leaving out a limit whose figure could not be made (a
// pairing that failed, or a metric no meshed run has).
func limitFigures(base, mesh []Record) map[verdict.Metric]stats.Summary {
	out := map[verdict.Metric]stats.Summary{}
	for _, d := range metric.All() {
		for _, l := range d.Limits {
			switch l.Of {
			case metric.Meshed:
				if s, ok := meshedFigure(d, mesh); ok {
					out[verdict.Metric(l.Key)] = s
				}
			case metric.Ratio:
				if s, err := pairedOver(d.Name, l.Over, base, mesh); err == nil {
					out[verdict.Metric(l.Key)] = s
				}
			default:
				if s, err := paired(d.Name, l.Of, base, mesh); err == nil {
					out[verdict.Metric(l.Key)] = s
				}
			}
		}
	}
	return out
}

// meshedFigure summarises the metric over the meshed runs that have it,
// and says whether any has.
func meshedFigure(d metric.Def, mesh []Record) (stats.Summary, bool) {
	var vs []float64
	for _, r := range mesh {
		if v, ok := d.Read(r.Run); ok {
			vs = append(vs, v)
		}
	}
	return stats.Summarize(vs), len(vs) > 0
}

// paired compares the named metric of the meshed runs with the baseline
// runs of the same repeats, as of says (metric.Delta, Increase or Loss);
// a run without the figure counts as 0 (metric.Def.Read).
func paired(name string, of metric.Overhead, base, mesh []Record) (stats.Summary, error) {
	d, ok := metric.Lookup(name)
	if !ok {
		return stats.Summary{}, fmt.Errorf("no metric %q", name)
	}
	read := func(r Record) float64 { v, _ := d.Read(r.Run); return v }
	b, m := pick(base, read), pick(mesh, read)
	switch of {
	case metric.Delta:
		return stats.PairedDelta(b, m)
	case metric.Increase, metric.RelativeDelta:
		r, err := stats.PairedRatio(b, m)
		return r.PercentChange(), err
	case metric.Loss:
		r, err := stats.PairedRatio(b, m)
		return r.PercentLoss(), err
	}
	return stats.Summary{}, fmt.Errorf("%s: overhead %d is not a pairing", name, of)
}

// pairedOver is the metric named name of each meshed run over the metric
// named over of the baseline run of the same repeat (metric.Ratio); a
// run without a figure counts as 0, and a pair whose baseline reads 0
// fails.
func pairedOver(name, over string, base, mesh []Record) (stats.Summary, error) {
	d, ok := metric.Lookup(name)
	if !ok {
		return stats.Summary{}, fmt.Errorf("no metric %q", name)
	}
	o, ok := metric.Lookup(over)
	if !ok {
		return stats.Summary{}, fmt.Errorf("%s: no metric %q to divide by", name, over)
	}
	m := pick(mesh, func(r Record) float64 { v, _ := d.Read(r.Run); return v })
	b := pick(base, func(r Record) float64 { v, _ := o.Read(r.Run); return v })
	return stats.PairedRatio(b, m)
}

// upgradeArms turns an upgrade gate's runs into two ordinary comparisons
// per scenario, labelled mesh=reference and mesh=candidate: each of those
// arms against the same baseline runs. Other runs pass unchanged.
func upgradeArms(records []Record) []Record {
	upgrade := false
	for _, r := range records {
		upgrade = upgrade || r.Arm == testbed.Reference || r.Arm == testbed.Candidate
	}
	if !upgrade {
		return records
	}
	as := func(r Record, mesh testbed.Arm, arm testbed.Arm) Record {
		run := *r.Run
		run.Arm = arm
		r.Run = &run
		r.Labels = r.key().With("mesh", string(mesh))
		return r
	}
	var out []Record
	for _, r := range records {
		switch r.Arm {
		case testbed.Baseline:
			out = append(out, as(r, testbed.Reference, testbed.Baseline), as(r, testbed.Candidate, testbed.Baseline))
		case testbed.Reference, testbed.Candidate:
			out = append(out, as(r, r.Arm, testbed.Meshed))
		default:
			out = append(out, r)
		}
	}
	return out
}

// sortedRecords are an arm's records in repeat order.
func sortedRecords(byRep map[int]Record) []Record {
	var out []Record
	for _, rep := range slices.Sorted(maps.Keys(byRep)) {
		out = append(out, byRep[rep])
	}
	return out
}
