package verdict

import (
	"fmt"
	"math"
)

// Metric names one overhead that a rule limits. Its value is the YAML key of
// that limit in a fixture, so a fixture and the code share one vocabulary.
type Metric string

// The metrics a rule limits, each with its unit. Every delta, ratio and loss
// compares the meshed arm with the baseline arm of the same run.
const (
	// P50DeltaMs is the meshed p50 minus the baseline p50, in milliseconds.
	P50DeltaMs Metric = "p50DeltaMs"
	// P99DeltaPct is the increase of the meshed p99 over the baseline p99, in
	// percent of the baseline p99 (100 means the p99 doubled).
	P99DeltaPct Metric = "p99DeltaPct"
	// MeshedP99Ms is the meshed arm's own p99, in milliseconds: the tail a
	// client of the mesh sees. It does not move with the baseline's tail,
	// which on a shared machine can differ ×2 between quiet runs and then
	// hides a doubled meshed p99 from P99DeltaPct. It is optional in a
	// fixture.
	MeshedP99Ms Metric = "meshedP99Ms"
	// ThroughputLossPct is the achieved req/s lost versus baseline, in percent
	// of the baseline req/s (85 means the meshed arm kept 15 %).
	ThroughputLossPct Metric = "throughputLossPct"
	// SidecarCPUPer1kReqMs is the CPU the sidecar proxies used per 1000
	// requests over the measured window, in CPU-milliseconds.
	SidecarCPUPer1kReqMs Metric = "sidecarCPUPer1kReqMs"
	// SidecarRSSMiB is the largest resident memory of any one sidecar under
	// load, in MiB (2^20 bytes).
	SidecarRSSMiB Metric = "sidecarRSSMiB"
	// MeshCores is the CPU of the whole mesh in the meshed arm, in cores:
	// sidecars, node proxies, waypoints and control plane. It is optional in
	// a fixture: a rule without it does not gate it.
	MeshCores Metric = "meshCores"
)

// Metrics returns every metric a rule limits, in the order a fixture lists
// them and a verdict reports them. The slice is new on every call.
func Metrics() []Metric {
	return []Metric{P50DeltaMs, P99DeltaPct, MeshedP99Ms, ThroughputLossPct, SidecarCPUPer1kReqMs, SidecarRSSMiB, MeshCores}
}

// optional lists the metrics a rule may leave out.
var optional = []Metric{MeshedP99Ms, MeshCores}

// metricInfo is how a metric reads in messages.
type metricInfo struct {
	label  string // what it is, for "too high <label>"
	unit   string // appended to a printed value, e.g. "ms" or " MiB"
	prec   int    // decimals when printed
	want   string // what a fixture must hold, for parse errors
	sample string // an example value for parse errors
}

func (m Metric) info() metricInfo {
	switch m {
	case P50DeltaMs:
		return metricInfo{"p50 delta", "ms", 2, "milliseconds", "2"}
	case P99DeltaPct:
		return metricInfo{"p99 increase", "%", 1, "a percentage", "600"}
	case MeshedP99Ms:
		return metricInfo{"meshed p99", "ms", 2, "milliseconds", "5"}
	case ThroughputLossPct:
		return metricInfo{"throughput loss", "%", 1, "a percentage", "85"}
	case SidecarCPUPer1kReqMs:
		return metricInfo{"sidecar CPU per 1k requests", " CPU-ms", 1, "CPU-milliseconds per 1000 requests", "1500"}
	case SidecarRSSMiB:
		return metricInfo{"sidecar RSS", " MiB", 1, "MiB", "300"}
	case MeshCores:
		return metricInfo{"mesh cores", " cores", 2, "cores", "1.5"}
	}
	return metricInfo{string(m), "", 3, "a number", "1"}
}

// format prints v in the metric's unit, e.g. "3.21ms".
// A NaN or an infinity is printed bare, since it has no unit.
func (m Metric) format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return m.number(v) + m.info().unit
}

// number prints v with the metric's precision and no unit.
func (m Metric) number(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%.*f", m.info().prec, v)
}
