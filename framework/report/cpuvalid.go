package report

import "fmt"

// CPUMark follows a CPU figure (millicores, CPU per 1k requests, mesh
// cores, node CPU, the sidecar:app ratios, the cost of the mesh) that
// includes runs whose CPU figures are not valid (testbed.Run.CPUValid):
// their counters were under load for less than 90 % of their span, so
// the figure is diluted by idle time. A legend under the table counts
// them (CPULegend).
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
	for _, c := range cs {
		n += c.Baseline.CPUInvalid + c.Meshed.CPUInvalid
		runs += c.Baseline.Repeats + c.Meshed.Repeats
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s the CPU figures of %d of the %d runs summarised are not valid (their cpuInvalid reasons in the results: CPU counters under load for less than 90 %% of their span are diluted by idle time); "+
		"a marked figure includes them, and no threshold or gate decision rests on them", CPUMark, n, runs)
}
