package history

import (
	"bufio"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Apache Otava's test cases (tests/analysis_test.py,
// change_point_divisive_test.py, series_test.py, tigerbeetle_test.py):
// the same series, options and change-point indices.

// otavaSequence is change_point_divisive_test.py's SEQUENCE.
var otavaSequence = []float64{0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0}

func indices(cps []Split) []int {
	out := []int{}
	for _, c := range cps {
		out = append(out, c.Index)
	}
	return out
}

func detect(t *testing.T, xs []float64, o Options) []int {
	t.Helper()
	cps, err := Detect(xs, o)
	require.NoError(t, err)
	return indices(cps)
}

// slowQ is Q(τ, κ) straight from its definition (Otava's
// compute_Q_and_candidate_slow).
func slowQ(xs []float64, tau, kappa int) float64 {
	x, y := xs[:tau], xs[tau:kappa]
	n, m := float64(len(x)), float64(len(y))
	a, b, c := 0.0, 0.0, 0.0
	for _, xi := range x {
		for _, yj := range y {
			a += math.Abs(xi - yj)
		}
	}
	a *= 2 / (m + n)
	for i := range x {
		for k := i + 1; k < len(x); k++ {
			b += math.Abs(x[i] - x[k])
		}
	}
	if n > 1 {
		b *= 2 * m / (m + n) / (n - 1)
	}
	for j := range y {
		for k := j + 1; k < len(y); k++ {
			c += math.Abs(y[j] - y[k])
		}
	}
	if m > 1 {
		c *= 2 * n / (m + n) / (m - 1)
	}
	return a - b - c
}

func TestQMatchesItsDefinition(t *testing.T) {
	xs := otavaSequence
	q := newCalculator(xs).q(0, len(xs))
	bestTau, bestQ := 0, 0.0
	for tau := 1; tau < len(xs); tau++ {
		for kappa := tau + 1; kappa <= len(xs); kappa++ {
			want := slowQ(xs, tau, kappa)
			assert.InDelta(t, want, q[tau-1][kappa-2], 1e-9, "τ=%d κ=%d", tau, kappa)
			if want > bestQ {
				bestTau, bestQ = tau, want
			}
		}
	}
	idx, qhat := newCalculator(xs).candidate(0, len(xs))
	assert.Equal(t, bestTau, idx)
	assert.InDelta(t, bestQ, qhat, 1e-9)
}

func TestQOfASubsegmentIsItsOwn(t *testing.T) {
	// A segment's candidate is found on the whole series' sums, less what
	// lies before the segment: the same as on the segment alone.
	xs := otavaSequence
	whole := newCalculator(xs).q(3, 11)
	alone := newCalculator(xs[3:11]).q(0, 8)
	for i := range alone {
		assert.InDeltaSlice(t, alone[i], whole[i], 1e-9, "row %d", i)
	}
}

func TestDivideWithTTest(t *testing.T) { // test_ttest
	assert.Equal(t, []int{5, 8}, indices(divide(otavaSequence, 0.01)))
}

func TestTTestSignificance(t *testing.T) { // test_significance_tester
	flat := []float64{1.00, 1.02, 1.05, 0.95, 0.98, 1.00, 1.02, 1.05, 0.95, 0.98}
	s := ttest(flat[:5], flat[5:])
	assert.InDelta(t, 1.0, s.PValue, 0.01)
	step := []float64{1.00, 1.02, 1.05, 0.95, 0.98, 0.80, 0.82, 0.85, 0.79, 0.77}
	s = ttest(step[:5], step[5:])
	assert.Greater(t, s.PValue, 0.0)
	assert.Less(t, s.PValue, 0.001)
}

func TestOtavaSingleSeries(t *testing.T) { // test_single_series
	xs := []float64{1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51, 0.50, 0.49}
	assert.Equal(t, []int{10}, detect(t, xs, Options{Window: 10, PValue: 0.0001}))
}

var (
	otavaSeries1 = []float64{1.02, 0.95, 0.99, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55}
	otavaSeries2 = []float64{2.02, 2.03, 2.01, 2.04, 1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78}
)

func TestOtavaSeriesDefaults(t *testing.T) { // test_change_point_detection
	assert.Equal(t, []int{6}, detect(t, otavaSeries1, Options{}))
	assert.Equal(t, []int{4}, detect(t, otavaSeries2, Options{}))
}

func TestOtavaMinMagnitude(t *testing.T) { // test_change_point_min_magnitude
	assert.Equal(t, []int{6}, detect(t, otavaSeries1, Options{MinMagnitude: 0.2}))
	assert.Equal(t, []int{}, detect(t, otavaSeries2, Options{MinMagnitude: 0.2}))
}

func TestOtavaDivisionByZero(t *testing.T) { // test_div_by_zero
	xs := []float64{0.0, 0.0, 0.0, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55}
	got := detect(t, xs, Options{})
	require.Len(t, got, 2)
	assert.Equal(t, 3, got[0])
}

func tigerbeetle(t *testing.T) []float64 {
	t.Helper()
	f, err := os.Open("testdata/otava-tigerbeetle.txt")
	require.NoError(t, err)
	defer f.Close()
	var xs []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		x, err := strconv.ParseFloat(line, 64)
		require.NoError(t, err)
		xs = append(xs, x)
	}
	require.NoError(t, sc.Err())
	require.Len(t, xs, 365)
	return xs
}

func TestOtavaTigerbeetle(t *testing.T) { // tigerbeetle_test.py
	xs := tigerbeetle(t)
	for _, tc := range []struct {
		p, mag float64
		want   []int
	}{
		{0.01, 0.05, []int{15, 71}},
		{0.05, 0.05, []int{15, 71}},
		{0.1, 0.05, []int{10, 11, 15, 71, 363}},
		{0.2, 0.05, []int{10, 11, 15, 71}},
		{0.2, 0, []int{3, 6, 7, 10, 11, 13, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 56, 58, 61, 65, 66, 69, 71, 74, 76, 82, 95, 108, 117, 125, 126, 129, 131, 136, 137, 142, 148, 165, 169, 187, 190, 192, 197, 200, 212, 220, 241, 243, 246, 247, 249, 250, 260, 265, 266, 268, 278, 282, 288, 305, 306, 325, 330, 337, 338, 340, 347, 349, 363}},
		{0.1, 0, []int{3, 6, 10, 11, 15, 16, 28, 29, 35, 37, 39, 41, 44, 48, 49, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 206, 212, 260, 265, 268, 278, 282, 288, 305, 363}},
		{0.01, 0, []int{15, 26, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 212, 260}},
		{0.001, 0, []int{15, 61, 71, 95, 117, 131, 142, 148, 192, 212, 260}},
		{0.0001, 0, []int{71, 95, 117, 131, 142, 148, 192, 212}},
		{0.00001, 0, []int{71, 95, 131, 192, 212}},
	} {
		assert.Equal(t, tc.want, detect(t, xs, Options{Window: 30, PValue: tc.p, MinMagnitude: tc.mag}), "p=%v magnitude=%v", tc.p, tc.mag)
	}
}

// steps is a seeded noisy series: level levels[k] for lengths[k] values,
// each with Gaussian noise of relative spread sd.
func steps(seed uint64, sd float64, levels []float64, lengths []int) []float64 {
	r := rand.New(rand.NewPCG(seed, 0))
	var xs []float64
	for k, l := range levels {
		for range lengths[k] {
			xs = append(xs, l*(1+sd*r.NormFloat64()))
		}
	}
	return xs
}

func TestSyntheticStepsAreFoundExactly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		levels  []float64
		lengths []int
		want    []int
	}{
		{"one step up, 6 runs each side", []float64{1, 1.2}, []int{6, 6}, []int{6}},
		{"one step down", []float64{10, 8}, []int{20, 15}, []int{20}},
		{"up then back", []float64{1, 1.3, 1}, []int{15, 10, 15}, []int{15, 25}},
		{"a creep of three 10 % steps", []float64{100, 110, 121, 133}, []int{20, 20, 20, 20}, []int{20, 40, 60}},
	} {
		for _, seed := range []uint64{1, 2} {
			xs := steps(seed, 0.02, tc.levels, tc.lengths)
			assert.Equal(t, tc.want, detect(t, xs, Options{}), "%s, seed %d", tc.name, seed)
		}
	}
}

func TestFlatNoisySeriesHasNoChangePoint(t *testing.T) {
	for _, n := range []int{12, 40} {
		xs := steps(1, 0.05, []float64{1}, []int{n})
		assert.Empty(t, detect(t, xs, Options{}), "%d runs", n)
	}
}

// TestDetectionRates pins what the method does over many seeded series
// at the default p-value (docs/reports-and-history.md quotes these figures): a 20 % step
// between 6 and 6 runs with 2 % noise is found, exactly and alone, in 395 of 400;
// flat series give a false change point in 7 of 400 (12 runs) and 16 of
// 400 (40 runs), none beyond 3.6 noise standard deviations. The t-test
// is run on the split E-divisive chose as the best, so its p-value is
// optimistic.
func TestDetectionRates(t *testing.T) {
	const n, sd = 400, 0.02
	exact := 0
	for seed := range uint64(n) {
		if got := detect(t, steps(seed, sd, []float64{1, 1.2}, []int{6, 6}), Options{}); len(got) == 1 && got[0] == 6 {
			exact++
		}
	}
	assert.Equal(t, 395, exact, "20 percent step found exactly (the rest: a false change beside it)")
	for _, tc := range []struct{ runs, false int }{{12, 7}, {40, 16}} {
		alarms, worst := 0, 0.0
		for seed := range uint64(n) {
			cps, err := Detect(steps(seed, sd, []float64{1}, []int{tc.runs}), Options{})
			require.NoError(t, err)
			if len(cps) > 0 {
				alarms++
			}
			for _, c := range cps {
				worst = max(worst, math.Abs(c.Ratio()-1)/sd)
			}
		}
		assert.Equal(t, tc.false, alarms, "flat series of %d runs with a change point", tc.runs)
		assert.Less(t, worst, 3.6, "largest false change, in noise standard deviations")
	}
}

func TestSplitStatistics(t *testing.T) {
	cps, err := Detect([]float64{1, 1, 1, 1, 2, 2, 2, 2}, Options{})
	require.NoError(t, err)
	require.Len(t, cps, 1)
	assert.Equal(t, Split{Index: 4, MeanBefore: 1, MeanAfter: 2, PValue: 0}, cps[0])
	assert.Equal(t, 2.0, cps[0].Ratio())
}

func TestDetectRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		o    Options
		want string
	}{
		{nil, Options{PValue: 1}, "p-value 1: want a level between 0 and 1, e.g. 0.001"},
		{nil, Options{Window: 1}, "window 1: want at least 2 runs"},
		{nil, Options{MinMagnitude: -1}, "minimum magnitude -1: want ≥ 0"},
		{[]float64{1, math.NaN()}, Options{}, "value 1 is NaN: want a finite number"},
	} {
		_, err := Detect(tc.xs, tc.o)
		assert.EqualError(t, err, tc.want)
	}
}
