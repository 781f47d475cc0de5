package local_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/local"
	"github.com/meshbench/meshbench/framework/validity"
)

func newTarget(t *testing.T) *local.Target {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes and Caddy; run without -short")
	}
	tg, err := local.New(t.Context(), local.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() {
		pids := tg.PIDs()
		require.NoError(t, tg.Close(context.Background()))
		for _, pid := range pids {
			assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "pid %d survived Close", pid)
		}
	})
	return tg
}

var short = testbed.Window{Concurrency: 2, Duration: 1500 * time.Millisecond, Warmup: 200 * time.Millisecond}

// faulted is the load of a fault run: open loop, so that the rate before
// the fault, which recovery is judged against (back within 10 %), is the
// same as after it whatever else the machine runs. Closed loop under `go
// test ./...` measured 2097 req/s in the 300 ms before a restart and did
// not get back within 10 % of it in the 1.2 s left.
var faulted = testbed.Window{Concurrency: 2, QPS: 200, RateTolerance: 0.3, Duration: 2 * time.Second, Warmup: 200 * time.Millisecond}

// TestKilledSidecarIsRestarted kills the meshed backend's sidecar 300 ms
// into the window: the failed requests are measured (the run stays valid),
// the recovery is on the run, the supervisor starts the sidecar again as
// a kubelet would, and the next run works on the restarted proxy.
func TestKilledSidecarIsRestarted(t *testing.T) {
	tg := newTarget(t)
	before := tg.PIDs()
	fault := &testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true, After: 300 * time.Millisecond}
	run, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: faulted, Fault: fault})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	require.NotNil(t, run.Recovery)
	rec := *run.Recovery
	t.Logf("recovery: %s", rec)
	assert.Positive(t, rec.Failed, "requests failed while the sidecar was down")
	assert.Equal(t, run.Load.Errors, rec.Failed, "every failure came after the fault")
	assert.GreaterOrEqual(t, rec.FirstSuccess, rec.FirstFailure)
	assert.GreaterOrEqual(t, rec.Recovered, rec.FirstSuccess)
	require.True(t, run.Warnings.Has(validity.FaultKilled), "%v", run.Warnings)
	assert.Contains(t, run.Warnings.Of(validity.FaultKilled)[0].Detail, "meshed/backend-sidecar was killed")
	assert.Equal(t, 1, tg.Restarts()["meshed/backend-sidecar"])
	after := tg.PIDs()
	assert.Len(t, after, len(before))
	assert.Len(t, slices.DeleteFunc(slices.Clone(after), func(p int) bool { return slices.Contains(before, p) }), 1, "one new pid")

	next, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: short})
	require.NoError(t, err)
	assert.Empty(t, next.Invalid, "the run after the restart")
	assert.Nil(t, next.Recovery)

	// The baseline has no sidecar: the same fault leaves it alone.
	base, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{Path: testbed.OneHop}, Window: short, Fault: fault})
	require.NoError(t, err)
	assert.Nil(t, base.Fault)
	assert.Zero(t, base.Load.Errors)
}

// TestRestartedSidecarComesBack restarts the meshed backend's sidecar
// 300 ms into the window, as a container stop would: SIGTERM, on which
// Caddy exits cleanly, then the supervisor starts it again as a kubelet
// would. The recovery is on the run (a graceful stop may fail no request:
// then the run only warns), the sidecar has a new pid, and the runs after
// it, in either arm, work on the restarted proxy.
func TestRestartedSidecarComesBack(t *testing.T) {
	tg := newTarget(t)
	before := tg.PIDs()
	fault := &testbed.Fault{Action: testbed.Restart, Workload: "backend", Sidecar: true, After: 300 * time.Millisecond}
	require.NoError(t, tg.Supports(testbed.Workload{}, fault))
	run, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: faulted, Fault: fault})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	assert.Equal(t, fault, run.Fault)
	require.NotNil(t, run.Recovery)
	rec := *run.Recovery
	t.Logf("recovery: %s; warnings: %v", rec, run.Warnings)
	assert.Equal(t, run.Load.Errors, rec.Failed, "every failure came after the fault")
	assert.GreaterOrEqual(t, rec.Recovered, time.Duration(0), "recovered within the window")
	if rec.Failed == 0 {
		assert.True(t, run.Warnings.Has(validity.FaultNoFailures), "%v", run.Warnings)
	}
	require.True(t, run.Warnings.Has(validity.FaultKilled), "%v", run.Warnings)
	assert.Contains(t, run.Warnings.Of(validity.FaultKilled)[0].Detail, "meshed/backend-sidecar was restarted")

	next, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: short})
	require.NoError(t, err)
	assert.Empty(t, next.Invalid, "the run after the restart")
	assert.Nil(t, next.Recovery)
	assert.Equal(t, 1, tg.Restarts()["meshed/backend-sidecar"], "restarted once, by the supervisor")
	after := tg.PIDs()
	assert.Len(t, after, len(before))
	assert.Len(t, slices.DeleteFunc(slices.Clone(after), func(p int) bool { return slices.Contains(before, p) }), 1, "one new pid")

	base, err := tg.Run(t.Context(), testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{Path: testbed.OneHop}, Window: short})
	require.NoError(t, err)
	assert.Empty(t, base.Invalid, "the baseline after the restart")
	assert.Equal(t, map[string]int{"meshed/backend-sidecar": 1}, tg.Restarts(), "nothing else restarted")
}

// TestWorkloadsPerScenario deploys what each workload needs on first use:
// a payload, a service time, three hops, an out-of-mesh loadgen and four
// in-mesh loadgen shards, each proven by the path it took.
func TestWorkloadsPerScenario(t *testing.T) {
	tg := newTarget(t)
	cases := []struct {
		name string
		w    testbed.Workload
		arm  testbed.Arm
		hops []testbed.Hop
	}{
		{"payload", testbed.Workload{ResponseSize: 16 << 10}, testbed.Meshed, []testbed.Hop{{Src: "loadgen", Dst: "backend"}}},
		{"service time", testbed.Workload{ServiceTime: 20 * time.Millisecond}, testbed.Baseline, []testbed.Hop{{Src: "loadgen", Dst: "backend"}}},
		{"three hops", testbed.Workload{Path: testbed.Chain(3)}, testbed.Meshed,
			[]testbed.Hop{{Src: "frontend", Dst: "backend"}, {Src: "frontend-2", Dst: "frontend"}, {Src: "loadgen", Dst: "frontend-2"}}},
		{"out of mesh", testbed.Workload{Placement: testbed.OutOfMesh}, testbed.Meshed, []testbed.Hop{{Src: "loadgen", Dst: "backend"}}},
		{"four shards", testbed.Workload{Loadgens: 4, Threads: 1}, testbed.Meshed, []testbed.Hop{{Src: "loadgen", Dst: "backend"}}},
	}
	for _, tc := range cases {
		o := short
		o.Concurrency = 4
		run, err := tg.Run(t.Context(), testbed.Spec{Arm: tc.arm, Workload: tc.w, Window: o})
		require.NoError(t, err, tc.name)
		assert.Empty(t, run.Invalid, tc.name)
		var got []testbed.Hop
		for _, e := range run.Edges {
			got = append(got, testbed.Hop{Src: e.Src, Dst: e.Dst})
			assert.Equal(t, tc.arm == testbed.Meshed && !(tc.w.Placement == testbed.OutOfMesh), e.Secured, "%s: %+v", tc.name, e)
		}
		assert.ElementsMatch(t, tc.hops, got, tc.name)
		switch tc.name {
		case "payload":
			assert.Equal(t, 16<<10, run.Workload.ResponseSize)
		case "service time":
			assert.GreaterOrEqual(t, run.Load.Percentile(50), 0.020, "every answer waits the service time")
		case "four shards":
			require.Len(t, run.Shards, 4)
			for _, s := range run.Shards {
				assert.Equal(t, 1, s.Options.Concurrency)
				assert.Positive(t, s.Requests)
			}
			u, ok := run.Resources.Role("sidecar")
			require.True(t, ok)
			assert.Positive(t, u.MilliCores)
		}
	}
	assert.Contains(t, tg.Supports(testbed.Workload{Replicas: 2}, nil).Error(), "replicas=2")
	assert.EqualError(t, tg.Supports(testbed.Workload{}, &testbed.Fault{Action: testbed.Kill, Workload: "frontend"}),
		`fault on "frontend": not on the one-hop path (backend)`)
	assert.EqualError(t, tg.Supports(testbed.Workload{}, &testbed.Fault{Action: "pause", Workload: "backend"}),
		`fault action "pause" is unknown: want kill or restart`)
	assert.EqualError(t, tg.Supports(testbed.Workload{}, &testbed.Fault{Action: testbed.Kill, Workload: "backend", NodeProxy: true}),
		"fault on a node proxy: the local target runs a sidecar per workload and no per-node proxy; use Target=kind or a cluster with istio-ambient or cilium")
}
