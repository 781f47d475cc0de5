package stats

import (
	"fmt"
	"math"

	fstats "fortio.org/fortio/stats"
)

// ResolutionError reports that a histogram given to Merge was not recorded at
// the Resolution Merge was asked to use, so its buckets cannot be added to the
// others without loss.
type ResolutionError struct {
	// Input is the index of the histogram among Merge's arguments.
	Input int
	// Bucket is the index of the offending bucket in that histogram's Data.
	Bucket int
	// Field names the offending value: "start" or "end" of the bucket, or the
	// histogram's "min" or "max".
	Field string
	// Value is the offending value, in seconds.
	Value float64
	// Res is the resolution Merge was given.
	Res Resolution
}

// Error implements error.
func (e *ResolutionError) Error() string {
	switch e.Field {
	case "min", "max":
		return fmt.Sprintf("stats: merge input %d: %s %g s does not fall in its bucket %d at resolution %v (recorded at another resolution?)",
			e.Input, e.Field, e.Value, e.Bucket, e.Res)
	default:
		return fmt.Sprintf("stats: merge input %d: bucket %d %s %g s is not the expected bucket boundary at resolution %v (recorded at another resolution?)",
			e.Input, e.Bucket, e.Field, e.Value, e.Res)
	}
}

// Merge adds histograms recorded by several load generators at the same
// resolution res into one, bucket by bucket, without loss: the result is the
// histogram a single generator would have exported had it recorded every
// sample itself (Count, Min, Max, Sum, Avg and Data identical; StdDev equal up
// to rounding). All values are in seconds. This is the only correct way to get
// a percentile over several generators: never average their percentiles.
//
// Each input bucket is mapped to its canonical bucket of res by its End (or,
// for the last bucket, whose End is Max, by its Start or by Max), and checked
// against res; a histogram recorded at another resolution yields a
// *ResolutionError naming the input index and the offending value.
//
// In the result Count, Sum and bucket counts are sums; Min and Max are the
// extremes; Avg = Sum/Count; StdDev is the population standard deviation of
// the union, pooled exactly from each input's Count, Avg and StdDev. Data is
// rebuilt like fortio's Export (first Start = Min, last End = Max, cumulative
// Percent) and Percentiles is left empty: use Percentile or Quantiles.
//
// Nil inputs and inputs with Count == 0 are skipped; with nothing left the
// result is an empty HistogramData. A zero res means DefaultResolution.
func Merge(res Resolution, hs ...*fstats.HistogramData) (*fstats.HistogramData, error) {
	res = res.Normalize()
	if err := res.validate(); err != nil {
		return nil, err
	}
	counts := make([]int64, numBuckets)
	out := &fstats.HistogramData{}
	type moments struct {
		n        int64
		avg, std float64
	}
	var parts []moments
	for i, h := range hs {
		if h == nil || (h.Count == 0 && len(h.Data) == 0) {
			continue
		}
		if err := addBuckets(res, i, h, counts); err != nil {
			return nil, err
		}
		if len(parts) == 0 || h.Min < out.Min {
			out.Min = h.Min
		}
		if len(parts) == 0 || h.Max > out.Max {
			out.Max = h.Max
		}
		out.Count += h.Count
		out.Sum += h.Sum
		parts = append(parts, moments{h.Count, h.Avg, h.StdDev})
	}
	if out.Count == 0 {
		return out, nil
	}
	n := float64(out.Count)
	out.Avg = out.Sum / n
	// Population variance of the union: within-input variance plus the spread
	// of the input means around the overall mean.
	var ss float64
	for _, p := range parts {
		d := p.avg - out.Avg
		ss += float64(p.n) * (p.std*p.std + d*d)
	}
	out.StdDev = math.Sqrt(ss / n)
	out.Data = exportBuckets(res, counts, out.Min, out.Max, out.Count)
	return out, nil
}

// addBuckets adds the buckets of h (input number input) into counts, indexed
// by canonical bucket of res, after checking h is consistent and was recorded
// at res.
func addBuckets(res Resolution, input int, h *fstats.HistogramData, counts []int64) error {
	if err := checkSummary(input, h); err != nil {
		return err
	}
	idx, err := bucketIndexes(res, input, h)
	if err != nil {
		return err
	}
	// Min and Max were recorded in the first and last buckets; with the wrong
	// resolution they generally fall elsewhere.
	last := len(h.Data) - 1
	if res.bucketIndex(h.Min) != idx[0] {
		return &ResolutionError{Input: input, Bucket: 0, Field: "min", Value: h.Min, Res: res}
	}
	if res.bucketIndex(h.Max) != idx[last] {
		return &ResolutionError{Input: input, Bucket: last, Field: "max", Value: h.Max, Res: res}
	}
	for b, j := range idx {
		counts[j] += h.Data[b].Count
	}
	return nil
}

// checkSummary checks that h's (input number input) summary figures are
// finite, that it has buckets, and that its min is not above its max.
func checkSummary(input int, h *fstats.HistogramData) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"min", h.Min}, {"max", h.Max}, {"sum", h.Sum}, {"avg", h.Avg}, {"stddev", h.StdDev}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("stats: merge input %d: %s is %g", input, f.name, f.v)
		}
	}
	if len(h.Data) == 0 {
		return fmt.Errorf("stats: merge input %d: count %d but no buckets", input, h.Count)
	}
	if h.Min > h.Max {
		return fmt.Errorf("stats: merge input %d: min %g s > max %g s", input, h.Min, h.Max)
	}
	return nil
}

// bucketIndexes returns the canonical bucket of res of each of h's buckets
// (input number input), after checking they are positive, in order, on
// res's boundaries, and sum to h's count.
func bucketIndexes(res Resolution, input int, h *fstats.HistogramData) ([]int, error) {
	idx := make([]int, len(h.Data))
	var total int64
	prev := -1
	for b := range h.Data {
		bk := &h.Data[b]
		if bk.Count <= 0 {
			return nil, fmt.Errorf("stats: merge input %d: bucket %d has count %d", input, b, bk.Count)
		}
		total += bk.Count
		j, err := canonicalBucket(res, input, h, b)
		if err != nil {
			return nil, err
		}
		if j <= prev {
			return nil, fmt.Errorf("stats: merge input %d: bucket %d [%g, %g] s is out of order", input, b, bk.Start, bk.End)
		}
		if b > 0 && j > 0 {
			// Every non-first Start is the boundary below its bucket.
			if s, ok := res.boundaryIndex(bk.Start); !ok || s != j-1 {
				return nil, &ResolutionError{Input: input, Bucket: b, Field: "start", Value: bk.Start, Res: res}
			}
		}
		idx[b] = j
		prev = j
	}
	if total != h.Count {
		return nil, fmt.Errorf("stats: merge input %d: bucket counts sum to %d, want count %d", input, total, h.Count)
	}
	return idx, nil
}

// canonicalBucket returns the canonical bucket of res that h's bucket b
// (input number input) is, or a ResolutionError when its bounds are not
// res's boundaries.
func canonicalBucket(res Resolution, input int, h *fstats.HistogramData, b int) (int, error) {
	bk := &h.Data[b]
	switch {
	case b < len(h.Data)-1:
		// A non-last End is always a canonical boundary, and its bucket is
		// the one ending there.
		j, ok := res.boundaryIndex(bk.End)
		if !ok {
			return 0, &ResolutionError{Input: input, Bucket: b, Field: "end", Value: bk.End, Res: res}
		}
		return j, nil
	case b > 0:
		// The last End is Max, but a non-first Start is the canonical
		// boundary just below the bucket.
		s, ok := res.boundaryIndex(bk.Start)
		if !ok {
			return 0, &ResolutionError{Input: input, Bucket: b, Field: "start", Value: bk.Start, Res: res}
		}
		return s + 1, nil
	default:
		// A single bucket spans [Min, Max]: it is Max's bucket.
		return res.bucketIndex(h.Max), nil
	}
}

// exportBuckets turns canonical bucket counts into Data exactly like fortio's
// Histogram.Export: empty buckets are skipped, the first Start is min, the
// last End is max, and Percent is cumulative.
func exportBuckets(res Resolution, counts []int64, lo, hi float64, n int64) []fstats.Bucket {
	var data []fstats.Bucket
	var total int64
	for j, c := range counts {
		if c == 0 {
			continue
		}
		total += c
		var b fstats.Bucket
		if len(data) == 0 {
			b.Start = lo
		} else {
			b.Start = res.boundary(j - 1)
		}
		if j < numValues {
			b.End = res.boundary(j)
		} else {
			b.End = hi
		}
		b.Percent = 100. * float64(total) / float64(n)
		b.Count = c
		data = append(data, b)
	}
	data[len(data)-1].End = hi
	return data
}
