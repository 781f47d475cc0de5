package kube

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A duet on a cluster: two arms' runs at once, each with its own
// loadgens, pass the warm-up, the accounting and the window together, in
// the duet's order, and their windows overlap; each run records where its
// workloads ran, on the same nodes for both arms.
func TestDuetOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()

	order := []testbed.Arm{testbed.Meshed, testbed.Baseline}
	runs, barrier := runFakeDuet(ctx, t, tg, order)
	for _, st := range []testbed.Stage{testbed.StageWarmup, testbed.StageAccounting, testbed.StageWindow} {
		assert.Equal(t, order, barrier.Passed(st), "stage %s", st)
	}
	for i, run := range runs {
		assert.Empty(t, run.Invalid, "%s", order[i])
		assert.Positive(t, run.Load.Requests, "%s", order[i])
		assert.Equal(t, []string{"meshbench-worker"}, run.Nodes["backend"], "%s", order[i])
	}
	assert.Equal(t, runs[0].Nodes, runs[1].Nodes, "both arms' workloads on the same nodes")
	assert.GreaterOrEqual(t, testbed.JudgeDuet(runs[0], runs[1]), testbed.MinDuetOverlap)
	assert.Empty(t, runs[0].Invalid, "JudgeDuet found the windows together")
}

// When the counters are read at the instant (on the nodes, or here the
// kubelets without waiting for their refreshes), a duet reads every node
// once at each edge of the window for both arms, not once per arm, and
// closes the window with both loads still on: both arms' runs carry the
// same reads, and their CPU is not diluted.
func TestDuetReadsTheNodesOnceForBoth(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m, CounterWait: -1})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	var reads atomic.Int32
	fetch := tg.fetch
	tg.fetch = func(ctx context.Context, node string) (kubelet.Snapshot, error) {
		reads.Add(1)
		return fetch(ctx, node)
	}

	order := []testbed.Arm{testbed.Baseline, testbed.Meshed}
	runs, barrier := runFakeDuet(ctx, t, tg, order)
	assert.Equal(t, int32(2*len(tg.nodes)), reads.Load(), "every node read once as the window opens and once as it closes")
	assert.Contains(t, order, barrier.ReadBy(testbed.StageAccounting))
	assert.Contains(t, order, barrier.ReadBy(testbed.StageClose))
	assert.Equal(t, order, barrier.Passed(testbed.StageClose), "both windows ended before the read")
	for i, run := range runs {
		assert.Empty(t, run.Invalid, "%s", order[i])
		assert.Empty(t, run.CPUInvalid, "%s: the load stayed on through the read", order[i])
		assert.False(t, run.Resources.Aligned, "%s: read at the instant, not aligned to refreshes", order[i])
	}
}

// runFakeDuet runs one duet of the arms of order on tg (one hop, c=2,
// 500 ms windows), each arm in its own goroutine, and returns their runs
// in that order and the duet's barrier.
func runFakeDuet(ctx context.Context, t *testing.T, tg *Target, order []testbed.Arm) ([]*testbed.Run, *testbed.DuetBarrier) {
	t.Helper()
	barrier := testbed.NewDuetBarrier(order)
	o := testbed.Window{Concurrency: 2, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond}
	runs := make([]*testbed.Run, len(order))
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, arm := range order {
		wg.Go(func() {
			runs[i], errs[i] = tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o, Barrier: barrier.For(arm)})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return runs, barrier
}

// Out of mesh both arms share one loadgen, so a duet there is refused.
func TestDuetOutOfMeshIsRefused(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m, Placement: OutOfMesh})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	barrier := testbed.NewDuetBarrier([]testbed.Arm{testbed.Meshed, testbed.Baseline})
	_, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop},
		Window: testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond}, Barrier: barrier.For(testbed.Meshed)})
	assert.ErrorContains(t, err, "kube target: meshed one-hop: a duet runs each arm with its own loadgen, and out of mesh the arms share one (")
}
