package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairsWithLogRatios returns reference 100 (and 50 for odd i, to show that
// only ratios count) and candidate reference·e^x[i].
func pairsWithLogRatios(x ...float64) (ref, cand []float64) {
	for i, v := range x {
		r := 100.0
		if i%2 == 1 {
			r = 50
		}
		ref = append(ref, r)
		cand = append(cand, r*math.Exp(v))
	}
	return ref, cand
}

func TestTQuantileMatchesTables(t *testing.T) {
	// Two-sided 95 % critical values from any t table.
	for df, want := range map[int]float64{1: 12.7062, 2: 4.3027, 5: 2.5706, 10: 2.2281, 30: 2.0423, 1000: 1.9623} {
		assert.InDelta(t, want, TQuantile(0.95, df), 5e-5, "df=%d", df)
	}
	assert.InDelta(t, 2.0150, TQuantile(0.90, 5), 5e-5)
	assert.True(t, math.IsNaN(TQuantile(0.95, 0)))
}

func TestPairedLogRatio(t *testing.T) {
	// ln ratios 0.1 … 0.6: mean 0.35, sd √0.035 = 0.187083, half-width
	// 2.570582 · 0.187083 / √6 = 0.196331; e^0.35 = 1.419068,
	// e^0.153669 = 1.166104, e^0.546331 = 1.726906.
	ref, cand := pairsWithLogRatios(0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
	r, err := PairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	assert.Equal(t, 6, r.N)
	assert.Equal(t, 0.95, r.Confidence)
	assert.InDelta(t, 0.35, r.LogMean, 1e-12)
	assert.InDelta(t, 0.187083, r.LogSD, 1e-6)
	assert.InDelta(t, 0.196331, r.LogHalfWidth, 1e-6)
	assert.InDelta(t, 1.419068, r.Ratio, 1e-6)
	assert.InDelta(t, 1.166104, r.Lo, 1e-6)
	assert.InDelta(t, 1.726906, r.Hi, 1e-6)
	assert.Equal(t, "1.42 (1.17–1.73, n=6)", r.Summary().String())
}

func TestPairedLogRatioIsSymmetricInTheArms(t *testing.T) {
	ref, cand := pairsWithLogRatios(0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
	ab, err := PairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	ba, err := PairedLogRatio(cand, ref, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, 1/ab.Ratio, ba.Ratio, 1e-12)
	assert.InDelta(t, 1/ab.Hi, ba.Lo, 1e-12)
	assert.InDelta(t, 1/ab.Lo, ba.Hi, 1e-12)
}

func TestPairedLogRatioWithNoSpreadIsAPoint(t *testing.T) {
	r, err := PairedLogRatio([]float64{1, 2, 4}, []float64{1.25, 2.5, 5}, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, 1.25, r.Ratio, 1e-12)
	assert.InDelta(t, 1.25, r.Lo, 1e-12)
	assert.InDelta(t, 1.25, r.Hi, 1e-12)
	assert.InDelta(t, 0, r.LogHalfWidth, 1e-12)
}

func TestPairedLogRatioErrors(t *testing.T) {
	for _, tc := range []struct {
		ref, cand []float64
		conf      float64
		want      string
	}{
		{[]float64{1, 2}, []float64{1}, 0.95, "stats: 2 reference repeats but 1 candidate: repeats must come in pairs"},
		{[]float64{1}, []float64{1}, 0.95, "stats: an interval needs at least 2 pairs"},
		{nil, nil, 0.95, "stats: an interval needs at least 2 pairs"},
		{[]float64{1, 0}, []float64{1, 1}, 0.95, "stats: pair 1: reference is 0; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, 1}, []float64{-1, 1}, 0.95, "stats: pair 0: candidate is -1; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, 1}, []float64{1, math.NaN()}, 0.95, "stats: pair 1: candidate is NaN; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, math.Inf(1)}, []float64{1, 1}, 0.95, "stats: pair 1: reference is +Inf; a ratio on the log scale needs finite values > 0"},
		{[]float64{1, 1}, []float64{1, 1}, 95, "stats: confidence 95: want a level between 0 and 1, e.g. 0.95"},
		{[]float64{1, 1}, []float64{1, 1}, 0, "stats: confidence 0: want a level between 0 and 1, e.g. 0.95"},
	} {
		_, err := PairedLogRatio(tc.ref, tc.cand, tc.conf)
		assert.EqualError(t, err, tc.want)
	}
}

// TestWithRunSD widens the example above for a run-level offset of SD
// 0.1: half-width 2.570582·√(0.187083²/6 + 0.1²) = 2.570582·0.125831 =
// 0.323458; e^(0.35 ∓ 0.323458) = 1.026898 and 1.961006.
func TestWithRunSD(t *testing.T) {
	ref, cand := pairsWithLogRatios(0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
	r, err := PairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	w := r.WithRunSD(0.1)
	assert.InDelta(t, 0.323458, w.LogHalfWidth, 1e-6)
	assert.InDelta(t, 1.026898, w.Lo, 1e-6)
	assert.InDelta(t, 1.961006, w.Hi, 1e-6)
	assert.Equal(t, r.Ratio, w.Ratio, "the ratio stays")
	assert.Equal(t, r.LogSD, w.LogSD, "the pairs' spread stays")
	assert.Equal(t, 0.1, w.RunSD)
	assert.Equal(t, r, r.WithRunSD(0), "no offset: unchanged")
	// A sequential interval widens with its own boundary: c·√(se² + 0.1²).
	s := RatioInterval{N: 4, LogMean: 0, LogSD: 0.2, LogHalfWidth: 3 * 0.1, Sequential: true, Critical: 3, Confidence: 0.95}
	assert.InDelta(t, 3*math.Sqrt(0.01+0.01), s.WithRunSD(0.1).LogHalfWidth, 1e-12)
	// No spread between the pairs: the run-level offset alone.
	p := RatioInterval{N: 3, LogMean: 0, LogSD: 0, Confidence: 0.95}
	assert.InDelta(t, 4.302653*0.05, p.WithRunSD(0.05).LogHalfWidth, 1e-6)
}

// TestPairsToResolveRun: a run-level offset puts a floor under the
// half-width, z·runSD, that no number of pairs passes.
func TestPairsToResolveRun(t *testing.T) {
	assert.Equal(t, PairsToResolve(0.1, 0.05, 0.95, 1000), PairsToResolveRun(0.1, 0, 0.05, 0.95, 1000))
	// t(N-1)·√(0.01/N + 0.0004) < 0.05: N=47: 2.0129·√(0.0002128+0.0004)
	// = 0.04983 (yes); N=46: 2.0141·√(0.0002174+0.0004) = 0.05005 (no).
	assert.Equal(t, 47, PairsToResolveRun(0.1, 0.02, 0.05, 0.95, 1000))
	assert.Equal(t, -1, PairsToResolveRun(0.1, 0.03, 0.05, 0.95, 100000), "1.96·0.03 ≥ 0.05: never")
	assert.Equal(t, -1, PairsToResolveRun(0, 0.03, 0.05, 0.95, 1000), "the offset alone is too wide")
	assert.Equal(t, 3, PairsToResolveRun(0, 0.01, 0.05, 0.95, 1000), "t(2)·0.01 = 0.043 < 0.05; t(1)·0.01 = 0.127 is not")
}

func TestPairsToResolve(t *testing.T) {
	// Need t(N-1)·0.1/√N < 0.05, i.e. t(N-1)/√N < 0.5:
	// N=17: 2.1199/√17 = 0.5141 (no); N=18: 2.1098/√18 = 0.4973 (yes).
	assert.Equal(t, 18, PairsToResolve(0.1, 0.05, 0.95, 1000))
	// The example above: sd 0.187083, distance to ln 1.1 from 0.35 is
	// 0.254690; N=2: 12.706·0.187083/√2 = 1.6809 (no), N=3: 4.3027·0.187083/√3
	// = 0.4647 (no), N=4: 3.1824·0.187083/2 = 0.2977 (no), N=5:
	// 2.7764·0.187083/√5 = 0.2323 (yes).
	assert.Equal(t, 5, PairsToResolve(0.18708286933869706, 0.35-math.Log(1.1), 0.95, 1000))
	assert.Equal(t, 2, PairsToResolve(0, 0.01, 0.95, 1000), "no spread: the fewest pairs")
	assert.Equal(t, -1, PairsToResolve(0.1, 0, 0.95, 1000), "an estimate on the limit never clears it")
	assert.Equal(t, -1, PairsToResolve(0.1, 0.05, 0.95, 17), "beyond the budget")
	assert.Equal(t, 18, PairsToResolve(0.1, 0.05, 0.95, 18))
}
