package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/meshbench/meshbench/framework/stats"
)

// StepComparison is one step of a user flow, meshed against baseline, over
// the repeats paired as in Comparison.
type StepComparison struct {
	// Step is the flow step's name.
	Step string `json:"step"`
	// Baseline and Meshed are each arm's figures for the step.
	Baseline StepStats `json:"baseline"`
	Meshed   StepStats `json:"meshed"`
	// MeanDelta is the meshed minus the baseline mean response time, ms,
	// paired by repeat.
	MeanDelta stats.Summary `json:"meanDeltaMs"`
}

// StepStats is one arm's figures for a step, as Locust's table has them:
// requests and failures summed over the repeats, the rest summarised over
// them (latencies in ms).
type StepStats struct {
	// Requests and Failures are counts, summed over the repeats.
	Requests int64 `json:"requests"`
	Failures int64 `json:"failures"`
	// Mean, P50, P95 and P99 are response times, ms.
	Mean stats.Summary `json:"meanMs"`
	P50  stats.Summary `json:"p50Ms"`
	P95  stats.Summary `json:"p95Ms"`
	P99  stats.Summary `json:"p99Ms"`
	// QPS is the step's rate, req/s.
	QPS stats.Summary `json:"qps"`
}

// compareSteps compares the steps of a flow's paired records; nil when
// the records are not a flow's.
func compareSteps(base, mesh []Record) []StepComparison {
	if len(base) == 0 || base[0].Load == nil || len(base[0].Load.Steps) == 0 {
		return nil
	}
	out := make([]StepComparison, len(base[0].Load.Steps))
	for i, st := range base[0].Load.Steps {
		b, m := stepStats(base, i, st.Step), stepStats(mesh, i, st.Step)
		out[i] = StepComparison{Step: st.Step, Baseline: b.StepStats, Meshed: m.StepStats}
		if d, err := stats.PairedDelta(b.means, m.means); err == nil {
			out[i].MeanDelta = d
		}
	}
	return out
}

type stepArm struct {
	StepStats
	means []float64
}

// stepStats summarises step i, named name, over rs.
func stepStats(rs []Record, i int, name string) stepArm {
	var a stepArm
	var p50, p95, p99, qps []float64
	for _, r := range rs {
		if r.Load == nil || len(r.Load.Steps) <= i || r.Load.Steps[i].Step != name {
			continue
		}
		s := r.Load.Steps[i]
		a.Requests += s.Requests
		a.Failures += s.Errors
		a.means = append(a.means, s.Latency.Avg*1e3)
		p50 = append(p50, s.Percentile(50)*1e3)
		p95 = append(p95, s.Percentile(95)*1e3)
		p99 = append(p99, s.Percentile(99)*1e3)
		qps = append(qps, s.AchievedQPS)
	}
	a.Mean, a.P50, a.P95, a.P99, a.QPS = stats.Summarize(a.means), stats.Summarize(p50), stats.Summarize(p95), stats.Summarize(p99), stats.Summarize(qps)
	return a
}

// printSteps writes one row per step of every flow: what each user saw,
// per arm, the average response time first.
func printSteps(w io.Writer, cs []Comparison) {
	flows := false
	for _, c := range cs {
		flows = flows || len(c.Steps) > 0
	}
	if !flows {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "user flow\tstep\tmean base ms\tmean mesh ms\tΔ mean ms\tp50 base ms\tp50 mesh ms\tp95 base ms\tp95 mesh ms\tp99 base ms\tp99 mesh ms\treq/s base\treq/s mesh\trequests\tfailures\t")
	for _, c := range cs {
		for _, s := range c.Steps {
			b, m := s.Baseline, s.Meshed
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d/%d\t\n", c.Scenario(), s.Step,
				num(b.Mean, 3), num(m.Mean, 3), span(s.MeanDelta, 3), num(b.P50, 3), num(m.P50, 3), num(b.P95, 3), num(m.P95, 3),
				num(b.P99, 3), num(m.P99, 3), num(b.QPS, 0), num(m.QPS, 0), b.Requests, m.Requests, b.Failures, m.Failures)
		}
	}
	_ = tw.Flush()
}
