package suite_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// gateRun sweeps one-hop with the gate's arms, the reference (caddy) and
// the candidate, interleaved, at the default gate's c=8 and 3 s windows:
// 3 rounds, then one more at a time while the gate is undecided, up to
// maxCount; it returns the gate's verdict. Shorter windows or fewer
// connections leave too few requests in a window for a steady p99 and too
// few of /proc's 10 ms CPU ticks: at c=4 and 1 s, one A/A run in two was
// still inconclusive at 16 pairs (open-loop CPU per request spread 9 % a
// pair), and at c=4 and 2 s one in four (p99 spread 16 %).
func gateRun(t *testing.T, candidate string, maxCount int, axes ...suite.Axis) *gate.Verdict {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real processes")
	}
	s, _ := newSuite(t, "-concurrency", "8", "-duration", "3s", "-warmup", "300ms", "-thresholds", "none", "-candidate", candidate,
		"-max-count", strconv.Itoa(maxCount))
	s.Config.Repeats = 3
	require.NoError(t, s.LoadGate())
	setUp(t, s)
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkGate", Path: testbed.OneHop, Axes: axes, Arms: s.GateArms()})
	})
	arms := map[testbed.Arm]int{}
	for _, r := range s.Records() {
		arms[r.Arm]++
	}
	assert.Equal(t, arms[testbed.Reference], arms[testbed.Candidate], "the reference and the candidate in pairs")
	assert.Zero(t, arms[testbed.Baseline], "no baseline: no decision reads it")
	if len(axes) > 0 {
		checkOpenRate(t, s.Records())
	}
	_ = s.Finish()
	v := s.GateVerdict()
	require.NotNil(t, v, "the gate decided")
	for _, d := range v.Decisions {
		t.Logf("%s: %s", d.Outcome, d.Reason)
	}
	return v
}

// checkOpenRate: the gate's open-loop point runs at
// suite.DefaultGateFraction of the rate the slower meshed arm achieved at
// maximum rate (median of its valid runs: a run the machine disturbed is
// left out).
func checkOpenRate(t *testing.T, recs []report.Record) {
	t.Helper()
	mesh := map[testbed.Arm][]float64{}
	open := map[float64]int{}
	for _, r := range recs {
		switch r.Labels.Value("load") {
		case "max":
			if r.Arm != testbed.Baseline && r.Valid() { // as the suite: valid runs only
				mesh[r.Arm] = append(mesh[r.Arm], r.Load.AchievedQPS)
			}
		case "open":
			open[r.Load.Options.QPS]++
		}
	}
	require.Len(t, mesh, 2)
	capacity := min(stats.Summarize(mesh[testbed.Reference]).Median, stats.Summarize(mesh[testbed.Candidate]).Median)
	require.Len(t, open, 1, "one fixed rate for every arm and round")
	for q := range open {
		assert.InDelta(t, capacity*suite.DefaultGateFraction, q, 1e-9)
	}
}

// An A/A gate (candidate = reference), on the default gate's load
// (maximum rate, then a quarter of the meshed arms' capacity, open loop),
// never fails: every decision rests on valid pairs, at least
// gate.MinPairsToDecide, and passes, or is still undecided when the
// rounds ran out or the budget could not decide it (gate.Outlook) (-max-count 16 here; the default 30 passed 20 of 20
// whole runs, docs/measurements.md "Whole gates on the 2-core machine"). An inconclusive run here (1 of
// the last 3 in CI: open-loop p99 1.07, 0.94–1.23 at 16 pairs, against
// 1.15) is logged, not failed: the pass rate is a distribution over whole
// runs (hack/gate-rates.sh), not one test's outcome.
func TestGateAAPasses(t *testing.T) {
	const maxCount = 16
	v := gateRun(t, "caddy", maxCount, suite.GateLoad(suite.DefaultGateFraction))
	require.Len(t, v.Decisions, 6, "CPU, throughput and RSS at maximum rate; CPU, p99 and RSS open loop")
	for _, d := range v.Decisions {
		assert.GreaterOrEqual(t, d.Interval.N, gate.MinPairsToDecide, "decided on valid pairs: %s", d.Reason)
		assert.NotEqual(t, gate.Fail, d.Outcome, d.Reason)
		if d.Outcome == gate.Inconclusive {
			futile := d.Outlook != nil && d.Outlook.Futile
			assert.True(t, d.Interval.N == maxCount || futile,
				"undecided only when the rounds ran out, or when the outlook said they could not decide it: %s", d.Reason)
			t.Logf("inconclusive (%d pairs, futile %v): %s", d.Interval.N, futile, d.Reason)
		}
	}
	assert.NotEqual(t, gate.Fail, v.Outcome)
}

// A candidate with keep-alive between sidecars turned off (a new mTLS
// handshake per request: several times the CPU per request) fails, naming
// the metric, the interval and the limit.
func TestGateFailsARealRegression(t *testing.T) {
	v := gateRun(t, "caddy+no-keepalive", 8)
	assert.Equal(t, gate.Fail, v.Outcome)
	var cpu *gate.Decision
	for i, d := range v.Decisions {
		if d.Metric == gate.SidecarCPUPer1kReq {
			cpu = &v.Decisions[i]
		}
	}
	require.NotNil(t, cpu)
	assert.GreaterOrEqual(t, cpu.Interval.N, gate.MinPairsToDecide, "decided on valid pairs")
	assert.Equal(t, gate.Fail, cpu.Outcome)
	assert.Greater(t, cpu.Interval.Lo, cpu.Limit, "the whole interval is beyond the limit")
	assert.True(t, strings.Contains(cpu.Reason, "too high sidecar CPU per 1k req: candidate/reference") && strings.Contains(cpu.Reason, "expected ≤ 1.10"), cpu.Reason)
}
