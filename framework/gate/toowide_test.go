package gate

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
)

// An undecided interval too wide to mean anything (wider than ×2 either
// way) is shown as "too few pairs", with the pairs that would give an
// interval as narrow as the limit: at n=3, open-loop p99 ratios of 1, 3
// and 0.6 (log spread 0.8224) against a 15 % limit, at the decision's 90 %
// (each decision errs one way only), need 96 pairs: the smallest N with
// t(0.95, N-1)·0.8224/√N < ln 1.15.
func TestTooWideAnIntervalIsTooFewPairs(t *testing.T) {
	g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {}\n    maxIncreasePct: 15\n"))
	require.NoError(t, err)
	m := Measurement{Scenario: Labels{"c": "8", "loop": "open"}, Metric: P99,
		Reference: []float64{10, 10, 10}, Candidate: []float64{10, 30, 6}}
	v, err := g.DecideSequential([]Measurement{m}, Sequential{Max: 30, Decisions: 1})
	require.NoError(t, err)
	d := v.Decisions[0]
	require.Equal(t, Inconclusive, d.Outcome)
	assert.True(t, d.TooWide(), "half-width %v", d.Interval.LogHalfWidth)
	assert.InDelta(t, 0.8224, d.Interval.LogSD, 1e-4)
	assert.InDelta(t, 0.90, d.Interval.Confidence, 1e-12)
	assert.Equal(t, 96, d.UsablePairs())
	// by hand: 96 is the first N at which the t interval clears ln 1.15
	tq := func(n int) float64 { return tQuantileForTest(0.90, n-1) * d.Interval.LogSD / math.Sqrt(float64(n)) }
	assert.Less(t, tq(96), math.Log(1.15))
	assert.GreaterOrEqual(t, tq(95), math.Log(1.15))

	assert.Equal(t, "g.yaml:3: c=8/loop=open: inconclusive p99 latency: candidate/reference 1.22, too few pairs (n=3; about 96 would give a usable interval) straddles ≤ 1.15; "+
		"about 579 more pairs would settle it if the spread holds", d.Reason)
	var md bytes.Buffer
	require.NoError(t, v.Markdown(&md, "x"))
	assert.Contains(t, md.String(), "| c=8/loop=open | p99 latency | 10 | 10 | 1.22, too few pairs (n=3; about 96 would give a usable interval) | ≤ 1.15 | 3 | *inconclusive* |\n")
	assert.False(t, strings.Contains(md.String(), "0.00–"), md.String())
}

func tQuantileForTest(conf float64, df int) float64 { return stats.TQuantile(conf, df) }
