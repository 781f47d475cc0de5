package stats_test

import (
	"fmt"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/stats"
)

// Two load generators record latencies, in seconds, at the same resolution;
// their exported histograms merge into the one a single generator would have
// recorded, and percentiles are read from the merge.
func ExampleMerge() {
	res := stats.DefaultResolution
	var exports []*fstats.HistogramData
	for g, slow := range []float64{0, 2e-3} {
		h := res.NewHistogram()
		for i := range 100 {
			h.Record(200e-6 + float64(i)*1e-6) // 200–299 µs
		}
		for range 2 * g {
			h.Record(slow + 300e-6) // a few 2.3 ms outliers on generator 1
		}
		exports = append(exports, h.Export())
	}
	merged, err := stats.Merge(res, exports...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("count %d, min %.3f ms, max %.3f ms\n", merged.Count, merged.Min*1e3, merged.Max*1e3)
	for _, q := range stats.Quantiles(merged, 50, 99, 99.9) {
		fmt.Printf("p%g %.3f ms\n", q.Percentile, q.Value*1e3)
	}
	// Output:
	// count 202, min 0.200 ms, max 2.300 ms
	// p50 0.249 ms
	// p99 0.300 ms
	// p99.9 2.270 ms
}

// Six interleaved repeat pairs of p50 latency, in seconds. The ratio carries
// its interval; PercentChange reads it as a percentage overhead.
func ExampleNewOverhead() {
	baseline := []float64{0.000537, 0.000541, 0.000529, 0.000560, 0.000533, 0.000548}
	meshed := []float64{0.000702, 0.000689, 0.000712, 0.000731, 0.000695, 0.000705}
	o, err := stats.NewOverhead(baseline, meshed)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("baseline ms:", o.Baseline.Scale(1e3))
	fmt.Println("meshed ms:  ", o.Meshed.Scale(1e3))
	fmt.Println("delta ms:   ", o.Delta.Scale(1e3))
	fmt.Println("overhead %: ", o.Ratio.PercentChange())
	fmt.Printf("confidence:  %.3f\n", o.Ratio.Confidence)
	// Output:
	// baseline ms: 0.539 (0.529–0.560, n=6)
	// meshed ms:   0.704 (0.689–0.731, n=6)
	// delta ms:    0.163 (0.148–0.183, n=6)
	// overhead %:  30.5 (27.4–34.6, n=6)
	// confidence:  0.969
}

// Throughput in req/s from interleaved repeats: a ratio below 1 reads as a
// percentage loss.
func ExampleSummary_PercentLoss() {
	baseline := []float64{41000, 52000, 25000}
	meshed := []float64{32800, 39000, 21250}
	r, err := stats.PairedRatio(baseline, meshed)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ratio: ", r)
	fmt.Println("loss %:", r.PercentLoss())
	// Output:
	// ratio:  0.800 (0.750–0.850, n=3)
	// loss %: 20.0 (15.0–25.0, n=3)
}

// Four load generators record latencies in nanoseconds, in unequal numbers,
// one with a 1.2 s stall; their HDR histograms merge into the one a single
// generator would have recorded, and percentiles keep 3 significant digits
// in the tail. The JSON form is HDR's compact encoding.
func ExampleMergeHDR() {
	var hs []*stats.HDR
	for g, n := range []int{4000, 3000, 2000, 1000} {
		h := stats.NewHDR()
		for i := range n {
			h.Record(int64(200_000 + i*10)) // 200–240 µs
		}
		if g == 3 {
			for range 20 {
				h.Record(1_234_567_890) // 1.23 s
			}
		}
		hs = append(hs, h)
	}
	merged, err := stats.MergeHDR(hs...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("count %d\n", merged.Count())
	for _, p := range []float64{50, 99, 99.9} {
		fmt.Printf("p%g %.6f s\n", p, merged.Percentile(p))
	}
	enc, _ := merged.Encode()
	fmt.Println(enc[:8])
	// Output:
	// count 10020
	// p50 0.000213 s
	// p99 0.000239 s
	// p99.9 1.235223 s
	// HISTFAAA
}
