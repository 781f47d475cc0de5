package stats

import (
	"fmt"
	"math"
	"sort"

	fstats "fortio.org/fortio/stats"
)

// Resolution is the bucket layout of a fortio histogram: boundaries sit at
// Offset + Divider*v for each v of fortio's fixed table
// (0, 1, 2, …, 11, 12, 14, …, 1000, 2000, …, 100000). Both fields are in
// seconds. Histograms can only be merged losslessly when they were recorded
// at the same Resolution.
//
// The zero value means DefaultResolution (see Normalize).
type Resolution struct {
	// Offset is subtracted from each value before bucketing, in seconds.
	// Default 0.
	Offset float64 `json:"offset"`
	// Divider is the width of the finest buckets, in seconds. Must be > 0.
	// Default 10e-6 (10 µs).
	Divider float64 `json:"divider"`
}

// DefaultResolution is the resolution meshbench records latencies at: no
// offset and a 10 µs divider. Buckets are 10 µs wide up to 120 µs and widen
// along fortio's table from there; the top finite boundary is
// 100000 × 10 µs = 1 s, and everything above 1 s lands in one overflow bucket
// that ends at Max. fortio's own default divider (1 ms) would put every
// sub-millisecond latency in a single bucket, which hides exactly the
// overheads a mesh adds.
var DefaultResolution = Resolution{Offset: 0, Divider: 10e-6}

// Normalize returns r with defaults filled in: a zero Divider becomes
// DefaultResolution.Divider. Offset is kept (its default is 0).
func (r Resolution) Normalize() Resolution {
	if r.Divider == 0 {
		r.Divider = DefaultResolution.Divider
	}
	return r
}

// NewHistogram returns an empty fortio histogram recording at r (after
// Normalize). Values recorded into it must be in seconds.
func (r Resolution) NewHistogram() *fstats.Histogram {
	r = r.Normalize()
	return fstats.NewHistogram(r.Offset, r.Divider)
}

// String prints r as "offset=0s divider=1e-05s".
func (r Resolution) String() string {
	return fmt.Sprintf("offset=%gs divider=%gs", r.Offset, r.Divider)
}

// validate reports a Resolution fortio cannot record at.
func (r Resolution) validate() error {
	if math.IsNaN(r.Offset) || math.IsInf(r.Offset, 0) {
		return fmt.Errorf("stats: resolution offset %g is not finite", r.Offset)
	}
	if !(r.Divider > 0) || math.IsInf(r.Divider, 0) {
		return fmt.Errorf("stats: resolution divider %g must be positive and finite", r.Divider)
	}
	return nil
}

// bucketValues is a copy of fortio's unexported histogramBucketValues
// (fortio.org/fortio/stats). Canonical boundary j is Offset + Divider*bucketValues[j].
// TestBucketValuesMatchFortio checks this copy against fortio itself.
var bucketValues = []int32{
	0, 1, 2, 3, 4, 5, 6,
	7, 8, 9, 10, 11,
	12, 14, 16, 18, 20,
	25, 30, 35, 40, 45, 50,
	60, 70, 80, 90, 100,
	120, 140, 160, 180, 200,
	250, 300, 350, 400, 450, 500,
	600, 700, 800, 900, 1000,
	2000, 3000, 4000, 5000, 7500, 10000,
	20000, 30000, 40000, 50000, 75000, 100000,
}

// Canonical bucket indices. Bucket 0 holds values <= boundary 0; bucket j in
// [1, numValues) holds (boundary j-1, boundary j]; bucket overflowBucket holds
// values above the last boundary.
var (
	numValues      = len(bucketValues)
	numBuckets     = numValues + 1
	overflowBucket = numValues
)

// boundaryTolerance is the relative tolerance, in units of the scaled value
// (value-Offset)/Divider, within which a value is taken to be a boundary.
// Boundaries are at least 1 apart in scaled units, so this cannot confuse two
// of them.
const boundaryTolerance = 1e-9

// boundary returns canonical boundary j of r, in seconds, computed with the
// same expression fortio's Export uses so that the two agree bit for bit.
func (r Resolution) boundary(j int) float64 {
	return r.Divider*float64(bucketValues[j]) + r.Offset
}

// boundaryIndex returns j such that x is canonical boundary j of r (within
// boundaryTolerance), or ok == false when x is not a boundary.
func (r Resolution) boundaryIndex(x float64) (j int, ok bool) {
	s := (x - r.Offset) / r.Divider
	if math.IsNaN(s) {
		return 0, false
	}
	tol := func(v int32) float64 { return boundaryTolerance * math.Max(1, float64(v)) }
	j = sort.Search(numValues, func(j int) bool {
		v := bucketValues[j]
		return float64(v)+tol(v) >= s
	})
	if j == numValues || math.Abs(s-float64(bucketValues[j])) > tol(bucketValues[j]) {
		return 0, false
	}
	return j, true
}

// bucketIndex returns the canonical bucket fortio's Histogram.Record puts v
// in at resolution r. It copies fortio's logic exactly, including its 1e-12
// tolerance that makes buckets open on the left.
func (r Resolution) bucketIndex(v float64) int {
	scaled := (v - r.Offset) / r.Divider
	switch {
	case scaled <= float64(bucketValues[0]):
		return 0
	case scaled > float64(bucketValues[numValues-1]):
		return overflowBucket
	}
	svInt := int(scaled)
	if scaled-float64(svInt) < 1e-12 {
		svInt--
	}
	// First table value strictly greater than svInt.
	return sort.Search(numValues, func(j int) bool { return int(bucketValues[j]) > svInt })
}
