package stats_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
)

// Lan-DeMets O'Brien-Fleming-type spending, 5 equally spaced looks, known
// variance, one-sided α = 0.025 (gsDesign's sfLDOF): the published upper
// bounds are 4.877, 3.357, 2.680, 2.290 and 2.031. A symmetric two-sided
// plan that spends that on each side has the same bounds but for the
// paths that cross both ways, which are negligible. The first two looks
// spend under 1e-4 of α, beyond what 400000 paths resolve; the last three
// are checked.
func TestBoundsMatchPublishedOBrienFleming(t *testing.T) {
	perSide := func(alpha, t float64) float64 { return 2 * stats.OBrienFlemingSpending(alpha/2, t) }
	b, err := stats.SequentialPlan{First: 1, Max: 5, Alpha: 0.05, Spend: perSide, Statistic: stats.KnownVariance, Sims: 400000}.Bounds()
	require.NoError(t, err)
	for n, want := range map[int]float64{3: 2.680, 4: 2.290, 5: 2.031} {
		assert.InDelta(t, want, b.At(n), 0.03, "look %d", n)
	}
}

// One look is a fixed-sample test: the boundary is Student's t quantile.
func TestBoundsOneLookIsStudentT(t *testing.T) {
	for _, n := range []int{3, 6, 12} {
		b, err := stats.SequentialPlan{First: n, Max: n, Alpha: 0.05, Spend: stats.PocockSpending, Sims: 400000}.Bounds()
		require.NoError(t, err)
		assert.InDelta(t, stats.TQuantile(0.95, n-1), b.At(n), 0.02*stats.TQuantile(0.95, n-1), "n=%d", n)
	}
}

// The repeated intervals keep their promise on paths the boundaries were
// not set from (another seed): looking after every pair from 3 to 20, the
// share of normal paths whose interval misses the true mean at some look
// is α = 0.05, within the simulation's error. The fixed-sample 95 % t
// interval, looked at as often, misses on far more of them: the
// inflation the sequential plan exists to prevent.
func TestRepeatedIntervalsCoverAtEveryLook(t *testing.T) {
	b, err := stats.SequentialPlan{First: 3, Max: 20, Alpha: 0.05, Spend: stats.PocockSpending}.Bounds()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 7))
	const paths = 20000
	missed, naive := 0, 0
	for range paths {
		mu := rng.NormFloat64()
		ref, cand := make([]float64, 0, 20), make([]float64, 0, 20)
		hitR, hitN := false, false
		for n := 1; n <= 20; n++ {
			ref = append(ref, 1)
			cand = append(cand, math.Exp(mu+0.1*rng.NormFloat64()))
			if n < 3 {
				continue
			}
			iv, err := stats.RepeatedLogRatio(ref, cand, b)
			require.NoError(t, err)
			hitR = hitR || math.Log(iv.Lo) > mu || math.Log(iv.Hi) < mu
			fixed, err := stats.PairedLogRatio(ref, cand, 0.95)
			require.NoError(t, err)
			hitN = hitN || math.Log(fixed.Lo) > mu || math.Log(fixed.Hi) < mu
		}
		if hitR {
			missed++
		}
		if hitN {
			naive++
		}
	}
	assert.InDelta(t, 0.05, float64(missed)/paths, 0.006, "repeated intervals: %d of %d paths missed at some look", missed, paths)
	assert.Greater(t, float64(naive)/paths, 0.15, "fixed-sample intervals looked at 18 times: %d of %d paths missed", naive, paths)
}

// A repeated interval is PairedLogRatio's, widened to the plan's boundary.
func TestRepeatedLogRatio(t *testing.T) {
	b, err := stats.SequentialPlan{First: 3, Max: 10, Alpha: 0.05, Spend: stats.PocockSpending}.Bounds()
	require.NoError(t, err)
	ref, cand := []float64{100, 100, 100, 100}, []float64{110, 105, 112, 108}
	iv, err := stats.RepeatedLogRatio(ref, cand, b)
	require.NoError(t, err)
	fixed, err := stats.PairedLogRatio(ref, cand, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, fixed.Ratio, iv.Ratio, 1e-12)
	assert.InDelta(t, b.At(4)*fixed.LogSD/2, iv.LogHalfWidth, 1e-12)
	assert.Greater(t, b.At(4), stats.TQuantile(0.95, 3), "wider than one look's t interval")
	assert.True(t, iv.Sequential)
	assert.Equal(t, 0.95, iv.Confidence)
	_, err = stats.RepeatedLogRatio(ref[:2], cand[:2], b)
	assert.EqualError(t, err, "stats: 2 pairs: the sequential plan looks at 3 to 10")
}

// Yuen's trimmed mean and standard error, by hand: 10 values, a tenth
// trimmed from each end (g = 1, h = 8): the mean of 2…9 is 5.5; winsorized
// to 2,2,3,…,8,9,9 (mean 5.5, sum of squares 66.5) the standard error is
// √(66.5/(8·7)) = 1.089725. The wild 100 moves neither. Untrimmed, they
// are the mean and s/√n.
func TestTrimmedMean(t *testing.T) {
	x := []float64{9, 1, 100, 3, 2, 5, 4, 7, 6, 8}
	m, se := stats.TrimmedMean(x, 0.1)
	assert.InDelta(t, 5.5, m, 1e-12)
	assert.InDelta(t, math.Sqrt(66.5/56), se, 1e-12)
	assert.Equal(t, []float64{9, 1, 100, 3, 2, 5, 4, 7, 6, 8}, x, "x is not reordered")
	m, se = stats.TrimmedMean([]float64{1, 2, 3, 4}, 0.1) // g = 0
	assert.InDelta(t, 2.5, m, 1e-12)
	assert.InDelta(t, math.Sqrt(5.0/3)/2, se, 1e-12)
}

// The trimmed plan keeps its promise too, and one wild pair in twenty
// barely widens its interval, where it would widen Student's to its own
// size.
func TestTrimmedRepeatedIntervals(t *testing.T) {
	b, err := stats.SequentialPlan{First: 3, Max: 20, Alpha: 0.05, Spend: stats.PocockSpending, Trim: 0.1}.Bounds()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(9, 9))
	const paths = 10000
	missed := 0
	for range paths {
		ref, cand := make([]float64, 0, 20), make([]float64, 0, 20)
		hit := false
		for n := 1; n <= 20; n++ {
			ref, cand = append(ref, 1), append(cand, math.Exp(0.1*rng.NormFloat64()))
			if n >= 3 {
				iv, err := stats.RepeatedLogRatio(ref, cand, b)
				require.NoError(t, err)
				hit = hit || iv.Lo > 1 || iv.Hi < 1
			}
		}
		if hit {
			missed++
		}
	}
	assert.InDelta(t, 0.05, float64(missed)/paths, 0.008, "%d of %d paths missed at some look", missed, paths)

	plain, err := stats.SequentialPlan{First: 3, Max: 20, Alpha: 0.05, Spend: stats.PocockSpending}.Bounds()
	require.NoError(t, err)
	ref, cand := make([]float64, 20), make([]float64, 20)
	for i := range ref {
		ref[i], cand[i] = 1, math.Exp(0.02*float64(i%5-2))
	}
	cand[7] = math.Exp(1.2) // one disturbed round
	trimmed, err := stats.RepeatedLogRatio(ref, cand, b)
	require.NoError(t, err)
	mean, err := stats.RepeatedLogRatio(ref, cand, plain)
	require.NoError(t, err)
	assert.Less(t, trimmed.LogHalfWidth, 0.06, "trimmed: %.3f (%.3f–%.3f)", trimmed.Ratio, trimmed.Lo, trimmed.Hi)
	assert.Greater(t, mean.LogHalfWidth, 0.15, "mean: %.3f (%.3f–%.3f)", mean.Ratio, mean.Lo, mean.Hi)
	assert.InDelta(t, 0.1, trimmed.Trim, 0)
}
