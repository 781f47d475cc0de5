package gate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Metric names one gated figure. Its value is how a fixture writes it.
type Metric string

// The metrics a gate compares, candidate against reference, pair by pair.
const (
	// SidecarCPUPer1kReq is the CPU all sidecars used per 1000 requests over
	// the measured window (CPU-ms per 1000 requests): the cost of the mesh
	// per request, the steadiest figure there is.
	SidecarCPUPer1kReq Metric = "sidecarCPUPer1kReq"
	// SidecarRSS is the largest resident memory of any one sidecar under
	// load (MiB).
	SidecarRSS Metric = "sidecarRSS"
	// Throughput is the achieved req/s; gate it on closed-loop scenarios,
	// where it is the maximum.
	Throughput Metric = "throughput"
	// P50, P90, P99 and P999 are latency percentiles (ms); gate them on
	// open-loop scenarios at a fixed rate below saturation, where latency
	// is not mostly queueing.
	P50  Metric = "p50"
	P90  Metric = "p90"
	P99  Metric = "p99"
	P999 Metric = "p999"
)

// Direction says which way a metric gets worse.
type Direction int

const (
	// HigherIsWorse: latency, CPU, memory. A limit caps the increase.
	HigherIsWorse Direction = iota + 1
	// LowerIsWorse: throughput. A limit caps the decrease.
	LowerIsWorse
)

// metricInfo is what the gate knows about a metric.
type metricInfo struct {
	label string // for "too high <label>"
	worse Direction
	cpu   bool // read from CPU counters
}

var metrics = map[Metric]metricInfo{
	SidecarCPUPer1kReq: {"sidecar CPU per 1k req", HigherIsWorse, true},
	SidecarRSS:         {"sidecar RSS", HigherIsWorse, false},
	Throughput:         {"max throughput", LowerIsWorse, false},
	P50:                {"p50 latency", HigherIsWorse, false},
	P90:                {"p90 latency", HigherIsWorse, false},
	P99:                {"p99 latency", HigherIsWorse, false},
	P999:               {"p99.9 latency", HigherIsWorse, false},
}

// Metrics returns every metric a fixture may gate, sorted. The slice is new
// on every call.
func Metrics() []Metric {
	return slices.Sorted(maps.Keys(metrics))
}

// Worse returns the direction in which m gets worse, or 0 for an unknown
// metric.
func (m Metric) Worse() Direction { return metrics[m].worse }

// CPU reports whether m is read from CPU counters, so that a run whose
// CPU figures alone are not valid (target.Run.CPUValid) gives no value of
// it, while its other metrics stand.
func (m Metric) CPU() bool { return metrics[m].cpu }

// Label is how m reads in a sentence, e.g. "sidecar CPU per 1k req".
func (m Metric) Label() string {
	if i, ok := metrics[m]; ok {
		return i.label
	}
	return string(m)
}

// Labels identify a scenario: its axes, e.g. {"path": "one-hop", "c": "8"}.
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

func (d Direction) String() string {
	switch d {
	case HigherIsWorse:
		return "higher is worse"
	case LowerIsWorse:
		return "lower is worse"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}
