package suite_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/target"
)

// gateRun sweeps one-hop at c=4 with baseline, reference (caddy) and the
// candidate interleaved, four rounds, and returns the gate's verdict.
func gateRun(t *testing.T, candidate string) *gate.Verdict {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real processes")
	}
	s, _ := newSuite(t, "-concurrency", "4", "-duration", "1s", "-warmup", "200ms", "-thresholds", "none", "-candidate", candidate)
	s.Config.Repeats = 4
	require.NoError(t, s.LoadGate())
	testing.Benchmark(func(b *testing.B) { s.Sweep(b, suite.Scenario{Name: "BenchmarkGate", Path: target.OneHop}) })
	arms := map[target.Arm]int{}
	for _, r := range s.Records() {
		arms[r.Arm]++
	}
	assert.Equal(t, map[target.Arm]int{target.Baseline: 4, target.Reference: 4, target.Candidate: 4}, arms, "three arms interleaved")
	_ = s.Finish()
	v := s.GateVerdict()
	require.NotNil(t, v, "the gate decided")
	for _, d := range v.Decisions {
		t.Logf("%s: %s", d.Outcome, d.Reason)
	}
	return v
}

// An A/A gate (candidate = reference) never fails: pass or inconclusive.
func TestGateAANeverFails(t *testing.T) {
	v := gateRun(t, "caddy")
	assert.NotEqual(t, gate.Fail, v.Outcome)
	for _, d := range v.Decisions {
		assert.NotEqual(t, gate.Fail, d.Outcome, d.Reason)
	}
}

// A candidate with keep-alive between sidecars turned off (a new mTLS
// handshake per request: several times the CPU per request) fails, naming
// the metric, the interval and the limit.
func TestGateFailsARealRegression(t *testing.T) {
	v := gateRun(t, "caddy+no-keepalive")
	assert.Equal(t, gate.Fail, v.Outcome)
	var cpu *gate.Decision
	for i, d := range v.Decisions {
		if d.Metric == gate.SidecarCPUPer1kReq {
			cpu = &v.Decisions[i]
		}
	}
	require.NotNil(t, cpu)
	assert.Equal(t, gate.Fail, cpu.Outcome)
	assert.Greater(t, cpu.Interval.Lo, cpu.Limit, "the whole interval is beyond the limit")
	assert.True(t, strings.Contains(cpu.Reason, "too high sidecar CPU per 1k req: candidate/reference") && strings.Contains(cpu.Reason, "expected ≤ 1.10"), cpu.Reason)
}
