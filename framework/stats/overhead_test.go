package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPairedDeltaAndRatio(t *testing.T) {
	baseline := []float64{1, 2, 4}
	meshed := []float64{1.5, 2.5, 5}
	d, err := PairedDelta(baseline, meshed)
	require.NoError(t, err)
	assert.Equal(t, Summary{Median: 0.5, Lo: 0.5, Hi: 1, N: 3}, d) // 0.5, 0.5, 1
	r, err := PairedRatio(baseline, meshed)
	require.NoError(t, err)
	assert.Equal(t, Summary{Median: 1.25, Lo: 1.25, Hi: 1.5, N: 3}, r) // 1.5, 1.25, 1.25
	assert.Equal(t, Summary{Median: 25, Lo: 25, Hi: 50, N: 3}, r.PercentChange())
}

func TestPairedRatioPairsNotArms(t *testing.T) {
	// The baseline drifts 4× over the run; each meshed repeat is 25 % slower
	// than the baseline measured just before it. Pairing sees exactly +25 %;
	// comparing arm medians would mix in the drift.
	baseline := []float64{1, 2, 4, 1, 2, 4}
	meshed := []float64{1.25, 2.5, 5, 1.25, 2.5, 5}
	o, err := NewOverhead(baseline, meshed)
	require.NoError(t, err)
	assert.Equal(t, Summary{Median: 1.25, Lo: 1.25, Hi: 1.25, N: 6, Confidence: 0.969}, o.Ratio)
	assert.Equal(t, Summary{Median: 25, Lo: 25, Hi: 25, N: 6, Confidence: 0.969}, o.Ratio.PercentChange())
	assert.Equal(t, Summary{Median: 0.5, Lo: 0.25, Hi: 1, N: 6, Confidence: 0.969}, o.Delta)
	assert.Equal(t, Summary{Median: 2, Lo: 1, Hi: 4, N: 6, Confidence: 0.969}, o.Baseline)
	assert.Equal(t, Summary{Median: 2.5, Lo: 1.25, Hi: 5, N: 6, Confidence: 0.969}, o.Meshed)
}

func TestThroughputLoss(t *testing.T) {
	baseline := []float64{1000, 1000, 2000}
	meshed := []float64{750, 500, 1750} // ratios 0.75, 0.5, 0.875
	r, err := PairedRatio(baseline, meshed)
	require.NoError(t, err)
	assert.Equal(t, Summary{Median: 0.75, Lo: 0.5, Hi: 0.875, N: 3}, r)
	assert.Equal(t, Summary{Median: 25, Lo: 12.5, Hi: 50, N: 3}, r.PercentLoss())
	d, err := PairedDelta(baseline, meshed)
	require.NoError(t, err)
	assert.Equal(t, Summary{Median: -250, Lo: -500, Hi: -250, N: 3}, d)
}

func TestPairedErrors(t *testing.T) {
	cases := []struct {
		name              string
		baseline, meshed  []float64
		deltaErr, ratioEr string
	}{
		{"length-mismatch", []float64{1, 2}, []float64{1},
			"stats: 2 baseline repeats but 1 meshed: repeats must come in pairs", ""},
		{"empty", nil, []float64{}, "stats: no repeat pairs", ""},
		{"nan", []float64{1, math.NaN()}, []float64{1, 2}, "stats: pair 1: baseline is NaN", ""},
		{"inf", []float64{1, 2}, []float64{math.Inf(1), 2}, "stats: pair 0: meshed is +Inf", ""},
		{"zero-baseline", []float64{1, 0}, []float64{1, 2}, "", "stats: ratio of pair 1: baseline is 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, derr := PairedDelta(c.baseline, c.meshed)
			_, rerr := PairedRatio(c.baseline, c.meshed)
			_, oerr := NewOverhead(c.baseline, c.meshed)
			if c.deltaErr != "" {
				assert.EqualError(t, derr, c.deltaErr)
				assert.EqualError(t, rerr, c.deltaErr)
				assert.EqualError(t, oerr, c.deltaErr)
			} else {
				assert.NoError(t, derr)
				assert.EqualError(t, rerr, c.ratioEr)
				assert.EqualError(t, oerr, c.ratioEr)
			}
		})
	}
}
