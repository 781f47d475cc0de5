package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// CPUMark follows a CPU figure (millicores, CPU per 1k requests, mesh
// cores, node CPU, the sidecar:app ratios, the cost of the mesh) that
// includes runs whose CPU figures are not valid (testbed.Run.CPUValid):
// their counters were under load for less than 90 % of their span, so
// the figure is diluted by idle time, or they were read in 10 ms ticks,
// too few to count. A legend under the table counts them (CPULegend).
const CPUMark = "†"

// cpuMark is CPUMark when a's CPU figures include a run whose CPU is not
// valid, else "".
func cpuMark(a ArmStats) string {
	if a.CPUInvalid > 0 {
		return CPUMark
	}
	return ""
}

// marked appends mark to a figure that is there (not "-").
func marked(s, mark string) string {
	if s == "-" || s == "" {
		return s
	}
	return s + mark
}

// CPULegend is the line under a table of cs whose CPU figures are marked:
// how many of the runs it summarises have CPU figures that are not valid,
// and what that means; "" when none has.
func CPULegend(cs []Comparison) string {
	n, runs := 0, 0
	var kinds []validity.Kind
	for _, c := range cs {
		n += c.Baseline.CPUInvalid + c.Meshed.CPUInvalid
		runs += c.Baseline.Repeats + c.Meshed.Repeats
		kinds = addKinds(kinds, slices.Concat(c.Baseline.CPUInvalidKinds, c.Meshed.CPUInvalidKinds)...)
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s the CPU figures of %d of the %d runs summarised are not valid (their cpuInvalid reasons in the results: %s); "+
		"a marked figure includes them, and no threshold or gate decision rests on them", CPUMark, n, runs, cpuWhy(kinds))
}

// cpuWhy says what the kinds of CPU reasons mean, in the order given; a
// comparison decoded from an older results file has no kinds, and then
// it says what cpu-diluted, the only kind there was, means.
func cpuWhy(kinds []validity.Kind) string {
	if len(kinds) == 0 {
		kinds = []validity.Kind{validity.CPUDiluted}
	}
	var out []string
	for _, k := range kinds {
		switch k {
		case validity.CPUDiluted:
			out = append(out, "counters under load for less than 90 % of their span are diluted by idle time")
		case validity.CPUCoarse:
			out = append(out, fmt.Sprintf("CPU read in 10 ms ticks, a process counting fewer than %d, so that one tick is over 10 %% of it", testbed.MinTicks))
		default:
			out = append(out, string(k))
		}
	}
	return strings.Join(out, "; ")
}
