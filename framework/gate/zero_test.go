package gate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func p99Gate(t *testing.T) *Gate {
	t.Helper()
	g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {}\n    maxIncreasePct: 15\n"))
	require.NoError(t, err)
	return g
}

// A 0 or a NaN in a valid run leaves its pair out of that metric's
// decision, saying so; the verdict is decided on the other pairs.
func TestZeroOrNaNLeavesThePairOut(t *testing.T) {
	m := Measurement{Scenario: Labels{"c": "8"}, Metric: P99,
		Reference: []float64{10, 10.1, 9.9, math.NaN(), 10, 10.05, 9.95},
		Candidate: []float64{10, 0, 9.9, 10, 10.1, 10, 10}}
	v, err := p99Gate(t).Decide([]Measurement{m})
	require.NoError(t, err)
	require.Len(t, v.Decisions, 1)
	d := v.Decisions[0]
	assert.Equal(t, Pass, d.Outcome)
	assert.Equal(t, 5, d.Interval.N)
	assert.Equal(t, []float64{10, 9.9, 10, 10.05, 9.95}, d.Reference)
	assert.Equal(t, "g.yaml:3: c=8: p99 latency within limit: candidate/reference 1.00 (0.99–1.01, n=5) expected ≤ 1.15; "+
		"2 pairs left out of p99 latency: a value of 0 or NaN, which has no ratio", d.Reason)

	// Against a stored reference each run's bad repeats go alone.
	m = Measurement{Scenario: Labels{"c": "8"}, Metric: P99, Unpaired: true,
		Reference: []float64{10, 10.1, 0, 9.9}, Candidate: []float64{10, 10.1, 9.9, math.Inf(1), 10}}
	v, err = p99Gate(t).Decide([]Measurement{m})
	require.NoError(t, err)
	d = v.Decisions[0]
	assert.Equal(t, 3, d.Interval.NReference)
	assert.Equal(t, 4, d.Interval.NCandidate)
	assert.Contains(t, d.Reason, "; 2 repeats left out of p99 latency: a value of 0 or NaN, which has no ratio")
}

// Zero spread does not decide at 3 pairs: ratios that do not vary at
// all say the figures are quantised, and only a sign test decides
// without a spread, at 6 pairs at 95 %.
func TestZeroSpreadDecidesOnlyAtTheSignTestsPairs(t *testing.T) {
	assert.Equal(t, 6, SignTestPairs(0.95))
	assert.Equal(t, 5, SignTestPairs(0.90))
	same := func(n int, x float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	m := Measurement{Scenario: Labels{"c": "8"}, Metric: P99, Reference: same(3, 10), Candidate: same(3, 10)}
	v, err := p99Gate(t).Decide([]Measurement{m})
	require.NoError(t, err)
	d := v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.True(t, d.ZeroSpread)
	assert.Equal(t, 3, d.PairsNeeded)
	assert.Equal(t, "g.yaml:3: c=8: inconclusive p99 latency: candidate/reference 1.00 at every one of n=3: zero spread, so the figures are quantised and an interval says nothing; "+
		"without a spread, 6 pairs all on one side of ≤ 1.15 decide it (sign test: SignTestPairs)", d.Reason)

	m.Reference, m.Candidate = same(6, 10), same(6, 20)
	v, err = p99Gate(t).Decide([]Measurement{m})
	require.NoError(t, err)
	assert.Equal(t, Fail, v.Decisions[0].Outcome, v.Decisions[0].Reason)
	assert.False(t, v.Decisions[0].ZeroSpread)
}
