package verdict_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/verdict"
)

// quietRun is every comparison of the quiet default main job the shipped
// local fixture was calibrated on (results/20261130T214955Z-local.json,
// `go test ./benchmarks -bench .` with nothing else on the 2-core VM): the
// medians over 3 pairs of p50 delta (ms), p99 increase (%), throughput
// loss (%), sidecar CPU-ms per 1k requests and sidecar RSS (MiB). capacity
// says the scenario's throughput is the sidecar's capacity (closed loop),
// so that a sidecar with half the capacity halves the meshed req/s.
var quietRun = []struct {
	name, path               string
	c                        int
	p50, p99, loss, cpu, rss float64
	capacity                 bool
}{
	{"BenchmarkOneHop/c=1", "one-hop", 1, 0.7789, 769.9, 89.85, 942.1, 55.3, true},
	{"BenchmarkOneHop/c=4", "one-hop", 4, 1.073, 641.5, 90.1, 455.2, 56.4, true},
	{"BenchmarkOneHop/c=16", "one-hop", 16, 2.991, 290.5, 91.31, 343.6, 58.6, true},
	{"BenchmarkOneHop/c=32", "one-hop", 32, 6.207, 325.4, 90.23, 361.7, 60.6, true},
	{"BenchmarkTwoHop/c=1", "two-hop", 1, 1.961, 324.8, 84.8, 2351, 58.7, true},
	{"BenchmarkTwoHop/c=4", "two-hop", 4, 2.733, 215, 84.56, 1060, 59.1, true},
	{"BenchmarkTwoHop/c=16", "two-hop", 16, 8.138, 277.7, 81.18, 876.8, 60.5, true},
	{"BenchmarkTwoHop/c=32", "two-hop", 32, 14.06, 312.6, 82.02, 802.7, 64.5, true},
	{"BenchmarkProtocols/protocol=h2/c=8", "one-hop", 8, 3.446, 300.3, 87.08, 674.7, 56.8, true},
	{"BenchmarkProtocols/protocol=grpc/c=8", "one-hop", 8, 4.285, 178.5, 79.85, 829.9, 60.4, true},
	{"BenchmarkPlacement/placement=in-mesh/c=32", "one-hop", 32, 6.173, 308.5, 90.5, 365.1, 62.9, true},
	{"BenchmarkPlacement/placement=out-of-mesh/c=32", "one-hop", 32, 3.707, 204.1, 83.58, 177.3, 59.4, true},
	{"BenchmarkPlacement/placement=in-mesh-x4/c=32", "one-hop", 32, 9.386, 508.5, 92.5, 535.8, 60.6, true},
	{"BenchmarkProxyThreads/threads=1/c=16", "one-hop", 16, 5.998, 356.1, 92.15, 532, 56.3, true},
	{"BenchmarkProxyThreads/threads=2/c=16", "one-hop", 16, 4.911, 334.7, 90.96, 506.5, 58.9, true},
	{"BenchmarkProxyThreads/threads=default/c=16", "one-hop", 16, 4.509, 300, 90.58, 498.9, 60.7, true},
	{"BenchmarkServiceTime/service=50ms/c=8", "one-hop", 8, 2.818, 16.52, 6.505, 1171, 55.6, true},
	{"BenchmarkPayload/payload=128B/c=8", "one-hop", 8, 1.994, 321, 91.65, 412.8, 58.8, true},
	{"BenchmarkPayload/payload=16KiB/c=8", "one-hop", 8, 2.77, 240.7, 90.45, 550.2, 57.6, true},
	{"BenchmarkPayload/payload=100KiB/c=8", "one-hop", 8, 3.414, 195.2, 88.58, 703.2, 57.6, true},
	{"BenchmarkRateLadder/qps=1000/c=16", "one-hop", 16, 3.93, 297.3, 0.4346, 589, 59.8, false},
	{"BenchmarkRateLadder/qps=2000/c=16", "one-hop", 16, 3.774, 435.2, 10.39, 547.3, 59.7, false},
	{"BenchmarkUserFlow/users=20", "two-hop", 20, 4.689, 181.4, 5.236, 3499, 59.7, false},
}

func quietObservation(i int) verdict.Observation {
	q := quietRun[i]
	one := func(v float64) stats.Summary { return stats.Summary{Median: v, Lo: v, Hi: v, N: 3} }
	return verdict.Observation{
		Scenario: q.name, Labels: labels.Parse(q.name), Path: verdict.Path(q.path), Concurrency: q.c,
		Values: map[verdict.Metric]stats.Summary{
			verdict.P50DeltaMs: one(q.p50), verdict.P99DeltaPct: one(q.p99), verdict.ThroughputLossPct: one(q.loss),
			verdict.SidecarCPUPer1kReqMs: one(q.cpu), verdict.SidecarRSSMiB: one(q.rss),
		},
	}
}

// TestShippedLocalFixtureHasTeeth checks fixtures/thresholds/local.yaml on
// the quiet run it was calibrated on: every scenario passes with at least
// 25 % margin on the p50 delta and on the meshed share of throughput; a
// doubled p50 delta trips it in every scenario; a sidecar that serves half
// the requests it served trips it in every closed-loop scenario.
func TestShippedLocalFixtureHasTeeth(t *testing.T) {
	th, err := verdict.Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	for i, q := range quietRun {
		t.Run(q.name, func(t *testing.T) {
			quiet := quietObservation(i)
			v := th.Check([]verdict.Observation{quiet})
			require.Empty(t, v.Uncovered)
			require.NoError(t, v.Err(), "the quiet run passes")
			rule, ok := th.MatchObservation(quiet)
			require.True(t, ok)
			assert.GreaterOrEqual(t, rule.P50DeltaMs, 1.25*q.p50, "p50 margin, rule at line %d", rule.Line)
			assert.LessOrEqual(t, 100-rule.ThroughputLossPct, (100-q.loss)/1.25, "throughput margin, rule at line %d", rule.Line)

			doubled := quietObservation(i)
			doubled.Values[verdict.P50DeltaMs] = stats.Summary{Median: 2 * q.p50, N: 3}
			assertBreach(t, th, doubled, verdict.P50DeltaMs)

			if q.capacity {
				halved := quietObservation(i)
				// Meshed req/s halves against the same baseline: the share
				// kept, 100 - loss, halves.
				halved.Values[verdict.ThroughputLossPct] = stats.Summary{Median: 100 - (100-q.loss)/2, N: 3}
				assertBreach(t, th, halved, verdict.ThroughputLossPct)
			}
		})
	}
}

func assertBreach(t *testing.T, th *verdict.Thresholds, o verdict.Observation, m verdict.Metric) {
	t.Helper()
	v := th.Check([]verdict.Observation{o})
	require.Len(t, v.Breaches, 1, "%s: %v", m, v.Err())
	var b *verdict.Breach
	require.True(t, errors.As(v.Err(), &b))
	assert.Equal(t, m, b.Metric)
	assert.Equal(t, o.Scenario, b.Scenario)
}
