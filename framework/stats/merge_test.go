package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	fstats "fortio.org/fortio/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quantum is the grid test samples are rounded to (2^-30 s, about 0.93 ns).
// Sums of such values below 2^23 s are exact in float64 whatever the order,
// so Sum can be asserted exactly.
const quantum = 1.0 / (1 << 30)

func quantize(x float64) float64 { return math.Round(x/quantum) * quantum }

// distributions of latency samples, in seconds.
var distributions = []struct {
	name string
	draw func(r *rand.Rand) float64
}{
	{"lognormal-200us", func(r *rand.Rand) float64 {
		return 200e-6 * math.Exp(0.35*r.NormFloat64())
	}},
	{"bimodal-150us-3ms", func(r *rand.Rand) float64 {
		if r.Float64() < 0.1 {
			return 3e-3 * math.Exp(0.15*r.NormFloat64())
		}
		return 150e-6 * math.Exp(0.1*r.NormFloat64())
	}},
	{"heavy-tail-to-2s", func(r *rand.Rand) float64 {
		// Pareto(x_m = 100 µs, alpha = 0.5) truncated at 2 s: about 1 % of
		// the samples land above 1 s, in the overflow bucket.
		for {
			u := 1 - r.Float64() // (0, 1]
			if x := 100e-6 / (u * u); x <= 2 {
				return x
			}
		}
	}},
}

// loadgenCounts are the unequal sample counts of four load generators.
var loadgenCounts = []int{9000, 6000, 3500, 1500}

// recordLoadgens draws the samples of every load generator from draw and
// returns each generator's exported histogram and the union of the samples.
func recordLoadgens(seed uint64, res Resolution, draw func(*rand.Rand) float64) ([]*fstats.HistogramData, []float64) {
	r := rand.New(rand.NewPCG(seed, 42))
	var hs []*fstats.HistogramData
	var all []float64
	for _, n := range loadgenCounts {
		h := fstats.NewHistogram(res.Offset, res.Divider)
		for range n {
			x := quantize(draw(r))
			h.Record(x)
			all = append(all, x)
		}
		hs = append(hs, h.Export())
	}
	return hs, all
}

// exactPercentile is the nearest-rank percentile of sorted: the smallest
// sample with at least p percent of the samples at or below it.
func exactPercentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(k, 1)-1]
}

// exactMoments returns the mean and population standard deviation of xs,
// in two passes.
func exactMoments(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)))
}

func TestMergeMatchesUnionOfSamples(t *testing.T) {
	res := DefaultResolution
	for i, dist := range distributions {
		t.Run("dist="+dist.name, func(t *testing.T) {
			hs, all := recordLoadgens(uint64(i+1), res, dist.draw)
			merged, err := Merge(res, hs...)
			require.NoError(t, err)

			sorted := slices.Sorted(slices.Values(all))
			var sum float64
			for _, x := range all {
				sum += x
			}
			mean, std := exactMoments(all)
			assert.Equal(t, int64(len(all)), merged.Count)
			assert.Equal(t, sorted[0], merged.Min)
			assert.Equal(t, sorted[len(sorted)-1], merged.Max)
			assert.Equal(t, sum, merged.Sum)
			assert.InEpsilon(t, mean, merged.Avg, 1e-9)
			assert.InEpsilon(t, std, merged.StdDev, 1e-9)
			assert.Empty(t, merged.Percentiles)

			for _, p := range []float64{50, 90, 99, 99.9} {
				want := exactPercentile(sorted, p)
				got := Percentile(merged, p)
				wantB, gotB := res.bucketIndex(want), res.bucketIndex(got)
				assert.LessOrEqual(t, math.Abs(float64(gotB-wantB)), 1.0,
					"p%g: merged %g s in bucket %d, exact %g s in bucket %d", p, got, gotB, want, wantB)
			}

			// Lossless: the merge is the histogram one generator recording
			// every sample would have exported.
			one := fstats.NewHistogram(res.Offset, res.Divider)
			for _, x := range all {
				one.Record(x)
			}
			union := one.Export()
			assert.Equal(t, union.Data, merged.Data)
			assert.Equal(t, union.Count, merged.Count)
			assert.Equal(t, union.Min, merged.Min)
			assert.Equal(t, union.Max, merged.Max)
			assert.Equal(t, union.Sum, merged.Sum)
			assert.Equal(t, union.Avg, merged.Avg)
			assert.InEpsilon(t, union.StdDev, merged.StdDev, 1e-9)
			for _, p := range []float64{0, 1, 50, 90, 99, 99.9, 99.99, 100} {
				assert.Equal(t, union.CalcPercentile(p), Percentile(merged, p), "p%g", p)
			}
		})
	}
}

func TestMergeHitsOverflowBucket(t *testing.T) {
	res := DefaultResolution
	hs, all := recordLoadgens(3, res, distributions[2].draw)
	merged, err := Merge(res, hs...)
	require.NoError(t, err)
	last := merged.Data[len(merged.Data)-1]
	assert.Equal(t, res.boundary(numValues-1), last.Start, "overflow bucket starts at the top boundary")
	assert.Equal(t, merged.Max, last.End)
	assert.Greater(t, merged.Max, 1.0)
	var over int64
	for _, x := range all {
		if x > 1 {
			over++
		}
	}
	assert.Equal(t, over, last.Count)
	assert.Greater(t, over, int64(20), "samples above 1 s")
	assert.Equal(t, 100.0, last.Percent)
}

func TestMergeOfOneIsIdentity(t *testing.T) {
	res := DefaultResolution
	for i, dist := range distributions {
		hs, _ := recordLoadgens(uint64(10+i), res, dist.draw)
		in := hs[1]
		in.CalcPercentiles([]float64{50, 99})
		got, err := Merge(res, in)
		require.NoError(t, err)
		assert.Equal(t, in.Data, got.Data, dist.name)
		assert.Equal(t, in.Count, got.Count)
		assert.Equal(t, in.Min, got.Min)
		assert.Equal(t, in.Max, got.Max)
		assert.Equal(t, in.Sum, got.Sum)
		assert.Equal(t, in.Avg, got.Avg)
		assert.InEpsilon(t, in.StdDev, got.StdDev, 1e-12)
		assert.Empty(t, got.Percentiles)
	}
}

func TestMergeIsOrderIndependent(t *testing.T) {
	res := DefaultResolution
	hs, _ := recordLoadgens(7, res, distributions[1].draw)
	want, err := Merge(res, hs...)
	require.NoError(t, err)
	for _, perm := range permutations(len(hs)) {
		in := make([]*fstats.HistogramData, len(hs))
		for i, j := range perm {
			in[i] = hs[j]
		}
		got, err := Merge(res, in...)
		require.NoError(t, err)
		require.Equal(t, want.Data, got.Data, "order %v", perm)
		require.Equal(t, want.Count, got.Count)
		require.Equal(t, want.Min, got.Min)
		require.Equal(t, want.Max, got.Max)
		require.Equal(t, want.Sum, got.Sum) // exact: samples are on the 2^-30 grid
		require.Equal(t, want.Avg, got.Avg)
		require.InEpsilon(t, want.StdDev, got.StdDev, 1e-12)
	}
}

// permutations returns every ordering of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func TestMergeSkipsNilAndEmpty(t *testing.T) {
	res := DefaultResolution
	hs, _ := recordLoadgens(5, res, distributions[0].draw)
	empty := res.NewHistogram().Export()
	want, err := Merge(res, hs[0], hs[2])
	require.NoError(t, err)
	got, err := Merge(res, nil, hs[0], empty, nil, hs[2], &fstats.HistogramData{})
	require.NoError(t, err)
	assert.Equal(t, want, got)

	none, err := Merge(res)
	require.NoError(t, err)
	assert.Equal(t, &fstats.HistogramData{}, none)
	none, err = Merge(res, nil, empty)
	require.NoError(t, err)
	assert.Equal(t, &fstats.HistogramData{}, none)
	assert.Equal(t, 0.0, Percentile(none, 99))
}

func TestMergeZeroResolutionIsDefault(t *testing.T) {
	hs, _ := recordLoadgens(6, DefaultResolution, distributions[0].draw)
	want, err := Merge(DefaultResolution, hs...)
	require.NoError(t, err)
	got, err := Merge(Resolution{}, hs...)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// record returns the export of a histogram at res holding xs.
func record(res Resolution, xs ...float64) *fstats.HistogramData {
	h := fstats.NewHistogram(res.Offset, res.Divider)
	for _, x := range xs {
		h.Record(x)
	}
	return h.Export()
}

func TestMergeRejectsOtherResolution(t *testing.T) {
	ms := Resolution{Divider: 1e-3} // fortio's default: 1 ms
	good := record(DefaultResolution, 150e-6, 180e-6, 2.5e-3)
	cases := []struct {
		name   string
		in     *fstats.HistogramData
		bucket int
		field  string
		value  float64
	}{
		// (0.5, 1], (1, 2] then (5, 6] ms: 2 ms is a 10 µs boundary, but the
		// 10 µs bucket ending there starts at 1.8 ms, not 1 ms.
		{"start-of-middle-bucket", record(ms, 0.5e-3, 1.5e-3, 5.5e-3), 1, "start", 1e-3},
		// (10, 11] ms: 11 ms is not a 10 µs boundary (1000, then 2000 × 10 µs).
		{"end-not-a-boundary", record(ms, 10.5e-3, 11.5e-3, 30e-3), 0, "end", 11e-3},
		// (0.5, 1] ms then (11, 12] ms: 11 ms is not a boundary.
		{"start-not-a-boundary", record(ms, 0.5e-3, 11.5e-3), 1, "start", 11e-3},
		// (0.9, 1] then (1, 2] ms: every boundary is a 10 µs one, but the max
		// 1.5 ms lies in the 10 µs bucket (1.4, 1.6] ms, not (1, 1.1] ms.
		{"max-outside-last-bucket", record(ms, 0.95e-3, 1.5e-3), 1, "max", 1.5e-3},
		// One 1 ms bucket (1, 2] ms spanning several 10 µs buckets.
		{"single-bucket", record(ms, 1.2e-3, 1.9e-3), 0, "min", 1.2e-3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Merge(DefaultResolution, good, c.in)
			require.Error(t, err)
			var re *ResolutionError
			require.True(t, errors.As(err, &re), "error %v is a *ResolutionError", err)
			assert.Equal(t, 1, re.Input)
			assert.Equal(t, c.bucket, re.Bucket)
			assert.Equal(t, c.field, re.Field)
			assert.InEpsilon(t, c.value, re.Value, 1e-12)
			assert.Equal(t, DefaultResolution, re.Res)
			assert.Contains(t, err.Error(), "merge input 1")
		})
	}
	// The message names the input and the value.
	_, err := Merge(DefaultResolution, good, cases[0].in)
	assert.EqualError(t, err, "stats: merge input 1: bucket 1 start 0.001 s is not the expected bucket boundary "+
		"at resolution offset=0s divider=1e-05s (recorded at another resolution?)")
	// Merging the 1 ms histograms at their own resolution works.
	_, err = Merge(ms, cases[0].in, cases[1].in, cases[2].in, cases[3].in, cases[4].in)
	require.NoError(t, err)
}

func TestMergeRejectsInconsistentInput(t *testing.T) {
	res := DefaultResolution
	fresh := func() *fstats.HistogramData { return record(res, 100e-6, 200e-6, 200e-6, 3e-3) }
	cases := map[string]func(h *fstats.HistogramData){
		"count-mismatch":  func(h *fstats.HistogramData) { h.Count++ },
		"zero-bucket":     func(h *fstats.HistogramData) { h.Data[1].Count = 0 },
		"count-no-data":   func(h *fstats.HistogramData) { h.Data = nil },
		"nan-max":         func(h *fstats.HistogramData) { h.Max = math.NaN() },
		"min-above-max":   func(h *fstats.HistogramData) { h.Min, h.Max = h.Max, h.Min },
		"out-of-order":    func(h *fstats.HistogramData) { h.Data[0], h.Data[1] = h.Data[1], h.Data[0] },
		"count-zero-data": func(h *fstats.HistogramData) { h.Count = 0 },
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			h := fresh()
			corrupt(h)
			_, err := Merge(res, fresh(), h)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "merge input 1")
		})
	}
	for _, bad := range []Resolution{{Divider: -1}, {Divider: math.Inf(1)}, {Offset: math.NaN(), Divider: 1}} {
		_, err := Merge(bad, fresh())
		assert.Error(t, err, "resolution %v", bad)
	}
}

// TestNeverAveragePercentiles shows why meshbench merges histograms instead
// of averaging per-generator percentiles. Three generators see a healthy
// backend (150–250 µs); the fourth, with the same number of requests, sits on
// a slow node (20–21 ms). A quarter of all requests were slow, so the true
// p99 is about 21 ms. The mean of the four p99s is about 5.4 ms: a latency no
// request had, below which lie exactly 75 % of the requests. It is the p75
// of the traffic dressed up as a p99, and it hides the slow node.
func TestNeverAveragePercentiles(t *testing.T) {
	res := DefaultResolution
	var hs []*fstats.HistogramData
	var all []float64
	for g := range 4 {
		var xs []float64
		for i := range 1000 {
			x := 150e-6 + float64(i%101)*1e-6
			if g == 3 {
				x = 20e-3 + float64(i%101)*10e-6
			}
			xs = append(xs, x)
		}
		all = append(all, xs...)
		hs = append(hs, record(res, xs...))
	}
	var meanP99 float64
	for _, h := range hs {
		meanP99 += Percentile(h, 99) / float64(len(hs))
	}
	merged, err := Merge(res, hs...)
	require.NoError(t, err)
	p99 := Percentile(merged, 99)

	sorted := slices.Sorted(slices.Values(all))
	exact := exactPercentile(sorted, 99)
	assert.LessOrEqual(t, math.Abs(float64(res.bucketIndex(p99)-res.bucketIndex(exact))), 1.0)
	assert.Greater(t, p99, 20e-3, "merged p99 sees the slow node")
	assert.Greater(t, meanP99, 5e-3)
	assert.Less(t, meanP99, 6e-3, "mean of p99s is about 5.4 ms")
	assert.Greater(t, p99/meanP99, 3.5, "averaging understates p99 several-fold")

	below, _ := slices.BinarySearch(sorted, meanP99)
	assert.Equal(t, 0.75, float64(below)/float64(len(sorted)), "the averaged 'p99' is the p75")
	for _, b := range merged.Data {
		if b.Start < meanP99 && meanP99 <= b.End {
			t.Errorf("no request took %g s, yet the bucket (%g, %g] holds %d", meanP99, b.Start, b.End, b.Count)
		}
	}
}
