package suite

import (
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/validity"
)

// noteCPU says, for the first run of the run set whose CPU figures are
// not valid (testbed.Run.CPUValid), why, and what that does to its CPU:
// once, not once per run (and per node). The summary's CPU table counts
// every such run under its legend.
func (s *Suite) noteCPU(name string, rec report.Record) {
	if rec.CPUValid() {
		return
	}
	s.cpuNoted.Do(func() {
		s.logf("%s: CPU figures not valid: %s; this run's CPU is left out of its benchstat line and of the gate, marked † in the tables and undecided for the thresholds, "+
			"its latency and throughput stand (said for the first such run only: the summary counts them all)", name, rec.CPUReasons())
	})
}

// cpuValidRepeats keeps the repeats (meshed run, baseline run) whose CPU
// figures are valid: the meshed run's and, for overhead ratios, the
// baseline's. It also returns the reasons of those it left out.
func cpuValidRepeats(runs [][2]report.Record, overhead bool) ([][2]report.Record, validity.Reasons) {
	var kept [][2]report.Record
	var why validity.Reasons
	for _, r := range runs {
		bad := r[0].CPUReasons()
		if overhead {
			bad = append(bad, r[1].CPUReasons()...)
		}
		if len(bad) == 0 {
			kept = append(kept, r)
		}
		why = append(why, bad...)
	}
	return kept, why
}

// cpuLeftOut is gate.Measurement.LeftOut for a metric read from CPU
// counters that left out n repeats, counted as what (e.g. "2 pairs"), for
// the reasons why; "" when n is 0.
func cpuLeftOut(n int, what string, why validity.Reasons) string {
	if n == 0 {
		return ""
	}
	whose := "their"
	if n == 1 {
		whose = "its"
	}
	kinds := make([]string, 0, len(why))
	for _, k := range why.Kinds() {
		kinds = append(kinds, string(k))
	}
	return fmt.Sprintf("%s left out: %s CPU figures are not valid (%s)", what, whose, strings.Join(kinds, ", "))
}

// storedLeftOut is cpuLeftOut against a stored reference: stored of its
// repeats and run of this run's were left out.
func storedLeftOut(stored, run int, why validity.Reasons) string {
	var parts []string
	if stored > 0 {
		parts = append(parts, plural(stored, "stored repeat", "stored repeats"))
	}
	if run > 0 {
		parts = append(parts, plural(run, "repeat of this run", "repeats of this run"))
	}
	return cpuLeftOut(stored+run, strings.Join(parts, " and "), why)
}

// plural is n followed by one or many, as n counts.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
