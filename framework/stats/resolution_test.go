package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	fstats "fortio.org/fortio/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBucketValuesMatchFortio records one value on every boundary of fortio's
// table (divider 1, so the values are the table itself) plus one overflow
// value, and checks fortio exports exactly our copy of the table.
func TestBucketValuesMatchFortio(t *testing.T) {
	h := fstats.NewHistogram(0, 1)
	for _, v := range bucketValues {
		h.Record(float64(v))
	}
	h.Record(200000)
	d := h.Export().Data
	require.Len(t, d, numBuckets, "one exported bucket per canonical bucket")
	for j := range numValues {
		assert.Equal(t, float64(bucketValues[j]), d[j].End, "end of bucket %d", j)
		if j > 0 {
			assert.Equal(t, float64(bucketValues[j-1]), d[j].Start, "start of bucket %d", j)
		}
	}
	assert.Equal(t, float64(bucketValues[numValues-1]), d[overflowBucket].Start)
	assert.Equal(t, 200000.0, d[overflowBucket].End)
}

// fortioBucket returns the canonical bucket fortio itself records v in at
// res, read back from an export: v is recorded next to a value in bucket 0,
// so v's bucket (when not 0) starts at the boundary just below it.
func fortioBucket(t *testing.T, res Resolution, v float64) int {
	t.Helper()
	h := res.NewHistogram()
	h.Record(res.Offset - 1)
	h.Record(v)
	d := h.Export().Data
	if len(d) == 1 {
		return 0
	}
	j, ok := res.boundaryIndex(d[1].Start)
	require.True(t, ok, "start %g of %g's bucket is a boundary", d[1].Start, v)
	return j + 1
}

func TestBucketIndexMatchesFortio(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, res := range []Resolution{DefaultResolution, {Offset: 0, Divider: 1e-3}, {Offset: 5e-3, Divider: 1e-4}} {
		var vs []float64
		for j := range numValues {
			b := res.boundary(j)
			vs = append(vs, b, math.Nextafter(b, math.Inf(1)), math.Nextafter(b, math.Inf(-1)),
				b+res.Divider/2, b-res.Divider/2)
		}
		for range 2000 {
			vs = append(vs, res.Offset+res.Divider*math.Exp(rng.Float64()*14-2))
		}
		vs = append(vs, res.Offset-1, res.Offset, res.boundary(numValues-1)*3)
		for _, v := range vs {
			if s := (v - res.Offset) / res.Divider; s > 0 && s < 1e-12 {
				// fortio panics (index -1) on a value this close above
				// boundary 0; no real latency is within 1e-12 dividers of it.
				continue
			}
			require.Equal(t, fortioBucket(t, res, v), res.bucketIndex(v), "bucket of %g at %v", v, res)
		}
	}
}

func TestBoundaryIndex(t *testing.T) {
	res := DefaultResolution
	for j := range numValues {
		b := res.boundary(j)
		got, ok := res.boundaryIndex(b)
		require.True(t, ok, "boundary %d", j)
		require.Equal(t, j, got)
		got, ok = res.boundaryIndex(b * (1 + 1e-12))
		require.True(t, ok, "boundary %d within tolerance", j)
		require.Equal(t, j, got)
		_, ok = res.boundaryIndex(b + res.Divider/2)
		require.False(t, ok, "half a divider above boundary %d", j)
	}
	_, ok := res.boundaryIndex(math.NaN())
	assert.False(t, ok)
	_, ok = res.boundaryIndex(-1)
	assert.False(t, ok)
	_, ok = res.boundaryIndex(2)
	assert.False(t, ok, "above the top boundary")
	// The top finite boundary of the default resolution is 1 s.
	assert.InEpsilon(t, 1.0, res.boundary(numValues-1), 1e-15)
}

func TestResolutionNormalize(t *testing.T) {
	assert.Equal(t, DefaultResolution, Resolution{}.Normalize())
	assert.Equal(t, Resolution{Offset: 1, Divider: 10e-6}, Resolution{Offset: 1}.Normalize())
	assert.Equal(t, Resolution{Divider: 1e-3}, Resolution{Divider: 1e-3}.Normalize())
	h := Resolution{}.NewHistogram()
	assert.Equal(t, 0.0, h.Offset)
	assert.Equal(t, 10e-6, h.Divider)
	assert.Equal(t, "offset=0s divider=1e-05s", DefaultResolution.String())
}
