package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
)

func iv(med, lo, hi float64) stats.Summary { return stats.Summary{Median: med, Lo: lo, Hi: hi, N: 3} }

// Two quiet runs of two points: each limit is the geometric mean of the
// highest interval end and twice the lowest, on the metric's scale, with
// as few digits as keep it between them.
func TestCalibrateExactLimits(t *testing.T) {
	one := Observation{Scenario: "BenchmarkOneHop/c=4", Labels: labels.Parse("BenchmarkOneHop/c=4"), Path: OneHop, Concurrency: 4,
		Values: map[Metric]stats.Summary{
			P50DeltaMs:           iv(1, 0.9, 1.1),
			P99DeltaPct:          iv(300, 260, 350), // meshed/baseline 3.6–4.5
			ThroughputLossPct:    iv(90, 89, 91),    // baseline/meshed 9.09–11.1
			SidecarCPUPer1kReqMs: iv(500, 450, 560),
			SidecarRSSMiB:        iv(56, 55, 57),
		}}
	two := one
	two.Values = map[Metric]stats.Summary{
		P50DeltaMs:           iv(1.2, 1.0, 1.3),
		P99DeltaPct:          iv(320, 300, 340),
		ThroughputLossPct:    iv(90.5, 90, 91.5),
		SidecarCPUPer1kReqMs: iv(520, 500, 1000), // high end past ×2 the lowest: tight
		SidecarRSSMiB:        iv(56, 55, 58),
	}
	c, err := Calibrate("local", metric.MachineUnits, []Observation{one}, []Observation{two})
	require.NoError(t, err)
	require.Len(t, c.Points, 1)
	p := c.Points[0]
	assert.Equal(t, map[string]string{"benchmark": "BenchmarkOneHop"}, p.Rule.Match)
	assert.Equal(t, Concurrency{Min: 4, Max: 4}, p.Rule.Concurrency)
	// √(1.3 × 2·0.9) = 1.5297 → 1.5
	assert.Equal(t, 1.5, p.Rule.Allowed[P50DeltaMs])
	// √(4.5 × 2·3.6) = 5.692 → (5.692−1)·100 = 469.2 → 470
	assert.Equal(t, 470.0, p.Rule.Allowed[P99DeltaPct])
	// √(1/(1−0.915) × 2/(1−0.89)) = √(11.765 × 18.18) = 14.63 → loss 93.16 → 93
	assert.Equal(t, 93.0, p.Rule.Allowed[ThroughputLossPct])
	// tight: 2·450/√1.3 = 789.4 → 790, above the highest low end (500)
	// and √MinRoom below twice the lowest
	assert.Equal(t, 790.0, p.Rule.Allowed[SidecarCPUPer1kReqMs])
	// √(58 × 110) = 79.87 → 80
	assert.Equal(t, 80.0, p.Rule.Allowed[SidecarRSSMiB])
	assert.Equal(t, []Metric{SidecarCPUPer1kReqMs}, p.Tight)
	assert.Empty(t, p.Toothless)
	require.Len(t, c.Catchall, 1, "one path measured")
	assert.Equal(t, Limit{Path: OneHop, Concurrency: Concurrency{Min: 1}, Allowed: map[Metric]float64{P50DeltaMs: 1.5, P99DeltaPct: 470, ThroughputLossPct: 93,
		SidecarCPUPer1kReqMs: 790, SidecarRSSMiB: 80}}, c.Catchall[0])

	// The YAML reads back to the same rules, the header and quiet figures
	// as comments.
	th, err := Parse("calibrated.yaml", c.YAML("Calibrated on a test."))
	require.NoError(t, err)
	require.Len(t, th.Limits, 2)
	got := th.Limits[0]
	got.Line = 0
	assert.Equal(t, p.Rule, got)
	assert.Contains(t, string(c.YAML("x")), "  # BenchmarkOneHop/c=4, quiet: p50 delta 1.00 (0.90–1.10), 1.20 (1.00–1.30)ms;")
	assert.Contains(t, string(c.YAML("x")), "  # tight for sidecarCPUPer1kReqMs: the quiet intervals' high ends leave no room below ×2 of their lowest end,")

	// Low ends that differ by a doubling leave no room at all: the limit
	// keeps the quiet runs passing, 1.25 over the highest end.
	two.Values[SidecarCPUPer1kReqMs] = iv(950, 900, 1000)
	c, err = Calibrate("local", metric.MachineUnits, []Observation{one}, []Observation{two})
	require.NoError(t, err)
	assert.Equal(t, []Metric{SidecarCPUPer1kReqMs}, c.Points[0].Toothless)
	assert.Equal(t, 1200.0, c.Points[0].Rule.Allowed[SidecarCPUPer1kReqMs], "1.25 × 1000, to two digits")
	assert.Contains(t, string(c.YAML("x")), "  # no teeth for sidecarCPUPer1kReqMs: even the quiet intervals' low ends leave no room below ×2 of the lowest")
}

func TestCalibrateRefusesNothing(t *testing.T) {
	_, err := Calibrate("local", metric.MachineUnits, []Observation{{Scenario: "BenchmarkOneHop/c=1"}})
	assert.EqualError(t, err, "calibrate: the runs hold no comparison of a meshed arm with its baseline")
}

// A run that measured a point in shorter windows than the others (a rate
// ladder's rung before it asked for 4000 requests a window) counts there
// by its median alone: its wide interval (1.55–3.20× at 1 s) would have
// left the point without teeth; its level still bounds the limit.
func TestCalibrateCountsShorterWindowsByTheirMedians(t *testing.T) {
	rung := func(w time.Duration, p99 stats.Summary) []Observation {
		return []Observation{{Scenario: "BenchmarkRateLadder/qps=1000/c=16", Labels: labels.Parse("BenchmarkRateLadder/qps=1000/c=16"), Path: OneHop, Concurrency: 16,
			Window: w, Values: map[Metric]stats.Summary{P99DeltaPct: p99}}}
	}
	old := rung(time.Second, iv(183, 55, 220))     // meshed/baseline 2.83 (1.55–3.20)
	new1 := rung(4*time.Second, iv(220, 183, 250)) // 3.20 (2.83–3.50)
	new2 := rung(4*time.Second, iv(200, 180, 230)) // 3.00 (2.80–3.30)
	assert.Equal(t, map[string]time.Duration{"BenchmarkRateLadder/qps=1000/c=16": 4 * time.Second}, LongestWindows(old, new1, new2))

	c, err := Calibrate("local", metric.BaselineUnits, old, new1, new2)
	require.NoError(t, err)
	p := c.Points[0]
	assert.NotContains(t, p.Toothless, P99DeltaPct)
	// √(3.50 × 2·2.80) = 4.427 → 342.7 % → 340
	assert.Equal(t, 340.0, p.Rule.Allowed[P99DeltaPct])
	assert.Equal(t, 4*time.Second, p.Window)
	assert.Equal(t, []time.Duration{time.Second}, p.Shorter)
	y := string(c.YAML("x"))
	assert.Contains(t, y, "  # BenchmarkRateLadder/qps=1000/c=16, quiet: p99 increase 183.0 (183.0–183.0), 220.0 (183.0–250.0), 200.0 (180.0–230.0)%")
	assert.Contains(t, y, "  # 1 of the runs measured 1s windows here, not 4s: each counts by its medians alone (its interval was the shorter windows' sampling)\n")

	// Counted with its interval, the 1 s run leaves the point toothless.
	old[0].Window = 4 * time.Second
	c, err = Calibrate("local", metric.BaselineUnits, old, new1, new2)
	require.NoError(t, err)
	assert.Contains(t, c.Points[0].Toothless, P99DeltaPct)
	assert.Empty(t, c.Points[0].Shorter)
}

// A run whose rung was past the rate ladder's knee (the meshed arm missed
// its rate) reads a saturated arm's p99, lower than a run that holds the
// rung: 2026-12-02's meshed arm missed 4000 req/s and read a p99 increase
// of 274–290 %, 2026-12-07's held it at 399–641 %. Its latency sets no
// limit where another run held the rung; its throughput still counts.
// Where no run held the rung, its latency is all there is: counted, and
// left out of the catch-all.
func TestCalibrateLeavesOutTheLatencyPastTheKnee(t *testing.T) {
	rung := func(qps string, pastKnee string, p99, loss stats.Summary) []Observation {
		name := "BenchmarkRateLadder/qps=" + qps + "/c=16"
		return []Observation{{Scenario: name, Labels: labels.Parse(name), Path: OneHop, Concurrency: 16, Window: time.Second, PastKnee: pastKnee,
			Values: map[Metric]stats.Summary{P99DeltaPct: p99, ThroughputLossPct: loss}}}
	}
	missed := "missed its rate"
	saturated := rung("4000", missed, iv(274, 252, 313), iv(11.8, 11.3, 13.4)) // 3.74 (3.52–4.13)
	held1 := rung("4000", "", iv(466, 427, 534), iv(0.3, 0.2, 0.3))            // 5.66 (5.27–6.34)
	held2 := rung("4000", "", iv(399, 392, 404), iv(0.2, 0.2, 0.5))            // 4.99 (4.92–5.04)
	c, err := Calibrate("local", metric.BaselineUnits, saturated, held1, held2)
	require.NoError(t, err)
	p := c.Points[0]
	assert.Equal(t, 1, p.PastKnee)
	assert.False(t, p.HeldNowhere())
	assert.Equal(t, []stats.Summary{iv(466, 427, 534), iv(399, 392, 404)}, p.Quiet[P99DeltaPct])
	assert.Len(t, p.Quiet[ThroughputLossPct], 3, "the throughput past the knee counts")
	// √(6.34 × 2·4.92) = 7.899 → 689.9 % → 690
	assert.Equal(t, 690.0, p.Rule.Allowed[P99DeltaPct])
	assert.NotContains(t, p.Toothless, P99DeltaPct)
	assert.NotContains(t, p.Tight, P99DeltaPct)
	assert.Contains(t, string(c.YAML("x")), "  # 1 of the runs were past the rate ladder's knee here: their latency is left out")

	// Counted, the saturated run's 3.52 is the lowest end: 6.34 and 7.04
	// leave no room, so the limit is tight, 7.04/√1.3 = 6.17 → 520 %,
	// below the high end of a run that held the rung.
	saturated[0].PastKnee = ""
	c, err = Calibrate("local", metric.BaselineUnits, saturated, held1, held2)
	require.NoError(t, err)
	assert.Equal(t, []Metric{P99DeltaPct}, c.Points[0].Tight)
	assert.Equal(t, 520.0, c.Points[0].Rule.Allowed[P99DeltaPct])
	saturated[0].PastKnee = missed

	// Every run past the knee (the 8000 req/s rung): their latency is the
	// point's, and the catch-all takes none of it.
	c, err = Calibrate("local", metric.BaselineUnits, rung("8000", missed, iv(15861, 13960, 25034), iv(40.7, 33.8, 40.8)),
		rung("8000", missed, iv(7731, 6686, 18143), iv(28.7, 28.2, 28.7)), held2)
	require.NoError(t, err)
	require.Len(t, c.Points, 2)
	assert.True(t, c.Points[0].HeldNowhere())
	assert.Len(t, c.Points[0].Quiet[P99DeltaPct], 2)
	assert.Contains(t, string(c.YAML("x")), "  # every run was past the rate ladder's knee here")
	require.Len(t, c.Catchall, 1)
	assert.Equal(t, c.Points[1].Rule.Allowed[P99DeltaPct], c.Catchall[0].Allowed[P99DeltaPct], "the held rung's p99, not the saturated one's")
	assert.Equal(t, c.Points[0].Rule.Allowed[ThroughputLossPct], c.Catchall[0].Allowed[ThroughputLossPct], "the loosest throughput loss, past the knee or not")
}

// Where the meshed p99 over the baseline p50 has teeth outright, the p99
// increase, tight at the same point, is spared: it catches no doubling
// the other misses, and another machine's quiet run broke it (TwoHop/c=4
// on the AMD EPYC). With no outright form it stays tight.
func TestCalibrateSparesATightP99Twin(t *testing.T) {
	point := func(p99, overP50 stats.Summary) []Observation {
		return []Observation{{Scenario: "BenchmarkTwoHop/c=4", Labels: labels.Parse("BenchmarkTwoHop/c=4"), Path: TwoHop, Concurrency: 4,
			Values: map[Metric]stats.Summary{P99DeltaPct: p99, MeshedP99OverBaselineP50: overP50}}}
	}
	one := point(iv(223.5, 152.8, 305.1), iv(23.66, 21.57, 24.82))
	two := point(iv(176.4, 88.9, 207.4), iv(25.63, 23.16, 26.89))
	c, err := Calibrate("local", metric.BaselineUnits, one, two)
	require.NoError(t, err)
	p := c.Points[0]
	assert.Equal(t, []Metric{P99DeltaPct}, p.Spared)
	assert.NotContains(t, p.Tight, P99DeltaPct)
	// 1.25 × 4.051 = 5.064 → 406.4 % → 410
	assert.Equal(t, 410.0, p.Rule.Allowed[P99DeltaPct])
	// √(26.89 × 2·21.57) = 34.06 → 34
	assert.Equal(t, 34.0, p.Rule.Allowed[MeshedP99OverBaselineP50])
	assert.Contains(t, string(c.YAML("x")), "  # spared p99DeltaPct: tight, but another form of the p99 has teeth here, so the limit only keeps the quiet runs passing (×1.25 over their highest end)\n")

	// The other form tight too (a high end past twice the lowest low
	// end's room): neither is spared.
	two[0].Values[MeshedP99OverBaselineP50] = iv(25.63, 23.16, 40)
	c, err = Calibrate("local", metric.BaselineUnits, one, two)
	require.NoError(t, err)
	assert.Empty(t, c.Points[0].Spared)
	assert.ElementsMatch(t, []Metric{P99DeltaPct, MeshedP99OverBaselineP50}, c.Points[0].Tight)
}

// The calibration's CPUs are written as calibratedOn: and read back.
func TestCalibratedOnReadsBack(t *testing.T) {
	c, err := Calibrate("local", metric.BaselineUnits, []Observation{{Scenario: "BenchmarkOneHop/c=1", Labels: labels.Parse("BenchmarkOneHop/c=1"), Path: OneHop, Concurrency: 1,
		Values: map[Metric]stats.Summary{P99DeltaPct: iv(100, 90, 110)}}})
	require.NoError(t, err)
	c.CalibratedOn = []string{"AMD EPYC", `Intel(R) Xeon(R) Processor "v2"`}
	y := c.YAML("x")
	assert.Contains(t, string(y), "target: local\ncalibratedOn: [\"AMD EPYC\", \"Intel(R) Xeon(R) Processor \\\"v2\\\"\"]\nlimits:\n")
	th, err := Parse("calibrated.yaml", y)
	require.NoError(t, err)
	assert.Equal(t, c.CalibratedOn, th.CalibratedOn)
}
