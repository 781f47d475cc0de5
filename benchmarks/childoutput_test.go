package benchmarks

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The readers of a child benchmark run's output (go test -bench -v, as
// TestEveryScenarioRunsLocally runs it), for what its results file does
// not hold: skips, failures, and the metrics of benchmarks that keep no
// records.

// procsSuffix is the -GOMAXPROCS suffix of a benchmark result line's name.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// benchMetrics reads out's benchmark result lines: each benchmark's
// metrics by unit, its name without the -GOMAXPROCS suffix.
func benchMetrics(out string) map[string]map[string]float64 {
	all := map[string]map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not an iteration count: a summary line
		}
		m := map[string]float64{}
		for i := 2; i < len(f) && m != nil; i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				m = nil
				break
			}
			m[f[i+1]] = v
		}
		if m != nil {
			all[procsSuffix.ReplaceAllString(f[0], "")] = m
		}
	}
	return all
}

// hasPrefixKey reports whether m has name or one of its sub-benchmarks.
func hasPrefixKey[V any](m map[string]V, name string) bool {
	for k := range m {
		if under(k, name) {
			return true
		}
	}
	return false
}

// under reports whether the benchmark sub is name or one of its
// sub-benchmarks.
func under(sub, name string) bool { return sub == name || strings.HasPrefix(sub, name+"/") }

// skipReason is why out says name, or one of its sub-benchmarks, was
// skipped: the log lines just before its first "--- SKIP:" line (with -v a
// benchmark's log is printed as it goes, its verdict line after). It is ""
// when nothing of name skipped.
func skipReason(out, name string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		skipped, ok := strings.CutPrefix(l, "--- SKIP: ")
		if !ok || !under(skipped, name) {
			continue
		}
		var why []string
		for j := i - 1; j >= 0 && strings.HasPrefix(lines[j], "    "); j-- {
			why = append(why, strings.TrimSpace(lines[j]))
		}
		slices.Reverse(why)
		return strings.Join(why, " ")
	}
	return ""
}

// unexplainedFailures are the benchmarks out says failed ("--- FAIL:")
// with no invalid run (named as Record.Name) of their own or below them.
func unexplainedFailures(out string, invalid []string) []string {
	var left []string
	for _, l := range strings.Split(out, "\n") {
		failed, ok := strings.CutPrefix(l, "--- FAIL: ")
		if !ok {
			continue
		}
		if !slices.ContainsFunc(invalid, func(run string) bool { return under(run, failed) }) {
			left = append(left, failed)
		}
	}
	return left
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// childOutput is a child run's output, from a run of
// BenchmarkUpgradeGate, BenchmarkLoadgenCeiling (without wrk),
// BenchmarkOneHop (on a busy machine) and BenchmarkProxyKilled on
// 2026-12-03, shortened; the ceiling's lines are as the testing package
// prints a run with wrk.
const childOutput = `BenchmarkUpgradeGate
BenchmarkUpgradeGate/load=max
    sweep.go:43: BenchmarkUpgradeGate/load=max: skipped on the local target: an upgrade-gate scenario
--- SKIP: BenchmarkUpgradeGate/load=max
# meshbench: BenchmarkUpgradeGate: load=max is the last point: no open-loop point: no valid meshed run at maximum rate
BenchmarkLoadgenCeiling
    ceiling.go:35: BenchmarkLoadgenCeiling: skipped on the local target: wrk is not on PATH (Debian: apt-get install wrk)
--- SKIP: BenchmarkLoadgenCeiling
BenchmarkLoadgenCeiling/loadgen=wrk-2         	       1	       412.0 loadgen-mcpu	     21000 req/s
BenchmarkOneHop/c=2/arm=baseline
    sweep.go:362: INVALID run: busy machine: processes outside the run used 1543m of 2 cores during the window
--- FAIL: BenchmarkOneHop/c=2/arm=baseline
--- FAIL: BenchmarkOneHop/c=2
BenchmarkOneHop/c=2: 2 invalid run(s) included; see the results file for reasons
--- FAIL: BenchmarkOneHop
BenchmarkProxyKilled/c=2/arm=meshed-2      	       1	        75.45 app-mcpu	       459.7 cpu-ms/kreq	       478.0 errors
--- FAIL: BenchmarkProxyKilled
FAIL meshbench: not a valid result: invalid runs in BenchmarkOneHop/c=2 (2); their reasons are in the results file and above
`

// The child's output says which benchmark skipped and why, which failed
// with an invalid run of its own and which without, and the metrics of
// each result line.
func TestChildOutputIsRead(t *testing.T) {
	assert.Equal(t, "ceiling.go:35: BenchmarkLoadgenCeiling: skipped on the local target: wrk is not on PATH (Debian: apt-get install wrk)",
		skipReason(childOutput, "BenchmarkLoadgenCeiling"))
	assert.Equal(t, "sweep.go:43: BenchmarkUpgradeGate/load=max: skipped on the local target: an upgrade-gate scenario",
		skipReason(childOutput, "BenchmarkUpgradeGate"), "a sub-benchmark's skip")
	assert.Empty(t, skipReason(childOutput, "BenchmarkOneHop"))
	assert.Empty(t, skipReason(childOutput, "BenchmarkLoadgen"), "a name is not a prefix of another")

	assert.Equal(t, []string{"BenchmarkProxyKilled"}, unexplainedFailures(childOutput, []string{"BenchmarkOneHop/c=2/arm=baseline"}))
	assert.Equal(t, []string{"BenchmarkOneHop/c=2/arm=baseline", "BenchmarkOneHop/c=2", "BenchmarkOneHop", "BenchmarkProxyKilled"},
		unexplainedFailures(childOutput, nil))

	metrics := benchMetrics(childOutput)
	assert.Equal(t, map[string]map[string]float64{
		"BenchmarkLoadgenCeiling/loadgen=wrk": {"loadgen-mcpu": 412, "req/s": 21000},
		"BenchmarkProxyKilled/c=2/arm=meshed": {"app-mcpu": 75.45, "cpu-ms/kreq": 459.7, "errors": 478},
	}, metrics, "result lines only, without the -GOMAXPROCS suffix")
	assert.True(t, hasPrefixKey(metrics, "BenchmarkLoadgenCeiling"))
	assert.False(t, hasPrefixKey(metrics, "BenchmarkOneHop"))
}
