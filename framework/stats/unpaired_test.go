package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample returns 100·e^x for each x.
func sample(x ...float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = 100 * math.Exp(v)
	}
	return out
}

func TestUnpairedLogRatio(t *testing.T) {
	// ln values 0, 0.1, 0.2 against 0.5, 0.6, 0.7: equal variances 0.01 and
	// n = 3, so Welch's ν is 4, t(0.975, 4) = 2.776445; se = √(0.02/3) =
	// 0.081650, h = 0.226696; e^0.5 = 1.648721, e^0.273304 = 1.314300,
	// e^0.726696 = 2.068235.
	r, err := UnpairedLogRatio(sample(0, 0.1, 0.2), sample(0.5, 0.6, 0.7), 0.95)
	require.NoError(t, err)
	assert.True(t, r.Unpaired)
	assert.Equal(t, 3, r.N)
	assert.InDelta(t, 4, r.DF, 1e-9)
	assert.InDelta(t, 0.5, r.LogMean, 1e-12)
	assert.InDelta(t, math.Sqrt(0.02), r.LogSD, 1e-12)
	assert.InDelta(t, 0.226696, r.LogHalfWidth, 1e-6)
	assert.InDelta(t, 1.648721, r.Ratio, 1e-6)
	assert.InDelta(t, 1.314300, r.Lo, 1e-6)
	assert.InDelta(t, 2.068235, r.Hi, 1e-6)
}

// The same numbers matched pair by pair have no spread at all (every log
// ratio is 0.5); unpaired, the spread of both samples counts.
func TestUnpairedLogRatioIsWiderThanPaired(t *testing.T) {
	ref, cand := sample(0, 0.1, 0.2), sample(0.5, 0.6, 0.7)
	p, err := PairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	u, err := UnpairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, p.Ratio, u.Ratio, 1e-12)
	assert.InDelta(t, 0, p.LogHalfWidth, 1e-12)
	assert.Greater(t, u.LogHalfWidth, 0.2)
}

func TestUnpairedLogRatioOfUnequalSamples(t *testing.T) {
	// var 0.01 over 3 against var 0.2/3 over 4: ν = 0.02² / ((0.01/3)²/2 +
	// (0.2/12)²/3) = 4.075472.
	r, err := UnpairedLogRatio(sample(0, 0.1, 0.2), sample(0.5, 0.7, 0.9, 1.1), 0.95)
	require.NoError(t, err)
	assert.Equal(t, 3, r.N)
	assert.InDelta(t, 4.075472, r.DF, 1e-6)
	assert.InDelta(t, 0.7, r.LogMean, 1e-12)
}

func TestUnpairedLogRatioWithNoSpreadIsAPoint(t *testing.T) {
	r, err := UnpairedLogRatio([]float64{2, 2}, []float64{3, 3, 3}, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, 1.5, r.Ratio, 1e-12)
	assert.InDelta(t, 1.5, r.Lo, 1e-12)
	assert.InDelta(t, 1.5, r.Hi, 1e-12)
	assert.InDelta(t, 3, r.DF, 1e-12)
}

func TestUnpairedLogRatioErrors(t *testing.T) {
	for _, tc := range []struct {
		ref, cand []float64
		conf      float64
		want      string
	}{
		{[]float64{1}, []float64{1, 2}, 0.95, "stats: an unpaired interval needs at least 2 reference repeats"},
		{[]float64{1, 2}, nil, 0.95, "stats: an unpaired interval needs at least 2 candidate repeats"},
		{[]float64{1, 0}, []float64{1, 1}, 0.95, "stats: reference repeat 1 is 0; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, 1}, []float64{math.Inf(1), 1}, 0.95, "stats: candidate repeat 0 is +Inf; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, 1}, []float64{1, 1}, 1, "stats: confidence 1: want a level between 0 and 1, e.g. 0.95"},
	} {
		_, err := UnpairedLogRatio(tc.ref, tc.cand, tc.conf)
		assert.EqualError(t, err, tc.want)
	}
}
