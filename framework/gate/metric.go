package gate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Metric names one gated figure: a metric of the table (package metric)
// not marked NotGated. Its value is how a fixture writes it.
type Metric string

// The metrics a gate compares, candidate against reference, pair by pair.
const (
	// SidecarCPUPer1kReq is the CPU all sidecars used per 1000 requests over
	// the measured window (CPU-ms per 1000 requests): the cost of the mesh
	// per request, the steadiest figure there is.
	SidecarCPUPer1kReq Metric = metric.SidecarCPUPer1kReq
	// WorkloadCPUPer1kReq is the CPU the apps and the loadgen used per
	// 1000 requests (CPU-ms): the cost of a proxyless mesh, whose data
	// plane runs inside them.
	WorkloadCPUPer1kReq Metric = metric.WorkloadCPUPer1kReq
	// SidecarCPUOverWorkloadCPU is the sidecars' CPU over the apps' and
	// the loadgen's in the same window (×): the sidecar's cost in units
	// of the machine's speed then, for a gate whose arms run one after
	// another on a machine whose speed moves between windows (kind). Gate
	// it at a fixed rate only: at maximum rate the workload's CPU per
	// request moves with the rate the arm reached.
	SidecarCPUOverWorkloadCPU Metric = metric.SidecarCPUOverWorkloadCPU
	// SidecarRSS is the largest resident memory of any one sidecar under
	// load (MiB).
	SidecarRSS Metric = metric.SidecarRSS
	// Throughput is the achieved req/s; gate it on closed-loop scenarios,
	// where it is the maximum.
	Throughput Metric = metric.Throughput
	// P50, P90, P99 and P999 are latency percentiles (ms); gate them on
	// open-loop scenarios at a fixed rate below saturation, where latency
	// is not mostly queueing.
	P50  Metric = metric.P50
	P90  Metric = metric.P90
	P99  Metric = metric.P99
	P999 Metric = metric.P999
)

// Direction says which way a metric gets worse.
type Direction = metric.Direction

const (
	// HigherIsWorse: latency, CPU, memory. A limit caps the increase.
	HigherIsWorse = metric.HigherIsWorse
	// LowerIsWorse: throughput. A limit caps the decrease.
	LowerIsWorse = metric.LowerIsWorse
)

// def is m's entry in the table, if m is a gated metric.
func (m Metric) def() (metric.Def, bool) {
	d, ok := metric.Lookup(string(m))
	return d, ok && !d.NotGated
}

// Metrics returns every metric a fixture may gate, sorted. The slice is new
// on every call.
func Metrics() []Metric {
	var out []Metric
	for _, d := range metric.All() {
		if !d.NotGated {
			out = append(out, Metric(d.Name))
		}
	}
	slices.Sort(out)
	return out
}

// Worse returns the direction in which m gets worse, or 0 for an unknown
// metric.
func (m Metric) Worse() Direction { d, _ := m.def(); return d.Worse }

// CPU reports whether m is read from CPU counters, so that a run whose
// CPU figures alone are not valid (testbed.Run.CPUValid) gives no value of
// it, while its other metrics stand.
func (m Metric) CPU() bool { d, _ := m.def(); return d.CPU }

// Label is how m reads in a sentence, e.g. "sidecar CPU per 1k req".
func (m Metric) Label() string {
	if d, ok := m.def(); ok {
		return d.Label
	}
	return string(m)
}

// Value is m's figure in one run, in m's unit (Def.Read), or 0 when the run
// has none.
func (m Metric) Value(r *testbed.Run) float64 {
	d, ok := m.def()
	if !ok {
		return 0
	}
	v, _ := d.Read(r)
	return v
}

// Labels identify a scenario: its axes, e.g. {"path": "one-hop", "c": "8"}.
// They are not a labels.Set: a gate's scenario is the set's labels
// without the arm, plus path and loop, and it has no order. It prints
// sorted by key (String), and a results file's gate decisions, which
// meshbench verdict reads back, hold it as an object with sorted keys,
// where a labels.Set keeps the sub-benchmark's order.
type Labels map[string]string

// String prints the labels sorted by key, "c=8/path=one-hop", the way
// sub-benchmark names write axes; empty labels print as "{}".
func (l Labels) String() string {
	if len(l) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, l[k]))
	}
	return strings.Join(parts, "/")
}
