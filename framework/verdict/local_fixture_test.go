package verdict_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/verdict"
)

// quietPoint is one comparison of a quiet default main job: the medians
// over 3 pairs of p50 delta (ms), p99 increase (%), throughput loss (%),
// sidecar CPU-ms per 1k requests and sidecar RSS (MiB). capacity says the
// meshed arm's throughput is the sidecar's capacity, so that a sidecar
// serving half as many requests halves the meshed req/s.
type quietPoint struct {
	name, path               string
	c                        int
	p50, p99, loss, cpu, rss float64
	capacity                 bool
}

// quietRuns are the two quiet main jobs (`go test ./benchmarks -bench .`
// with nothing else on the 2-core VM) the shipped local fixture was
// calibrated on: results/20261130T214955Z-local.json, then
// results/20261130T231934Z-local.json, point by point.
var quietRuns = []quietPoint{
	{"BenchmarkOneHop/c=1", "one-hop", 1, 0.7789, 769.9, 89.85, 942.1, 55.3, true},
	{"BenchmarkOneHop/c=1", "one-hop", 1, 0.7619, 727.4, 88.14, 947.2, 54.8, true},
	{"BenchmarkOneHop/c=4", "one-hop", 4, 1.073, 641.5, 90.1, 455.2, 56.4, true},
	{"BenchmarkOneHop/c=4", "one-hop", 4, 1.292, 601.7, 91.19, 543.1, 56.1, true},
	{"BenchmarkOneHop/c=16", "one-hop", 16, 2.991, 290.5, 91.31, 343.6, 58.6, true},
	{"BenchmarkOneHop/c=16", "one-hop", 16, 3.275, 270.5, 90.61, 379.5, 58.4, true},
	{"BenchmarkOneHop/c=32", "one-hop", 32, 6.207, 325.4, 90.23, 361.7, 60.6, true},
	{"BenchmarkOneHop/c=32", "one-hop", 32, 6.76, 366.4, 89.65, 413.3, 60.6, true},
	{"BenchmarkTwoHop/c=1", "two-hop", 1, 1.961, 324.8, 84.8, 2351, 58.7, true},
	{"BenchmarkTwoHop/c=1", "two-hop", 1, 2.074, 312.2, 84.93, 2506, 58.6, true},
	{"BenchmarkTwoHop/c=4", "two-hop", 4, 2.733, 215, 84.56, 1060, 59.1, true},
	{"BenchmarkTwoHop/c=4", "two-hop", 4, 3.165, 234.5, 84.41, 1246, 59.3, true},
	{"BenchmarkTwoHop/c=16", "two-hop", 16, 8.138, 277.7, 81.18, 876.8, 60.5, true},
	{"BenchmarkTwoHop/c=16", "two-hop", 16, 8.412, 284.2, 82.82, 888, 60.4, true},
	{"BenchmarkTwoHop/c=32", "two-hop", 32, 14.06, 312.6, 82.02, 802.7, 64.5, true},
	{"BenchmarkTwoHop/c=32", "two-hop", 32, 17.5, 326.5, 81.78, 969.3, 63.9, true},
	{"BenchmarkProtocols/protocol=h2/c=8", "one-hop", 8, 3.446, 300.3, 87.08, 674.7, 56.8, true},
	{"BenchmarkProtocols/protocol=h2/c=8", "one-hop", 8, 3.452, 287.3, 88.55, 668.4, 56.9, true},
	{"BenchmarkProtocols/protocol=grpc/c=8", "one-hop", 8, 4.285, 178.5, 79.85, 829.9, 60.4, true},
	{"BenchmarkProtocols/protocol=grpc/c=8", "one-hop", 8, 5.096, 186.1, 82.36, 1010, 61.2, true},
	{"BenchmarkPlacement/placement=in-mesh/c=32", "one-hop", 32, 6.173, 308.5, 90.5, 365.1, 62.9, true},
	{"BenchmarkPlacement/placement=in-mesh/c=32", "one-hop", 32, 5.193, 305.2, 90.07, 304.9, 62.9, true},
	{"BenchmarkPlacement/placement=out-of-mesh/c=32", "one-hop", 32, 3.707, 204.1, 83.58, 177.3, 59.4, true},
	{"BenchmarkPlacement/placement=out-of-mesh/c=32", "one-hop", 32, 2.188, 134.6, 81.83, 112.8, 59.4, true},
	{"BenchmarkPlacement/placement=in-mesh-x4/c=32", "one-hop", 32, 9.386, 508.5, 92.5, 535.8, 60.6, true},
	{"BenchmarkPlacement/placement=in-mesh-x4/c=32", "one-hop", 32, 6.066, 333.6, 91.46, 339.2, 60.8, true},
	{"BenchmarkProxyThreads/threads=1/c=16", "one-hop", 16, 5.998, 356.1, 92.15, 532, 56.3, true},
	{"BenchmarkProxyThreads/threads=1/c=16", "one-hop", 16, 4.233, 353.4, 93.03, 409.8, 56.5, true},
	{"BenchmarkProxyThreads/threads=2/c=16", "one-hop", 16, 4.911, 334.7, 90.96, 506.5, 58.9, true},
	{"BenchmarkProxyThreads/threads=2/c=16", "one-hop", 16, 3.266, 287.3, 91.48, 360.9, 57.8, true},
	{"BenchmarkProxyThreads/threads=default/c=16", "one-hop", 16, 4.509, 300, 90.58, 498.9, 60.7, true},
	{"BenchmarkProxyThreads/threads=default/c=16", "one-hop", 16, 3.636, 324.3, 91.83, 410.8, 60.6, true},
	{"BenchmarkServiceTime/service=50ms/c=8", "one-hop", 8, 2.818, 16.52, 6.505, 1171, 55.6, true},
	{"BenchmarkServiceTime/service=50ms/c=8", "one-hop", 8, 2.163, 10.84, 4.339, 811.4, 55, true},
	{"BenchmarkPayload/payload=128B/c=8", "one-hop", 8, 1.994, 321, 91.65, 412.8, 58.8, true},
	{"BenchmarkPayload/payload=128B/c=8", "one-hop", 8, 2.055, 419.1, 91.9, 443.2, 59.1, true},
	{"BenchmarkPayload/payload=16KiB/c=8", "one-hop", 8, 2.77, 240.7, 90.45, 550.2, 57.6, true},
	{"BenchmarkPayload/payload=16KiB/c=8", "one-hop", 8, 2.015, 192.7, 89.53, 416.6, 57, true},
	{"BenchmarkPayload/payload=100KiB/c=8", "one-hop", 8, 3.414, 195.2, 88.58, 703.2, 57.6, true},
	{"BenchmarkPayload/payload=100KiB/c=8", "one-hop", 8, 2.876, 163.1, 88.76, 590.4, 57.9, true},
	{"BenchmarkRateLadder/qps=1000/c=16", "one-hop", 16, 3.93, 297.3, 0.4346, 589, 59.8, false},
	{"BenchmarkRateLadder/qps=1000/c=16", "one-hop", 16, 3.36, 250.3, 0.1162, 481.3, 59.5, false},
	{"BenchmarkRateLadder/qps=2000/c=16", "one-hop", 16, 3.774, 435.2, 10.39, 547.3, 59.7, false},
	{"BenchmarkRateLadder/qps=2000/c=16", "one-hop", 16, 2.881, 252.7, 3.305, 429.2, 59.4, false},
	{"BenchmarkUserFlow/users=20", "two-hop", 20, 4.689, 181.4, 5.236, 3499, 59.7, false},
	{"BenchmarkUserFlow/users=20", "two-hop", 20, 4.925, 238.1, 6.949, 2448, 59.2, false},
	{"BenchmarkPayload/payload=1KiB/c=8", "one-hop", 8, 1.736, 359.8, 91.5, 377.2, 56.5, true},
	{"BenchmarkRateLadder/qps=4000/c=16", "one-hop", 16, 2.259, 358.6, 37.54, 437.5, 59.4, false},
}

func (q quietPoint) observation(p50, loss float64) verdict.Observation {
	one := func(v float64) stats.Summary { return stats.Summary{Median: v, Lo: v, Hi: v, N: 3} }
	return verdict.Observation{
		Scenario: q.name, Labels: labels.Parse(q.name), Path: verdict.Path(q.path), Concurrency: q.c,
		Values: map[verdict.Metric]stats.Summary{
			verdict.P50DeltaMs: one(p50), verdict.P99DeltaPct: one(q.p99), verdict.ThroughputLossPct: one(loss),
			verdict.SidecarCPUPer1kReqMs: one(q.cpu), verdict.SidecarRSSMiB: one(q.rss),
		},
	}
}

// TestShippedLocalFixtureHasTeeth checks fixtures/thresholds/local.yaml on
// the quiet runs it was calibrated on. Every point of every run passes,
// with at least 25 % margin on the p50 delta and on the meshed arm's share
// of the baseline's throughput. A doubled p50 delta (from the geometric
// mean of the runs) trips it at every point; a sidecar serving half as
// many requests trips it at every point whose throughput is the sidecar's
// capacity.
func TestShippedLocalFixtureHasTeeth(t *testing.T) {
	th, err := verdict.Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	byName := map[string][]quietPoint{}
	var names []string
	for _, q := range quietRuns {
		if byName[q.name] == nil {
			names = append(names, q.name)
		}
		byName[q.name] = append(byName[q.name], q)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p50, share := 1.0, 1.0
			for _, q := range byName[name] {
				o := q.observation(q.p50, q.loss)
				v := th.Check([]verdict.Observation{o})
				require.Empty(t, v.Uncovered)
				require.NoError(t, v.Err(), "the quiet run passes")
				rule, _ := th.MatchObservation(o)
				assert.GreaterOrEqual(t, rule.P50DeltaMs, 1.25*q.p50, "p50 margin, rule at line %d", rule.Line)
				assert.LessOrEqual(t, 100-rule.ThroughputLossPct, (100-q.loss)/1.25, "throughput margin, rule at line %d", rule.Line)
				p50 *= q.p50
				share *= 100 - q.loss
			}
			n := float64(len(byName[name]))
			p50, share = math.Pow(p50, 1/n), math.Pow(share, 1/n)
			q := byName[name][0]
			assertBreach(t, th, q.observation(2*p50, 100-share), verdict.P50DeltaMs)
			if q.capacity {
				assertBreach(t, th, q.observation(p50, 100-share/2), verdict.ThroughputLossPct)
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
