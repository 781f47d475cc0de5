package report

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// record makes a run whose every request took lat seconds.
func record(arm testbed.Arm, rep int, lat, qps float64, sidecarMilli float64) Record {
	h := stats.DefaultResolution.NewHistogram()
	for range 1000 {
		h.Record(lat)
	}
	usage := []measure.Usage{{Name: "lg", Role: measure.RoleLoadgen, MilliCores: 300}, {Name: "app", Role: measure.RoleApp, MilliCores: 200}}
	if sidecarMilli > 0 {
		usage = append(usage, measure.Usage{Name: "sc", Role: measure.RoleSidecar, MilliCores: sidecarMilli, LoadRSS: 64 << 20, IdleRSS: 32 << 20})
	}
	return Record{Benchmark: "BenchmarkOneHop", Concurrency: 4, Repeat: rep, Run: &testbed.Run{
		Arm: arm, Path: testbed.OneHop,
		Load:      &load.Result{Options: load.Options{Resolution: stats.DefaultResolution}, Requests: 1000, AchievedQPS: qps, Latency: h.Export()},
		Resources: measure.Window{Elapsed: 2 * time.Second, Usage: usage, NodeUtilisation: map[string]float64{"local": 50}},
	}}
}

func TestCompare(t *testing.T) {
	// Two interleaved pairs; the machine got slower in the second, and the
	// pairs cancel that drift.
	recs := []Record{
		record(testbed.Baseline, 0, 0.000100, 10000, 0), record(testbed.Meshed, 0, 0.000300, 5000, 400),
		record(testbed.Baseline, 1, 0.000200, 8000, 0), record(testbed.Meshed, 1, 0.000400, 4000, 600),
	}
	cs := Compare(recs)
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Empty(t, c.Problems)
	assert.Equal(t, "BenchmarkOneHop/c=4", c.Scenario())
	assert.InDelta(t, 0.2, c.P50Delta.Median, 1e-9, "both pairs add 0.2ms")
	assert.InDelta(t, 0.2, c.P50Delta.Lo, 1e-9)
	assert.InDelta(t, 0.2, c.P50Delta.Hi, 1e-9)
	assert.Equal(t, 2, c.P50Delta.N)
	assert.InDelta(t, 150, c.P50Pct.Median, 1e-6, "+200% and +100%")
	assert.InDelta(t, 100, c.P50Pct.Lo, 1e-6)
	assert.InDelta(t, 200, c.P50Pct.Hi, 1e-6)
	assert.InDelta(t, 50, c.QPSLossPct.Median, 1e-9)
	assert.InDelta(t, 2.5, c.ProxyAppRatio.Median, 1e-9, "400/200 and 600/200")
	// Sidecar CPU per 1k requests: 500m × 2s / 1000 req × 1000 = 1000 CPU-ms.
	assert.InDelta(t, 1000, c.Meshed.CPUPer1k[measure.RoleSidecar].Median, 1e-9)
	assert.InDelta(t, 64, c.Meshed.RSS[measure.RoleSidecar].Median, 1e-9)
	assert.Equal(t, int64(2000), c.Meshed.Merged.Count, "both repeats merged")
	assert.Equal(t, 2, c.Baseline.Repeats)

	obs := c.Observation()
	assert.Equal(t, verdict.Path("one-hop"), obs.Path)
	assert.InDelta(t, 0.2, obs.Values[verdict.P50DeltaMs].Median, 1e-9)
	assert.InDelta(t, 1000, obs.Values[verdict.SidecarCPUPer1kReqMs].Median, 1e-9)
	assert.InDelta(t, 0.5, obs.Values[verdict.MeshCores].Median, 1e-9, "0.4 and 0.6 cores of sidecar")
	assert.InDelta(t, 0.35, obs.Values[verdict.MeshedP99Ms].Median, 1e-9, "the meshed arm's own p99, ms")
	// In units of the same pair's baseline: the p50 delta over the
	// baseline p50 (+200 % and +100 %), the meshed p99 over the baseline
	// p50, the sidecar's CPU per request over the baseline arm's.
	assert.Equal(t, stats.Summary{Median: 150, Lo: 100, Hi: 200, N: 2}, round(obs.Values[verdict.P50DeltaPct]))
	assert.Equal(t, stats.Summary{Median: 2.5, Lo: 2, Hi: 3, N: 2}, round(obs.Values[verdict.MeshedP99OverBaselineP50]))
	assert.Equal(t, stats.Summary{Median: 1, Lo: 0.8, Hi: 1.2, N: 2}, round(obs.Values[verdict.SidecarCPUOverBaselineCPU]))
	assert.Len(t, obs.Values, 10)
	assert.InDelta(t, 0.115, c.Meshed.MeshCoresPer1kRPS.Median, 1e-9, "0.4/5 and 0.6/4 cores per 1k req/s")
	assert.InDelta(t, 64, c.Meshed.MeshRSSMiB.Median, 1e-9)
	assert.Equal(t, 0.0, c.Baseline.MeshCores.Median, "no mesh in the baseline")
	assert.InDelta(t, 0.2, c.P999Delta.Median, 1e-9)
	assert.Zero(t, c.PodSidecarAppRatio.N, "usages without a pod give no per-pod ratio")

	var b bytes.Buffer
	PrintSummary(&b, cs)
	assert.Contains(t, b.String(), "0.200")
	assert.Contains(t, b.String(), "150 (100–200)")
}

func TestCompareUnpaired(t *testing.T) {
	cs := Compare([]Record{record(testbed.Baseline, 0, 0.0001, 100, 0)})
	require.Len(t, cs, 1)
	assert.Equal(t, []string{"no repeat has both arms"}, cs[0].Problems)
	assert.Empty(t, cs[0].Observation().Values, "nothing to gate on")

	// A meshed-only scenario (a fault) keeps its own figures: the errors
	// and latency of its runs, without overheads.
	a, b := record(testbed.Meshed, 0, 0.002, 900, 100), record(testbed.Meshed, 1, 0.004, 700, 100)
	a.Load.Errors, b.Load.Errors = 2808, 12
	cs = Compare([]Record{b, a})
	require.Len(t, cs, 1)
	assert.Equal(t, int64(2820), cs[0].Meshed.Errors)
	assert.Equal(t, 2, cs[0].Meshed.QPS.N)
	assert.InDelta(t, 800, cs[0].Meshed.QPS.Median, 1e-9)
	assert.Zero(t, cs[0].Baseline.QPS.N)
	assert.Zero(t, cs[0].P50Delta.N, "no overhead without a baseline")
}

// TestCompareOpenLoopHDR: with HDR histograms, an open-loop arm's
// percentiles come from the corrected one, the uncorrected figures are
// kept beside them, and the repeats' HDR histograms are merged.
func TestCompareOpenLoopHDR(t *testing.T) {
	hdr := func(fast, slow int) *stats.HDR {
		h := stats.NewHDR()
		for range fast {
			h.Record(100_000) // 100 µs
		}
		for range slow {
			h.Record(50_000_000) // 50 ms, requests due during a stall
		}
		return h
	}
	var recs []Record
	for rep := range 2 {
		for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
			r := record(arm, rep, 0.0001, 1000, 0)
			r.Load.Options.QPS = 1000
			r.Load.HDR = &load.Latencies{Uncorrected: hdr(1000, 0), Corrected: hdr(980, 20)}
			recs = append(recs, r)
		}
	}
	cs := Compare(recs)
	require.Len(t, cs, 1)
	a := cs[0].Meshed
	assert.InEpsilon(t, 50, a.P99.Median, 1e-3, "corrected p99, ms")
	assert.InEpsilon(t, 0.1, a.P99Uncorrected.Median, 1e-3, "as sent, ms")
	assert.InEpsilon(t, 0.1, a.P50Uncorrected.Median, 1e-3)
	assert.Equal(t, 2, a.P99Uncorrected.N)
	assert.InEpsilon(t, 50, a.Max.Median, 1e-3)
	require.NotNil(t, a.MergedHDR)
	assert.Equal(t, int64(2000), a.MergedHDR.Uncorrected.Count())
	assert.Equal(t, int64(2000), a.MergedHDR.Corrected.Count())

	closed := Compare([]Record{record(testbed.Baseline, 0, 0.0001, 100, 0), record(testbed.Meshed, 0, 0.0002, 100, 0)})
	assert.Zero(t, closed[0].Meshed.P99Uncorrected, "no correction in closed loop")
	assert.Nil(t, closed[0].Meshed.MergedHDR, "no HDR in these records")
}

// round rounds a summary's figures to 9 decimals, for exact comparisons
// of figures computed in floating point.
func round(s stats.Summary) stats.Summary {
	r := func(v float64) float64 { return math.Round(v*1e9) / 1e9 }
	s.Median, s.Lo, s.Hi = r(s.Median), r(s.Lo), r(s.Hi)
	return s
}
