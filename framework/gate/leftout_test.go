package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeftOutEndsTheReason: a metric whose diluted pairs were left out
// says so at the end of its decision, whatever the decision, and the
// others do not; with too few pairs left it is inconclusive.
func TestLeftOutEndsTheReason(t *testing.T) {
	g := testGate(t)
	l := Labels{"c": "8", "loop": "closed"}
	ref, cand := logPairs(0.5, 0.52, 0.48, 0.5)
	const left = "2 pairs left out: their CPU figures are not valid (cpu-diluted)"
	steady := make([]float64, len(ref)) // within ±1 % of the reference: not zero spread (SignTestPairs)
	for i, x := range ref {
		steady[i] = x * (1 + 0.01*float64(i%2*2-1))
	}
	v, err := g.Decide([]Measurement{
		{Scenario: l, Metric: SidecarCPUPer1kReq, Reference: ref[:2], Candidate: cand[:2], LeftOut: left},
		{Scenario: l, Metric: Throughput, Reference: ref, Candidate: steady},
	})
	require.NoError(t, err)
	require.Len(t, v.Decisions, 2)
	assert.Equal(t, Inconclusive, v.Decisions[0].Outcome, "2 pairs decide nothing, though both are ×1.65")
	assert.Equal(t, "g.yaml:3: c=8/loop=closed: inconclusive sidecar CPU per 1k req: n=2, and an interval needs at least 3 pairs; "+left, v.Decisions[0].Reason)
	assert.Equal(t, Pass, v.Decisions[1].Outcome)
	assert.NotContains(t, v.Decisions[1].Reason, "left out")

	v, err = g.DecideSequential([]Measurement{
		{Scenario: l, Metric: SidecarCPUPer1kReq, Reference: ref, Candidate: cand, LeftOut: "1 pair left out: its CPU figures are not valid (cpu-diluted)"},
		{Scenario: l, Metric: Throughput, Reference: ref, Candidate: ref},
	}, Sequential{Max: 8, Decisions: 2})
	require.NoError(t, err)
	assert.Equal(t, Fail, v.Decisions[0].Outcome, "the pairs left decide")
	assert.Regexp(t, `^g\.yaml:3: c=8/loop=closed: too high sidecar CPU per 1k req: .*; 1 pair left out: its CPU figures are not valid \(cpu-diluted\)$`, v.Decisions[0].Reason)
}
