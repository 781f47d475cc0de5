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
	assert.Equal(t, 3, r.NReference)
	assert.Equal(t, 4, r.NCandidate)
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

// A fixed reference of 6 repeats with log variance 0.0002 (w_a = 0.0002/6
// = 0.000033) against candidate repeats with log variance 0.01, to clear a
// distance of 0.05 at 95 %: z = 1.959964, so w_b = 0.01/N must stay below
// 0.05²/z² - w_a = 0.000617, i.e. N > 16.195: the walk starts at 17.
//
//	N=17: ν = 17.683008, t = 2.103625, h = 0.052446 (no)
//	N=18: ν = 18.870228, t = 2.093999, h = 0.050815 (no)
//	N=19: ν = 20.062498, t = 2.085547, h = 0.049338 (yes)
func TestCandidateRepeatsToResolve(t *testing.T) {
	ref := sample(0, 0.02, -0.02, 0.01, -0.01, 0)
	cand := sample(0, 0.1, 0.2)
	assert.Equal(t, 19, CandidateRepeatsToResolve(ref, cand, 0.05, 0.95, 1000))
	assert.Equal(t, 19, CandidateRepeatsToResolve(ref, cand, 0.05, 0.95, 19))
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, cand, 0.05, 0.95, 18), "beyond the budget")
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, cand, 0, 0.95, 1000), "an estimate on the limit never clears it")
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref[:1], cand, 0.05, 0.95, 1000), "one reference repeat has no spread to hold")
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, cand[:1], 0.05, 0.95, 1000), "one candidate repeat has no spread to hold")
	assert.Equal(t, 2, CandidateRepeatsToResolve([]float64{2, 2}, []float64{3, 3, 3}, 0.01, 0.95, 1000), "no spread: the fewest repeats")
	// No spread in the candidate: ν = n_a - 1 and the half-width is the
	// reference's own at every N, t(5)·√(0.0002/6) = 2.570582·0.005774 =
	// 0.014841.
	assert.Equal(t, 2, CandidateRepeatsToResolve(ref, []float64{3, 3}, 0.015, 0.95, 1000))
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, []float64{3, 3}, 0.0148, 0.95, 1000))
}

// Against a reference of 3 repeats with log variance 0.01 the half-width
// tends to the reference's own, t(2)·√(0.01/3) = 4.302653·0.057735 =
// 0.248414, as candidate repeats (log variance 0.01 too) are added; but
// Welch's ν rises above n_a - 1 = 2 on the way, so it dips below that:
//
//	N=3: ν = 4, t = 2.776445, h = 0.226696
//	N=4: ν = 4.454545, t = 2.668204, h = 0.203787
//	N=5: ν = 4.338983, t = 2.692957, h = 0.196666
//	N=6: ν = 4.090909, t = 2.752281, h = 0.194616 (the lowest)
//	N=10: h = 0.198709; N=11: h = 0.200401; N=1000: h = 0.247367
//
// so 0.2 is cleared at N = 5 although the limit is beyond it, and 0.15 never.
func TestCandidateRepeatsToResolveAgainstAWideReference(t *testing.T) {
	ref, cand := sample(0, 0.1, 0.2), sample(0.5, 0.6, 0.7)
	assert.InDelta(t, 0.248414, ReferenceHalfWidth(ref, 0.95), 1e-6)
	assert.Equal(t, 5, CandidateRepeatsToResolve(ref, cand, 0.2, 0.95, 1000))
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, cand, 0.15, 0.95, 1000))
	assert.Equal(t, -1, CandidateRepeatsToResolve(ref, cand, 0.2, 0.95, 4), "beyond the budget")
	assert.True(t, math.IsInf(ReferenceHalfWidth(ref[:1], 0.95), 1))
	assert.Equal(t, 0.0, ReferenceHalfWidth([]float64{2, 2}, 0.95))
}
