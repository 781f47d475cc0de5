package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hdrDistributions draw latencies in nanoseconds. Each has a tail past 1 s,
// where fortio's histogram has a single overflow bucket.
var hdrDistributions = []struct {
	name string
	draw func(r *rand.Rand) int64
}{
	{"lognormal-800us-long-tail", func(r *rand.Rand) int64 {
		// sigma 2: p99 near 85 ms, p99.99 near 1.4 s.
		return int64(800e3 * math.Exp(2*r.NormFloat64()))
	}},
	{"pareto-100us-to-5s", func(r *rand.Rand) int64 {
		// alpha 0.5: about 1 % of the samples land above 1 s.
		for {
			u := 1 - r.Float64() // (0, 1]
			if x := 100e3 / (u * u); x <= 5e9 {
				return int64(x)
			}
		}
	}},
	{"bimodal-150us-and-1.5s-timeouts", func(r *rand.Rand) int64 {
		if r.Float64() < 0.03 {
			return int64(1.5e9 * math.Exp(0.2*r.NormFloat64()))
		}
		return int64(150e3 * math.Exp(0.1*r.NormFloat64()))
	}},
	{"bimodal-40us-and-13ms-with-2s-stalls", func(r *rand.Rand) int64 {
		u := r.Float64()
		if u < 0.002 {
			return int64(2e9 * math.Exp(0.1*r.NormFloat64()))
		}
		if u < 0.2 {
			return int64(13e6 * math.Exp(0.3*r.NormFloat64()))
		}
		return int64(40e3 * math.Exp(0.05*r.NormFloat64()))
	}},
}

// recordHDRLoadgens splits samples drawn from draw over four load
// generators with unequal counts (loadgenCounts), one HDR each, and returns
// the histograms and every sample, sorted.
func recordHDRLoadgens(seed uint64, draw func(*rand.Rand) int64) ([]*HDR, []int64) {
	r := rand.New(rand.NewPCG(seed, 7))
	var hs []*HDR
	var all []int64
	for _, n := range loadgenCounts {
		h := NewHDR()
		for range n {
			x := draw(r)
			h.Record(x)
			all = append(all, x)
		}
		hs = append(hs, h)
	}
	slices.Sort(all)
	return hs, all
}

// exactHDRPercentile is the p-th percentile of sorted samples with HDR's
// rank, max(1, round(p/100 × N)). With N = 20000 and the percentiles tested
// the rank is an integer, so it is also the nearest-rank percentile
// (ceil(p/100 × N)).
func exactHDRPercentile(sorted []int64, p float64) int64 {
	k := int64(p/100*float64(len(sorted)) + 0.5)
	return sorted[min(max(k, 1), int64(len(sorted)))-1]
}

// TestHDRPercentilesOfMergedLoadgensAreExactTo0_1Percent checks every
// percentile meshbench reports, read from the merge of four unequal load
// generators' histograms, against the exact percentile of the raw samples:
// within 0.1 % relative error, tails above 1 s included.
func TestHDRPercentilesOfMergedLoadgensAreExactTo0_1Percent(t *testing.T) {
	percentiles := []float64{0.5, 10, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}
	for i, d := range hdrDistributions {
		t.Run(d.name, func(t *testing.T) {
			hs, all := recordHDRLoadgens(uint64(i+1), d.draw)
			require.Len(t, all, 20000)
			require.Greater(t, all[len(all)-1], int64(1e9), "the distribution reaches past 1 s")
			merged, err := MergeHDR(hs...)
			require.NoError(t, err)
			assert.Equal(t, int64(20000), merged.Count())
			for _, p := range percentiles {
				exact := float64(exactHDRPercentile(all, p)) / 1e9
				got := merged.Percentile(p)
				assert.InEpsilon(t, exact, got, 1e-3, "p%g: exact %.9f s, HDR %.9f s", p, exact, got)
				assert.GreaterOrEqual(t, got, exact, "p%g: HDR reports the top of the sample's bucket", p)
			}
			assert.InEpsilon(t, float64(all[len(all)-1])/1e9, merged.Max(), 1e-3)
			var sum float64
			for _, x := range all {
				sum += float64(x)
			}
			assert.InEpsilon(t, sum/float64(len(all))/1e9, merged.Mean(), 1e-3)
		})
	}
}

// TestMergeHDRIsLossless: merging the four generators' histograms gives
// exactly the histogram one generator recording every sample would hold, in
// any order, and leaves the inputs alone.
func TestMergeHDRIsLossless(t *testing.T) {
	hs, all := recordHDRLoadgens(99, hdrDistributions[1].draw)
	one := NewHDR()
	for _, x := range all {
		one.Record(x)
	}
	before := make([]int64, len(hs))
	for i, h := range hs {
		before[i] = h.Count()
	}
	m1, err := MergeHDR(hs...)
	require.NoError(t, err)
	m2, err := MergeHDR(nil, hs[3], hs[1], nil, hs[0], hs[2])
	require.NoError(t, err)
	assert.True(t, m1.Equal(one))
	assert.True(t, m2.Equal(one))
	for i, h := range hs {
		assert.Equal(t, before[i], h.Count(), "input %d unchanged", i)
	}
	none, err := MergeHDR(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, none)
	assert.Zero(t, none.Count())
	assert.Zero(t, none.Percentile(99))
}

// TestHDRCompactEncodingRoundTrip: the encoding is HDR's V2 compressed
// base64 form, decodes to the same counts, and is the JSON form of an HDR.
func TestHDRCompactEncodingRoundTrip(t *testing.T) {
	hs, _ := recordHDRLoadgens(5, hdrDistributions[2].draw)
	h, err := MergeHDR(hs...)
	require.NoError(t, err)
	enc, err := h.Encode()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(enc, "HISTFAAA"), "V2 compressed cookie, base64: %.20s", enc)
	assert.Less(t, len(enc), 40000, "compact: far below the 220 KiB of counts")
	back, err := DecodeHDR(enc)
	require.NoError(t, err)
	assert.True(t, back.Equal(h))
	assert.Equal(t, h.Percentile(99.9), back.Percentile(99.9))

	type doc struct {
		H    *HDR `json:"h"`
		None *HDR `json:"none,omitempty"`
	}
	b, err := json.Marshal(doc{H: h})
	require.NoError(t, err)
	assert.Equal(t, `{"h":"`+enc+`"}`, string(b))
	var d doc
	require.NoError(t, json.Unmarshal(b, &d))
	assert.True(t, d.H.Equal(h))
	assert.Nil(t, d.None)

	// The upstream library reads it as any HdrHistogram tool would.
	up, err := hdrhistogram.Decode([]byte(enc))
	require.NoError(t, err)
	assert.Equal(t, h.Count(), up.TotalCount())
}

func TestDecodeHDRRefusesOtherLayoutsAndGarbage(t *testing.T) {
	other := hdrhistogram.New(1000, HDRHighest, 3) // µs granularity: not mergeable losslessly
	require.NoError(t, other.RecordValue(5000))
	b, err := other.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	_, err = DecodeHDR(string(b))
	assert.EqualError(t, err, "stats: HDR histogram recorded from 1000 to 60000000000 with 3 significant digits, want 1 to 60000000000 with 3 (meshbench's layout: ns, 1 ns to 60 s)")
	_, err = DecodeHDR("not base64!")
	assert.ErrorContains(t, err, "stats: decode HDR histogram: illegal base64 data")
	var h HDR
	assert.ErrorContains(t, json.Unmarshal([]byte(`12`), &h), "want a string with its compact encoding")
}

func TestHDRRecordClampsToLayout(t *testing.T) {
	h := NewHDR()
	h.Record(-5)
	h.Record(1999) // exact below 2048 ns
	h.Record(2 * HDRHighest)
	assert.Equal(t, int64(3), h.Count())
	assert.Zero(t, h.Percentile(0))
	assert.Equal(t, 1999e-9, h.Percentile(50))
	assert.InEpsilon(t, 60.0, h.Max(), 1e-3)
}

// Scaled moves every value by the factor, within HDR's 0.1 %.
func TestHDRScaled(t *testing.T) {
	h := NewHDR()
	for v := int64(1); v <= 1000; v++ {
		h.Record(v * 1000) // 1 µs to 1 ms
	}
	for _, k := range []float64{1.6, 1 / 1.6, 2} {
		s, err := h.Scaled(k)
		require.NoError(t, err)
		assert.Equal(t, h.Count(), s.Count())
		for _, p := range []float64{50, 99, 100} {
			assert.InEpsilon(t, h.Percentile(p)*k, s.Percentile(p), 2e-3, "p%g ×%g", p, k)
		}
	}
	_, err := h.Scaled(0)
	assert.EqualError(t, err, "stats: scale an HDR histogram by 0: want a finite factor > 0")
	var none *HDR
	s, err := none.Scaled(2)
	assert.NoError(t, err)
	assert.Nil(t, s)
}
