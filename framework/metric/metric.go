// Package metric is the one table of what meshbench reads from a run: each
// metric's name, unit, benchstat unit, the direction in which it gets
// worse, how it is read from a run, and the threshold limits set on it.
//
// Four consumers read the table and define no metric of their own:
//   - the benchmark lines (suite) report every metric with a benchstat unit;
//   - the threshold fixtures (verdict) know every limit of every metric;
//   - the upgrade gate (gate) gates every metric not marked NotGated;
//   - the reports (report) read every limit's figure from a comparison.
//
// Adding a metric is one entry in the table; a test walks the table and
// holds each consumer to it.
package metric

import (
	"fmt"
	"slices"

	"github.com/meshbench/meshbench/framework/testbed"
)

// Direction says which way a metric gets worse.
type Direction int

const (
	// HigherIsWorse: latency, CPU, memory; lower is better. A gate limits
	// the increase.
	HigherIsWorse Direction = iota + 1
	// LowerIsWorse: throughput; higher is better. A gate limits the
	// decrease.
	LowerIsWorse
)

// String is "higher is worse" or "lower is worse".
func (d Direction) String() string {
	switch d {
	case HigherIsWorse:
		return "higher is worse"
	case LowerIsWorse:
		return "lower is worse"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Overhead is how a threshold limit compares the meshed arm of a run with
// its baseline arm, repeat by repeat.
type Overhead int

const (
	// Delta is meshed minus baseline, paired by repeat, in the metric's
	// unit.
	Delta Overhead = iota + 1
	// Increase is the meshed figure over the baseline's, paired by repeat,
	// as a percent increase (100 means doubled).
	Increase
	// Loss is the meshed figure over the baseline's, paired by repeat, as
	// a percent loss (85 means the meshed arm kept 15 %).
	Loss
	// Meshed is the meshed arm's own figure, summarised over repeats.
	Meshed
	// RelativeDelta is meshed minus baseline over the baseline, paired by
	// repeat, in percent of the baseline (50 means the mesh added half the
	// baseline's figure). It is Increase's number, but a regression that
	// doubles the delta doubles it, so a calibration scales it as a delta.
	RelativeDelta
	// Ratio is the meshed arm's figure over the baseline arm's figure of
	// another metric (Limit.Over), paired by repeat, unitless (×). The
	// baseline of the same run measures the machine, so the ratio does not
	// move with the machine's speed; a meshed figure that doubles doubles
	// it.
	Ratio
)

// Units is what a limit's figure is measured in, and so which
// calibration writes it (verdict.Calibrate).
type Units int

const (
	// AnyUnits: the figure is already relative to the same run's baseline
	// (the p99 increase, the throughput loss) or does not move with the
	// machine's speed (a sidecar's RSS), so every calibration writes it.
	AnyUnits Units = iota
	// MachineUnits: milliseconds or CPU-milliseconds of the machine that
	// measured. They judge the machine as much as the mesh: only an
	// absolute calibration writes them (meshbench calibrate -absolute).
	MachineUnits
	// BaselineUnits: the meshed figure in units of the same run's
	// interleaved baseline, which a slower or faster machine scales
	// alike. Only a relative calibration (the default) writes them.
	BaselineUnits
)

// Limit is one key a threshold fixture may limit on a metric: the
// metric's Overhead, and how the figure reads in messages.
type Limit struct {
	// Key is the fixture's YAML key and the name verdict gives it, e.g.
	// "p50DeltaMs".
	Key string
	// Of is how the meshed arm is compared with the baseline arm.
	Of Overhead
	// Label is what it is in a sentence, for "too high <label>".
	Label string
	// Unit is appended to a printed value, e.g. "ms", "%" or " MiB".
	Unit string
	// Prec is the decimals a value is printed with.
	Prec int
	// Want is what a fixture must hold, e.g. "milliseconds", and Sample
	// an example value, both for parse errors.
	Want, Sample string
	// Optional limits may be left out of a rule; a rule without one does
	// not check it.
	Optional bool
	// NotCalibrated keeps the limit out of the fixtures meshbench
	// calibrate writes: it is set by hand, as meshCores is.
	NotCalibrated bool
	// Over is, for a Ratio, the name of the metric of the baseline arm the
	// meshed figure is divided by, e.g. P50.
	Over string
	// OneOf names a group of optional limits of which every rule sets at
	// least one, e.g. "p50": a rule limits the p50 in ms or relative to
	// its baseline, but never leaves it ungated.
	OneOf string
	// Units is what the figure is measured in, and which calibration
	// writes the limit.
	Units Units
}

// Def is one metric: one entry of the table.
type Def struct {
	// Name is the metric's name and a gate fixture's key, e.g. "p99".
	Name string
	// Label is how it reads in a sentence, e.g. "p99 latency".
	Label string
	// Unit is the unit of Read's value, e.g. "ms" or "MiB".
	Unit string
	// Benchstat is the unit of the benchmark line's figure, e.g.
	// "p99-ms", or "" when the benchmark line does not report it.
	Benchstat string
	// Worse is the direction in which it gets worse.
	Worse Direction
	// CPU marks a figure read from CPU counters: a run whose CPU figures
	// are not valid (testbed.Run.CPUValid) gives none of it, while its
	// other metrics stand.
	CPU bool
	// NotGated keeps the metric out of the upgrade gate's metrics.
	NotGated bool
	// ControlPlane marks a figure of the control plane measured after a
	// meshed run's window, which a run has only when asked: 1 at the
	// run's own pods, 2 with the idle pods added; 0 for the window's.
	ControlPlane int
	// Read is the metric's value in one run, in Unit, and whether the run
	// has it (a run without sidecars has no sidecar figure). The value
	// is 0 when the run does not have it.
	Read func(*testbed.Run) (float64, bool)
	// Limits are the keys a threshold fixture may limit on it, in the
	// order a fixture lists them.
	Limits []Limit
}

// Names of the metrics in the table.
const (
	P50                = "p50"                // latency percentiles, ms
	P90                = "p90"                //
	P99                = "p99"                //
	P999               = "p999"               //
	Throughput         = "throughput"         // achieved req/s
	SidecarCPUPer1kReq = "sidecarCPUPer1kReq" // CPU-ms of all sidecars per 1000 requests
	SidecarRSS         = "sidecarRSS"         // largest RSS of one sidecar under load, MiB
	MeshCores          = "meshCores"          // CPU of the whole mesh, cores
	// WorkloadCPUPer1kReq is the CPU-ms of the apps and the load
	// generator per 1000 requests: in a baseline arm, the whole arm's.
	WorkloadCPUPer1kReq = "workloadCPUPer1kReq"
	// SidecarCPUOverWorkloadCPU is the sidecars' CPU over the apps' and
	// the load generator's of the same run and window (×): the sidecar's
	// cost per request in units of the machine's speed in that window.
	SidecarCPUOverWorkloadCPU = "sidecarCPUOverWorkloadCPU"
	// The control plane measured after a meshed run's window
	// (testbed.ControlPlane): config propagation's p50 and p99 in ms,
	// and the control plane's CPU (millicores) and RSS (MiB) per
	// connected proxy, at the run's own pods and, Scaled, with the idle
	// pods added.
	PropagationP50                = "propagationP50"
	PropagationP99                = "propagationP99"
	ControlPlaneCPUPerProxy       = "controlPlaneCPUPerProxy"
	ControlPlaneRSSPerProxy       = "controlPlaneRSSPerProxy"
	PropagationP50Scaled          = "propagationP50Scaled"
	PropagationP99Scaled          = "propagationP99Scaled"
	ControlPlaneCPUPerProxyScaled = "controlPlaneCPUPerProxyScaled"
	ControlPlaneRSSPerProxyScaled = "controlPlaneRSSPerProxyScaled"
)

// Keys of the threshold limits in the table.
const (
	P50DeltaMs           = "p50DeltaMs"
	P99DeltaPct          = "p99DeltaPct"
	MeshedP99Ms          = "meshedP99Ms"
	ThroughputLossPct    = "throughputLossPct"
	SidecarCPUPer1kReqMs = "sidecarCPUPer1kReqMs"
	SidecarRSSMiB        = "sidecarRSSMiB"
	MeshCoresLimit       = "meshCores"
	// Limits in units of the same run's baseline (BaselineUnits).
	P50DeltaPct               = "p50DeltaPct"
	MeshedP99OverBaselineP50  = "meshedP99OverBaselineP50"
	SidecarCPUOverBaselineCPU = "sidecarCPUOverBaselineCPU"
)

// Groups of limits a rule sets at least one of (Limit.OneOf).
const (
	OneOfP50        = "p50"
	OneOfSidecarCPU = "sidecar CPU"
)

// All returns the table in its order: the order in which the benchmark
// line reports, a threshold fixture lists and a verdict reports. The slice
// is new on every call.
func All() []Def { return slices.Clone(table) }

// Lookup returns the metric named name.
func Lookup(name string) (Def, bool) {
	for _, d := range table {
		if d.Name == name {
			return d, true
		}
	}
	return Def{}, false
}

// Latency reports whether d is a latency of the requests the load sends
// (p50, p99 …), in ms, rather than a cost, a rate or the control plane's.
func (d Def) Latency() bool { return d.Unit == "ms" && d.ControlPlane == 0 }

// Limits returns every threshold limit of the table, metric by metric, in
// table order. The slice is new on every call.
func Limits() []Limit {
	var out []Limit
	for _, d := range table {
		out = append(out, d.Limits...)
	}
	return out
}

// LimitOf returns the threshold limit whose key is key, and the metric it
// is set on.
func LimitOf(key string) (Limit, Def, bool) {
	for _, d := range table {
		for _, l := range d.Limits {
			if l.Key == key {
				return l, d, true
			}
		}
	}
	return Limit{}, Def{}, false
}

// MiB is n bytes in MiB (2^20 bytes).
func MiB(n int64) float64 { return float64(n) / (1 << 20) }
