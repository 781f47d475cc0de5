package verdict

import (
	"fmt"
	"math"

	"github.com/meshbench/meshbench/framework/metric"
)

// Metric names one overhead that a rule limits. Its value is the YAML key of
// that limit in a fixture, so a fixture and the code share one vocabulary.
type Metric string

// The metrics a rule limits, each with its unit. Every delta, ratio and loss
// compares the meshed arm with the baseline arm of the same run.
const (
	// P50DeltaMs is the meshed p50 minus the baseline p50, in milliseconds.
	P50DeltaMs Metric = metric.P50DeltaMs
	// P99DeltaPct is the increase of the meshed p99 over the baseline p99, in
	// percent of the baseline p99 (100 means the p99 doubled).
	P99DeltaPct Metric = metric.P99DeltaPct
	// MeshedP99Ms is the meshed arm's own p99, in milliseconds: the tail a
	// client of the mesh sees. It does not move with the baseline's tail,
	// which on a shared machine can differ ×2 between quiet runs and then
	// hides a doubled meshed p99 from P99DeltaPct. It is optional in a
	// fixture.
	MeshedP99Ms Metric = metric.MeshedP99Ms
	// ThroughputLossPct is the achieved req/s lost versus baseline, in percent
	// of the baseline req/s (85 means the meshed arm kept 15 %).
	ThroughputLossPct Metric = metric.ThroughputLossPct
	// SidecarCPUPer1kReqMs is the CPU the sidecar proxies used per 1000
	// requests over the measured window, in CPU-milliseconds.
	SidecarCPUPer1kReqMs Metric = metric.SidecarCPUPer1kReqMs
	// SidecarRSSMiB is the largest resident memory of any one sidecar under
	// load, in MiB (2^20 bytes).
	SidecarRSSMiB Metric = metric.SidecarRSSMiB
	// MeshCores is the CPU of the whole mesh in the meshed arm, in cores:
	// sidecars, node proxies, waypoints and control plane. It is optional in
	// a fixture: a rule without it does not gate it.
	MeshCores Metric = metric.MeshCoresLimit

	// The limits in units of the same run's baseline, which a slower or
	// faster machine moves alike in both arms, so that a fixture travels
	// across machine speeds. Each is optional; a rule sets p50DeltaMs or
	// P50DeltaPct, and SidecarCPUPer1kReqMs or SidecarCPUOverBaselineCPU.

	// P50DeltaPct is the meshed p50 minus the baseline p50, in percent of
	// the baseline p50.
	P50DeltaPct Metric = metric.P50DeltaPct
	// MeshedP99OverBaselineP50 is the meshed arm's p99 over the baseline
	// arm's p50 of the same pair, a ratio: the tail a client of the mesh
	// sees, in units of the machine's own median.
	MeshedP99OverBaselineP50 Metric = metric.MeshedP99OverBaselineP50
	// SidecarCPUOverBaselineCPU is the sidecars' CPU per request over the
	// CPU per request of the baseline arm's apps and load generator (the
	// whole baseline arm) of the same pair, a ratio.
	SidecarCPUOverBaselineCPU Metric = metric.SidecarCPUOverBaselineCPU
)

// tableLimits returns the limits of the table (package metric), in its
// order: the one place this package reads them, so that every key, message,
// check and calibration follows the table. A test swaps it to add a limit
// and show that a new one needs no edit here.
var tableLimits = metric.Limits

// Metrics returns every metric a rule limits, in the order a fixture lists
// them and a verdict reports them: the limits of the table (package
// metric), in its order. The slice is new on every call.
func Metrics() []Metric {
	return metricsWhere(func(metric.Limit) bool { return true })
}

// metricsWhere returns the metrics whose limit in the table satisfies f, in
// table order.
func metricsWhere(f func(metric.Limit) bool) []Metric {
	var out []Metric
	for _, l := range tableLimits() {
		if f(l) {
			out = append(out, Metric(l.Key))
		}
	}
	return out
}

// IsLatency reports whether m limits a latency of the load's requests
// (metric.Def.Latency): the limits a rung past a rate ladder's knee leaves
// unjudged.
func IsLatency(m Metric) bool {
	_, d, ok := metric.LimitOf(string(m))
	return ok && d.Latency()
}

// info is how m reads in messages: its limit in the table, or, for a key
// the table lacks, its name and three decimals.
func (m Metric) info() metric.Limit {
	for _, l := range tableLimits() {
		if l.Key == string(m) {
			return l
		}
	}
	return metric.Limit{Key: string(m), Label: string(m), Prec: 3, Want: "a number", Sample: "1"}
}

// format prints v in the metric's unit, e.g. "3.21ms".
// A NaN or an infinity is printed bare, since it has no unit.
func (m Metric) format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return m.number(v) + m.info().Unit
}

// number prints v with the metric's precision and no unit.
func (m Metric) number(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%.*f", m.info().Prec, v)
}

// Format prints v in the metric's unit and precision, as messages do,
// e.g. "3.21ms" or "9.40×".
func (m Metric) Format(v float64) string { return m.format(v) }
