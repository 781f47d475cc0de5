package stats

import (
	"math"
	"testing"

	fstats "fortio.org/fortio/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentileMatchesFortio(t *testing.T) {
	res := DefaultResolution
	hs := []*fstats.HistogramData{
		record(res, 250e-6),
		record(res, 10e-6, 20e-6, 30e-6),
		record(res, -1, 0, 5e-6, 1e-3, 1e-3, 1e-3, 2.5),
	}
	for i, dist := range distributions {
		loadgens, _ := recordLoadgens(uint64(20+i), res, dist.draw)
		hs = append(hs, loadgens...)
	}
	ps := []float64{-5, 0, 0.001, 1, 10, 100. / 3, 50, 66.67, 90, 99, 99.9, 99.99, 100, 150}
	for i, h := range hs {
		for _, p := range ps {
			require.Equal(t, h.CalcPercentile(p), Percentile(h, p), "histogram %d p%g", i, p)
		}
	}
}

func TestPercentileSmallCases(t *testing.T) {
	// 10, 20, 30 µs: three buckets (0.01, 0.01], (0.01, 0.02], (0.02, 0.03] ms.
	h := record(DefaultResolution, 10e-6, 20e-6, 30e-6)
	assert.Equal(t, 10e-6, Percentile(h, 0))
	assert.Equal(t, 10e-6, Percentile(h, 100./3), "Min carries the first 1/Count")
	assert.InEpsilon(t, 15e-6, Percentile(h, 50), 1e-12, "halfway from 10 to 20 µs")
	assert.Equal(t, 30e-6, Percentile(h, 100))
	assert.Equal(t, 30e-6, Percentile(h, 101))
	assert.Equal(t, 0.0, Percentile(nil, 50))
	assert.Equal(t, 0.0, Percentile(&fstats.HistogramData{}, 50))
}

func TestQuantiles(t *testing.T) {
	h := record(DefaultResolution, 10e-6, 20e-6, 30e-6)
	got := Quantiles(h, 50, 100, 0)
	require.Len(t, got, 3)
	for i, p := range []float64{50, 100, 0} {
		assert.Equal(t, p, got[i].Percentile)
		assert.Equal(t, Percentile(h, p), got[i].Value)
	}
	assert.Equal(t, h.CalcPercentiles([]float64{50, 100, 0}).Percentiles, got)
	assert.Nil(t, Quantiles(nil, 50))
	assert.Nil(t, Quantiles(&fstats.HistogramData{}, 50))
	assert.Empty(t, Quantiles(h))
	assert.False(t, math.IsNaN(got[0].Value))
}
