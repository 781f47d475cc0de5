package verdict

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
)

func loadGood(t *testing.T) *Thresholds {
	t.Helper()
	th, err := Load("testdata/good.yaml")
	require.NoError(t, err)
	return th
}

// one is a single-repeat summary of v.
func one(v float64) stats.Summary { return stats.Summary{Median: v, Lo: v, Hi: v, N: 1} }

// The first rule in file order whose path and concurrency match applies,
// even when a later rule matches too.
func TestMatchFirstRuleWins(t *testing.T) {
	th := loadGood(t)
	cases := []struct {
		path     Path
		c        int
		wantLine int // 0: no rule
	}{
		{OneHop, 1, 5},   // the c=1 one-hop rule, above the "*" rule that also matches
		{TwoHop, 1, 13},  // the one-hop rule does not match two-hop; "*" does
		{OneHop, 2, 13},  // past the c=1 rule
		{OneHop, 16, 13}, // top of "1-16"
		{OneHop, 17, 21}, // "17+"
		{OneHop, 1 << 20, 21},
		{TwoHop, 16, 13},
		{TwoHop, 17, 0}, // deliberately uncovered
		{OneHop, 0, 0},  // concurrency starts at 1
	}
	for _, c := range cases {
		l, ok := th.Match(c.path, c.c)
		assert.Equal(t, c.wantLine != 0, ok, "%s c=%d", c.path, c.c)
		assert.Equal(t, c.wantLine, l.Line, "%s c=%d", c.path, c.c)
	}
}

func TestCheckUsesFirstMatchingRule(t *testing.T) {
	th := loadGood(t)
	// 1.0 ms passes the "*" rule (2 ms) but not the c=1 one-hop rule (0.5 ms).
	v := th.Check([]Observation{
		{Scenario: "BenchmarkOneHop/c=1", Path: OneHop, Concurrency: 1, Values: map[Metric]stats.Summary{P50DeltaMs: one(1.0)}},
		{Scenario: "BenchmarkTwoHop/c=1", Path: TwoHop, Concurrency: 1, Values: map[Metric]stats.Summary{P50DeltaMs: one(1.0)}},
	})
	assert.Equal(t, 2, v.Checked)
	require.Len(t, v.Breaches, 1)
	assert.Equal(t, "BenchmarkOneHop/c=1", v.Breaches[0].Scenario)
	assert.Equal(t, 5, v.Breaches[0].Line)
	assert.Equal(t, 0.5, v.Breaches[0].Limit)
	assert.Empty(t, v.Uncovered)
}

func TestCheckBreachCarriesMeasurement(t *testing.T) {
	th := loadGood(t)
	got := stats.Summary{Median: 3.21, Lo: 2.9, Hi: 3.62, N: 3}
	v := th.Check([]Observation{{
		Scenario: "BenchmarkOneHop/c=32", Path: OneHop, Concurrency: 32,
		Values: map[Metric]stats.Summary{P50DeltaMs: got, SidecarRSSMiB: one(120)},
	}})
	assert.Equal(t, 2, v.Checked)
	require.Len(t, v.Breaches, 0, "3.21ms is under the 17+ rule's 8ms")

	th.Limits[2].Allowed[P50DeltaMs] = 1.5
	v = th.Check([]Observation{{
		Scenario: "BenchmarkOneHop/c=32", Path: OneHop, Concurrency: 32,
		Values: map[Metric]stats.Summary{P50DeltaMs: got},
	}})
	require.Len(t, v.Breaches, 1)
	assert.Equal(t, &Breach{
		File: "testdata/good.yaml", Line: 21, Scenario: "BenchmarkOneHop/c=32",
		Metric: P50DeltaMs, Got: got, Limit: 1.5,
	}, v.Breaches[0])
	assert.Equal(t, "testdata/good.yaml:21: BenchmarkOneHop/c=32: too high p50 delta: got 3.21ms (2.90–3.62, n=3) expected ≤ 1.50ms",
		v.Breaches[0].Error())
}

// Breach messages, one per metric, with and without an interval.
func TestBreachError(t *testing.T) {
	cases := []struct {
		b    Breach
		want string
	}{
		{Breach{File: "f.yaml", Line: 4, Scenario: "BenchmarkOneHop/c=32", Metric: P50DeltaMs,
			Got: stats.Summary{Median: 3.21, Lo: 2.9, Hi: 3.62, N: 3}, Limit: 1.5},
			"f.yaml:4: BenchmarkOneHop/c=32: too high p50 delta: got 3.21ms (2.90–3.62, n=3) expected ≤ 1.50ms"},
		{Breach{File: "f.yaml", Line: 4, Scenario: "BenchmarkOneHop/c=1", Metric: P99DeltaPct,
			Got: stats.Summary{Median: 812.25, Lo: 640, Hi: 901.5, N: 10, Confidence: 0.95}, Limit: 600},
			"f.yaml:4: BenchmarkOneHop/c=1: too high p99 increase: got 812.2% (640.0–901.5 at 95%, n=10) expected ≤ 600.0%"},
		{Breach{File: "f.yaml", Line: 9, Scenario: "BenchmarkTwoHop/c=8", Metric: ThroughputLossPct,
			Got: one(91), Limit: 85},
			"f.yaml:9: BenchmarkTwoHop/c=8: too high throughput loss: got 91.0% (n=1) expected ≤ 85.0%"},
		{Breach{File: "f.yaml", Line: 9, Scenario: "BenchmarkTwoHop/c=8", Metric: SidecarCPUPer1kReqMs,
			Got: stats.Summary{Median: 1812.5, Lo: 1700, Hi: 1900, N: 5}, Limit: 1500},
			"f.yaml:9: BenchmarkTwoHop/c=8: too high sidecar CPU per 1k requests: got 1812.5 CPU-ms (1700.0–1900.0, n=5) expected ≤ 1500.0 CPU-ms"},
		{Breach{File: "f.yaml", Line: 9, Scenario: "BenchmarkTwoHop/c=8", Metric: SidecarRSSMiB,
			Got: one(512), Limit: 300},
			"f.yaml:9: BenchmarkTwoHop/c=8: too high sidecar RSS: got 512.0 MiB (n=1) expected ≤ 300.0 MiB"},
		{Breach{File: "f.yaml", Line: 4, Scenario: "BenchmarkOneHop/c=1", Metric: P50DeltaMs,
			Got: stats.Summary{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), N: 3}, Limit: 2},
			"f.yaml:4: BenchmarkOneHop/c=1: p50 delta is not a number: got NaN (NaN–NaN, n=3) expected ≤ 2.00ms"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.b.Error())
	}
}

// The interval decides, as in the upgrade gate: wholly above the limit
// breaches, wholly at or below passes, holding it is undecided; one repeat
// decides on its value; NaN and +Inf fail.
func TestCheckDecidesOnInterval(t *testing.T) {
	th := loadGood(t) // BenchmarkTwoHop/c=4: p50DeltaMs ≤ 2, line 13
	check := func(s stats.Summary) Verdict {
		return th.Check([]Observation{{Scenario: "BenchmarkTwoHop/c=4", Path: TwoHop, Concurrency: 4,
			Values: map[Metric]stats.Summary{P50DeltaMs: s}}})
	}
	cases := []struct {
		name              string
		s                 stats.Summary
		breach, undecided int
	}{
		{"one repeat at the limit passes", one(2), 0, 0},
		{"one repeat above it breaches", one(2.001), 1, 0},
		{"interval at or below the limit passes", stats.Summary{Median: 1.5, Lo: 1.1, Hi: 2, N: 3}, 0, 0},
		{"median below, interval holds the limit", stats.Summary{Median: 1.9, Lo: 1.5, Hi: 2.6, N: 3}, 0, 1},
		{"median above, interval holds the limit", stats.Summary{Median: 2.4, Lo: 1.9, Hi: 2.6, N: 3}, 0, 1},
		{"low end at the limit is still undecided", stats.Summary{Median: 2.4, Lo: 2, Hi: 2.6, N: 3}, 0, 1},
		{"interval wholly above breaches", stats.Summary{Median: 2.4, Lo: 2.01, Hi: 2.6, N: 3}, 1, 0},
		{"NaN breaches", one(math.NaN()), 1, 0},
		{"NaN interval breaches", stats.Summary{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), N: 3}, 1, 0},
		{"+Inf breaches", one(math.Inf(1)), 1, 0},
	}
	for _, c := range cases {
		v := check(c.s)
		assert.Len(t, v.Breaches, c.breach, c.name)
		assert.Len(t, v.Undecided, c.undecided, c.name)
		assert.Equal(t, 1, v.Checked, c.name)
		if c.undecided == 0 {
			assert.Equal(t, c.breach > 0, v.Err() != nil, c.name)
		} else {
			assert.NoError(t, v.Err(), "%s: undecided does not fail the verdict", c.name)
		}
	}
	v := check(stats.Summary{Median: 1.9, Lo: 1.5, Hi: 2.6, N: 3})
	require.Len(t, v.Undecided, 1)
	assert.Equal(t, "testdata/good.yaml:13: BenchmarkTwoHop/c=4: undecided p50 delta: got 1.90ms (1.50–2.60, n=3), the limit 2.00ms lies inside; more repeats (-count) decide it",
		v.Undecided[0].Error())
}

// TestCheckUnjudgedCPU: a CPU metric the observation cannot judge (a
// meshed run's CPU counters were diluted by idle time) is undecided with
// its reason, whether its figure would pass, breach or is missing, and
// never fails the verdict; the latency beside it is judged as ever.
func TestCheckUnjudgedCPU(t *testing.T) {
	th := loadGood(t)
	const why = "the CPU figures of 1 of the meshed arm's 3 runs are not valid"
	v := th.Check([]Observation{
		{Scenario: "BenchmarkOneHop/c=4", Path: OneHop, Concurrency: 4,
			Values: map[Metric]stats.Summary{
				P50DeltaMs:           one(3),   // breaches the 2 ms limit
				SidecarCPUPer1kReqMs: one(9e3), // would breach the 1500 limit
				MeshCores:            one(1),   // the rule does not limit it
			},
			Unjudged: map[Metric]string{SidecarCPUPer1kReqMs: why, MeshCores: why}},
		{Scenario: "BenchmarkOneHop/c=8", Path: OneHop, Concurrency: 8,
			Values:   map[Metric]stats.Summary{P50DeltaMs: one(1)},
			Unjudged: map[Metric]string{SidecarCPUPer1kReqMs: why}},
	})
	assert.Equal(t, 4, v.Checked, "p50 and sidecar CPU at both points; mesh cores has no limit")
	require.Len(t, v.Breaches, 1)
	assert.Equal(t, P50DeltaMs, v.Breaches[0].Metric)
	require.Len(t, v.Undecided, 2)
	assert.Equal(t, "testdata/good.yaml:13: BenchmarkOneHop/c=4: undecided sidecar CPU per 1k requests: got 9000.0 CPU-ms (n=1), not judged: "+why,
		v.Undecided[0].Error())
	assert.Equal(t, "testdata/good.yaml:13: BenchmarkOneHop/c=8: undecided sidecar CPU per 1k requests: not judged: "+why,
		v.Undecided[1].Error(), "nothing measured to show")
	assert.Equal(t, why, v.Undecided[1].Why)

	v = th.Check([]Observation{{Scenario: "BenchmarkOneHop/c=8", Path: OneHop, Concurrency: 8,
		Values:   map[Metric]stats.Summary{P50DeltaMs: one(1), SidecarCPUPer1kReqMs: one(100)},
		Unjudged: map[Metric]string{SidecarCPUPer1kReqMs: why}}})
	assert.NoError(t, v.Err(), "an unjudged figure that would pass is not a pass, nor a failure")
	assert.Len(t, v.Undecided, 1)
	assert.Equal(t, 2, v.Checked)
}

// A metric missing from Values is skipped and counted nowhere; one outside
// the five Metrics is ignored.
func TestCheckSkipsMissingMetrics(t *testing.T) {
	th := loadGood(t)
	v := th.Check([]Observation{
		{Scenario: "BenchmarkOneHop/c=4", Path: OneHop, Concurrency: 4},
		{Scenario: "BenchmarkOneHop/c=8", Path: OneHop, Concurrency: 8, Values: map[Metric]stats.Summary{
			ThroughputLossPct: one(10), SidecarRSSMiB: one(100), "p90DeltaMs": one(1e9),
		}},
	})
	assert.Equal(t, 2, v.Checked)
	assert.Empty(t, v.Breaches)
	assert.Empty(t, v.Uncovered)
	assert.NoError(t, v.Err())
}

func TestCheckReportsUncovered(t *testing.T) {
	th := loadGood(t)
	v := th.Check([]Observation{
		{Scenario: "BenchmarkTwoHop/c=32", Path: TwoHop, Concurrency: 32, Values: map[Metric]stats.Summary{P50DeltaMs: one(100)}},
		{Scenario: "BenchmarkTwoHop/c=16", Path: TwoHop, Concurrency: 16, Values: map[Metric]stats.Summary{P50DeltaMs: one(1)}},
	})
	assert.Equal(t, 1, v.Checked, "an uncovered observation is not checked")
	assert.Empty(t, v.Breaches)
	require.Len(t, v.Uncovered, 1)
	assert.Equal(t, &Uncovered{File: "testdata/good.yaml", Scenario: "BenchmarkTwoHop/c=32", Path: TwoHop, Concurrency: 32}, v.Uncovered[0])
	assert.EqualError(t, v.Err(), "testdata/good.yaml: BenchmarkTwoHop/c=32: no rule matches path two-hop at concurrency 32; add one, or this scenario is not gated")
}

// Err joins every breach, then every uncovered observation, one per line,
// and each stays reachable with errors.As.
func TestVerdictErrJoins(t *testing.T) {
	th := loadGood(t)
	v := th.Check([]Observation{
		{Scenario: "BenchmarkTwoHop/c=32", Path: TwoHop, Concurrency: 32},
		{Scenario: "BenchmarkOneHop/c=1", Path: OneHop, Concurrency: 1, Values: map[Metric]stats.Summary{
			P50DeltaMs:    stats.Summary{Median: 0.8, Lo: 0.7, Hi: 0.95, N: 5},
			SidecarRSSMiB: one(200),
		}},
		{Scenario: "BenchmarkTwoHop/c=64", Path: TwoHop, Concurrency: 64},
	})
	assert.Equal(t, 2, v.Checked)
	err := v.Err()
	require.Error(t, err)
	assert.Equal(t, ""+
		"testdata/good.yaml:5: BenchmarkOneHop/c=1: too high p50 delta: got 0.80ms (0.70–0.95, n=5) expected ≤ 0.50ms\n"+
		"testdata/good.yaml:5: BenchmarkOneHop/c=1: too high sidecar RSS: got 200.0 MiB (n=1) expected ≤ 128.0 MiB\n"+
		"testdata/good.yaml: BenchmarkTwoHop/c=32: no rule matches path two-hop at concurrency 32; add one, or this scenario is not gated\n"+
		"testdata/good.yaml: BenchmarkTwoHop/c=64: no rule matches path two-hop at concurrency 64; add one, or this scenario is not gated",
		err.Error())

	var b *Breach
	require.True(t, errors.As(err, &b))
	assert.Equal(t, P50DeltaMs, b.Metric)
	assert.Equal(t, 0.8, b.Got.Median)
	var u *Uncovered
	require.True(t, errors.As(err, &u))
	assert.Equal(t, "BenchmarkTwoHop/c=32", u.Scenario)
}

func TestVerdictErrNilWhenClean(t *testing.T) {
	assert.NoError(t, Verdict{}.Err())
	assert.NoError(t, Verdict{Checked: 7}.Err())
}

func TestCheckWithoutRulesLeavesEverythingUncovered(t *testing.T) {
	v := (&Thresholds{File: "none.yaml"}).Check([]Observation{{Scenario: "BenchmarkOneHop/c=1", Path: OneHop, Concurrency: 1}})
	assert.Len(t, v.Uncovered, 1)
	assert.Error(t, v.Err())
}
