package benchmarks

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// The seed articles' methods (../shared/seeds), one function each, with a
// small default sweep: -concurrency widens c, and docs/scenarios.md shows how to
// write a sweep of your own.

// BenchmarkPlacement is the critique of "86 % throughput loss": one loadgen
// in the mesh at c=32 funnels every request through its own single
// sidecar; out of the mesh, or as 4 shards × 8 each with its own sidecar,
// the proxy tax is measured, not the loadgen's proxy (linkerd-86pct-critique-zh).
func BenchmarkPlacement(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Axes: []suite.Axis{suite.Placements(
		suite.Placement{Where: testbed.InMesh, Loadgens: 1, C: 32},
		suite.Placement{Where: testbed.OutOfMesh, Loadgens: 1, C: 32},
		suite.Placement{Where: testbed.InMesh, Loadgens: 4, C: 32},
	)}})
}

// BenchmarkProxyThreads gives every proxy 1 worker thread, then 2, then
// its default: the critique's single-core proxy, made visible.
func BenchmarkProxyThreads(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Concurrency: []int{16}, Axes: []suite.Axis{suite.Threads(1, 2, 0)}})
}

// BenchmarkServiceTime puts a 50 ms backend in both arms: the tax against a
// realistic call, where the critique extrapolated from an echo to a
// database call. At c=8 it serves 160 req/s, so its windows are at least
// 3 s: about 500 requests a run.
func BenchmarkServiceTime(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Concurrency: []int{8}, MinWindow: 3 * time.Second, Axes: []suite.Axis{suite.ServiceTimes(50 * time.Millisecond)}})
}

// BenchmarkPayload sweeps the response body: the per-byte cost of the
// proxies' TLS and copying, next to the per-request cost.
func BenchmarkPayload(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Concurrency: []int{8}, Axes: []suite.Axis{suite.Payloads(128, 1<<10, 16<<10, 100<<10)}})
}

// BenchmarkRateLadder doubles the open-loop rate at every rung, from 1000
// req/s for at most 4 rungs, until the meshed arm misses its rate or its
// p99 passes 25 ms, like Nighthawk's adaptive load: latency against
// throughput, and the highest rate each arm holds within the SLO
// (cilium-ambient-linkerd-1m-rps). Each rung's window holds at least 4000
// requests, so that its p99 rests on the 40 slowest, not on 10.
func BenchmarkRateLadder(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Concurrency: []int{16}, MinRequests: 4000, Axes: []suite.Axis{suite.Ladder(1000, 2, 4, 25*time.Millisecond)}})
}

// BenchmarkProxyKilled kills the backend's sidecar 1 s into the window, as
// a crash would; the target restarts it as a kubelet would. Errors are
// measured, not a failed run: failed requests, time to the first success,
// time to recovery, and latency meanwhile.
func BenchmarkProxyKilled(b *testing.B) {
	mb.Sweep(b, suite.Scenario{
		Concurrency: []int{4},
		Arms:        []testbed.Arm{testbed.Meshed},
		Fault:       &testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true, After: time.Second},
		// Action: testbed.Restart stops it gracefully instead (SIGTERM), as a rollout restart would.
	})
}
