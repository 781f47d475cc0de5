package report_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// window is a record of benchmark b whose 3 s window started startS
// seconds after t0.
func window(t0 time.Time, b string, startS float64) report.Record {
	return report.Record{Benchmark: b, Run: &testbed.Run{Load: &load.Result{
		Start: t0.Add(time.Duration(startS * float64(time.Second))), Elapsed: 3 * time.Second}}}
}

func TestMeasuredShares(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	win := func(b string, startS float64) report.Record { return window(t0, b, startS) }
	recs := []report.Record{
		win("BenchmarkOneHop", 2.5),                         // warm-up from 2.0
		win("BenchmarkOneHop", 6.1),                         // 0.1 s between the first window's end and this warm-up
		win("BenchmarkTwoHop", 10),                          // warm-up from 9.5, ends at 13
		{Benchmark: "BenchmarkBroken", Run: &testbed.Run{}}, // no load: skipped
	}
	ss := report.MeasuredShares(recs, t0, t0.Add(20*time.Second), 500*time.Millisecond)
	assert.Equal(t, []report.Share{
		{Name: "run", Measured: 9 * time.Second, Wall: 20 * time.Second},
		{Name: "BenchmarkOneHop", Measured: 6 * time.Second, Wall: 7100 * time.Millisecond},
		{Name: "BenchmarkTwoHop", Measured: 3 * time.Second, Wall: 3500 * time.Millisecond},
	}, ss)
	assert.InDelta(t, 45.0, ss[0].Pct(), 1e-9)
	assert.Equal(t, "measured windows: run 9.0 s of 20.0 s (45.0 %); BenchmarkOneHop 6.0 s of 7.1 s (84.5 %); BenchmarkTwoHop 3.0 s of 3.5 s (85.7 %)",
		report.FormatShares(ss))
	assert.Zero(t, report.Share{}.Pct())
}

// A duet's two halves ran at the same time: their windows count once, so
// the measured share stays a share of wall time, at most 100 %.
func TestMeasuredSharesCountsADuetOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	win := func(startS float64) report.Record { return window(t0, "BenchmarkUpgradeGate", startS) }
	recs := []report.Record{win(1), win(1.2), win(5), win(5)} // two duet pairs
	ss := report.MeasuredShares(recs, t0, t0.Add(10*time.Second), time.Second)
	assert.Equal(t, []report.Share{
		{Name: "run", Measured: 6200 * time.Millisecond, Wall: 10 * time.Second},
		{Name: "BenchmarkUpgradeGate", Measured: 6200 * time.Millisecond, Wall: 8 * time.Second},
	}, ss)
}

// The wall time outside the windows, by where it fell; with the measured
// time it adds up to the run's wall time.
func TestMeasuredGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	win := func(b string, startS float64) report.Record { return window(t0, b, startS) }
	warmed := func(r report.Record, w time.Duration) report.Record { r.Load.Options.Warmup = w; return r }
	recs := []report.Record{
		warmed(win("BenchmarkOneHop", 2.5), 300*time.Millisecond), // 2.5 s before it, a warm-up in them
		warmed(win("BenchmarkOneHop", 6.1), -1),                   // 0.6 s after the first; none (load.Options)
		warmed(win("BenchmarkTwoHop", 10), 200*time.Millisecond),  // 0.9 s after OneHop's last
		win("BenchmarkTwoHop", 10.2),                              // a duet's other half: no gap
		win("BenchmarkTwoHop", 14),                                // 0.8 s after the duet; 3 s after it to 20
		{Benchmark: "BenchmarkBroken", Run: &testbed.Run{}},       // no load: skipped
	}
	g := report.MeasuredGaps(recs, t0, t0.Add(20*time.Second))
	assert.Equal(t, report.Gaps{Before: 2500 * time.Millisecond, Within: 1400 * time.Millisecond, Between: 900 * time.Millisecond,
		After: 3 * time.Second, WithinGaps: 2, BetweenGaps: 1, Warmups: 2, Windows: 5, Warmup: 500 * time.Millisecond}, g)
	measured := report.MeasuredShares(recs, t0, t0.Add(20*time.Second), 0)[0].Measured
	assert.Equal(t, 20*time.Second, measured+g.Before+g.Within+g.Between+g.After)
	assert.Equal(t, "outside the windows: 2.5 s before the first, 1.4 s between a benchmark's windows (0.70 s each of 2), 0.9 s between benchmarks (0.90 s each of 1), 3.0 s after the last; warm-ups 0.5 s (2 of 5 windows began with one)",
		g.String())
	assert.Equal(t, report.Gaps{Before: 20 * time.Second}, report.MeasuredGaps(nil, t0, t0.Add(20*time.Second)))
}
