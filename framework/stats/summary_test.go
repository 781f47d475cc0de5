package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarizeRange(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		want Summary
	}{
		{"n=0", nil, Summary{}},
		{"n=1", []float64{5}, Summary{Median: 5, Lo: 5, Hi: 5, N: 1}},
		{"n=2", []float64{3, 1}, Summary{Median: 2, Lo: 1, Hi: 3, N: 2}},
		{"n=3", []float64{3, 1, 2}, Summary{Median: 2, Lo: 1, Hi: 3, N: 3}},
		{"n=4", []float64{4, 1, 3, 2}, Summary{Median: 2.5, Lo: 1, Hi: 4, N: 4}},
		{"n=5", []float64{0.875, 0.25, 0.5, 0.125, 0.75}, Summary{Median: 0.5, Lo: 0.125, Hi: 0.875, N: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Summarize(c.xs))
		})
	}
}

// binomialCDFHalf returns P(B <= k) for B ~ Binomial(n, 1/2), from Pascal's
// triangle; exact for the small n used here.
func binomialCDFHalf(n, k int) float64 {
	row := []float64{1}
	for range n {
		next := make([]float64, len(row)+1)
		for i, c := range row {
			next[i] += c
			next[i+1] += c
		}
		row = next
	}
	var s float64
	for i := 0; i <= k; i++ {
		s += row[i]
	}
	return s / math.Exp2(float64(n))
}

// handK picks the order statistic the textbook way: the largest k with
// 1 - 2·P(B <= k-1) >= 0.95.
func handK(n int) (k int, coverage float64) {
	for c := 1; 2*c <= n+1; c++ {
		cv := 1 - 2*binomialCDFHalf(n, c-1)
		if cv < 0.95 {
			break
		}
		k, coverage = c, cv
	}
	return k, coverage
}

func TestSummarizeOrderStatisticInterval(t *testing.T) {
	// k and the exact coverage, by hand: coverage(k) = 1 - 2·Σ_{i<k} C(n,i)/2^n.
	hand := []struct {
		n, k     int
		coverage float64
		conf     float64
	}{
		{6, 1, 62. / 64, 0.969},      // k=2 would cover 1 - 2·7/64 = 0.781
		{7, 1, 126. / 128, 0.984},    // k=2: 1 - 2·8/128 = 0.875
		{8, 1, 254. / 256, 0.992},    // k=2: 1 - 2·9/256 = 0.930
		{9, 2, 492. / 512, 0.961},    // k=2: 1 - 2·(1+9)/512; k=3: 1 - 2·46/512 = 0.820
		{10, 2, 1002. / 1024, 0.979}, // k=2: 1 - 2·11/1024; k=3: 1 - 2·56/1024 = 0.891
		{20, 6, 1 - 2*21700./1048576, 0.959},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, h := range hand {
		k, cov := handK(h.n)
		require.Equal(t, h.k, k, "n=%d: hand table vs binomial CDF", h.n)
		require.Equal(t, h.coverage, cov, "n=%d", h.n)
		gk, gcov := medianInterval(h.n, ConfidenceLevel)
		require.Equal(t, h.k, gk, "n=%d", h.n)
		require.Equal(t, h.coverage, gcov, "n=%d", h.n)

		// Samples 10, 20, …, 10n in random order: x(i) = 10i.
		xs := make([]float64, h.n)
		for i := range xs {
			xs[i] = float64(10 * (i + 1))
		}
		rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		want := Summary{
			Median:     5 * float64(h.n+1), // (x(n/2)+x(n/2+1))/2 or x((n+1)/2)
			Lo:         float64(10 * h.k),
			Hi:         float64(10 * (h.n - h.k + 1)),
			N:          h.n,
			Confidence: h.conf,
		}
		assert.Equal(t, want, Summarize(xs), "n=%d", h.n)
	}
}

func TestSummarizeLargeN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{100, 2001, 10000} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		s := Summarize(xs)
		assert.Equal(t, n, s.N)
		assert.LessOrEqual(t, s.Lo, s.Median)
		assert.LessOrEqual(t, s.Median, s.Hi)
		assert.GreaterOrEqual(t, s.Confidence, 0.95)
		assert.Less(t, s.Confidence, 0.97)
		// Normal approximation: k ≈ n/2 - 1.96·√n/2.
		k, _ := medianInterval(n, ConfidenceLevel)
		approx := float64(n)/2 - 1.96*math.Sqrt(float64(n))/2
		assert.InDelta(t, approx, float64(k), 2, "n=%d", n)
	}
}

func TestSummarizeLeavesInputAlone(t *testing.T) {
	xs := []float64{9, 3, 7, 1, 8, 2, 6, 4, 5}
	orig := slices.Clone(xs)
	s := Summarize(xs)
	assert.Equal(t, orig, xs)
	assert.Equal(t, Summary{Median: 5, Lo: 2, Hi: 8, N: 9, Confidence: 0.961}, s)
}

func TestSummaryString(t *testing.T) {
	assert.Equal(t, "3.21 (2.90–3.62, n=3)", Summary{Median: 3.21, Lo: 2.9, Hi: 3.62, N: 3}.String())
	assert.Equal(t, "0.000537 (0.000501–0.000602, n=6)",
		Summary{Median: 537e-6, Lo: 501e-6, Hi: 602e-6, N: 6, Confidence: 0.969}.String())
	assert.Equal(t, "1235 (1200–1300, n=4)", Summary{Median: 1234.6, Lo: 1200, Hi: 1300, N: 4}.String())
	assert.Equal(t, "-12.5 (-50.0–25.0, n=3)", Summary{Median: -12.5, Lo: -50, Hi: 25, N: 3}.String())
	assert.Equal(t, "0.000 (-0.100–0.200, n=2)", Summary{Median: 0, Lo: -0.1, Hi: 0.2, N: 2}.String())
	assert.Equal(t, "0 (0–0, n=1)", Summary{N: 1}.String())
	assert.Equal(t, "no data (n=0)", Summary{}.String())
}

func TestSummaryScale(t *testing.T) {
	s := Summary{Median: 0.5, Lo: 0.25, Hi: 0.75, N: 7, Confidence: 0.984}
	assert.Equal(t, Summary{Median: 500, Lo: 250, Hi: 750, N: 7, Confidence: 0.984}, s.Scale(1000))
	assert.Equal(t, Summary{Median: -1, Lo: -1.5, Hi: -0.5, N: 7, Confidence: 0.984}, s.Scale(-2))
}

func TestPercentChangeAndLoss(t *testing.T) {
	latency := Summary{Median: 1.25, Lo: 1.125, Hi: 1.5, N: 6, Confidence: 0.969}
	assert.Equal(t, Summary{Median: 25, Lo: 12.5, Hi: 50, N: 6, Confidence: 0.969}, latency.PercentChange())

	throughput := Summary{Median: 0.75, Lo: 0.5, Hi: 0.875, N: 6, Confidence: 0.969}
	assert.Equal(t, Summary{Median: 25, Lo: 12.5, Hi: 50, N: 6, Confidence: 0.969}, throughput.PercentLoss())
	assert.Equal(t, Summary{Median: -25, Lo: -50, Hi: -12.5, N: 6, Confidence: 0.969}, throughput.PercentChange())

	assert.Equal(t, Summary{}, Summary{}.PercentChange())
	assert.Equal(t, Summary{}, Summary{}.PercentLoss())
}
