package stats

import (
	fstats "fortio.org/fortio/stats"
)

// Percentile returns the value below which p percent of the samples in h
// fall, in h's unit (seconds for meshbench latencies), with p in [0, 100].
//
// It has exactly the semantics of fortio's HistogramData.CalcPercentile,
// without its logging: Min carries the first 100/Count percent, values are
// interpolated linearly inside each bucket from its Start to its End, and
// p >= 100 gives Max. It returns 0 when h is nil or has no data.
//
// Use it on a histogram from Merge to get percentiles over several load
// generators; the mean of per-generator percentiles is not a percentile.
func Percentile(h *fstats.HistogramData, p float64) float64 {
	if h == nil || len(h.Data) == 0 || h.Count <= 0 {
		return 0
	}
	if p >= 100 {
		return h.Max
	}
	// Min is at least one sample, so it covers the first 1/Count.
	pp := 100. / float64(h.Count)
	if p <= pp {
		return h.Min
	}
	for i := range h.Data {
		cur := &h.Data[i]
		if p <= cur.Percent {
			return cur.Start + (p-pp)/(cur.Percent-pp)*(cur.End-cur.Start)
		}
		pp = cur.Percent
	}
	return h.Max
}

// Quantiles returns Percentile(h, p) for each p in ps, in order, in the form
// fortio stores in HistogramData.Percentiles. It returns nil when h is nil or
// has no data, as fortio's CalcPercentiles adds nothing then.
func Quantiles(h *fstats.HistogramData, ps ...float64) []fstats.Percentile {
	if h == nil || len(h.Data) == 0 || h.Count <= 0 {
		return nil
	}
	out := make([]fstats.Percentile, len(ps))
	for i, p := range ps {
		out[i] = fstats.Percentile{Percentile: p, Value: Percentile(h, p)}
	}
	return out
}
