package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// loadWatchingReads are the fake cluster's counters read on the nodes at
// the instant, each read noting whether the stand-in apps were under load
// at that instant: whether they got load requests within the 50 ms after
// the read's stamp.
type loadWatchingReads struct {
	fc     *fakeCluster
	mu     sync.Mutex
	loaded []bool
}

func (r *loadWatchingReads) fetch(ctx context.Context, node string) (kubelet.Snapshot, error) {
	at := time.Now()
	before := r.fc.loads()
	time.Sleep(50 * time.Millisecond)
	on := r.fc.loads() > before
	r.mu.Lock()
	r.loaded = append(r.loaded, on)
	r.mu.Unlock()
	return r.fc.read(ctx, node, at)
}

// take returns the reads noted so far and forgets them.
func (r *loadWatchingReads) take() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.loaded
	r.loaded = nil
	return out
}

// loads is how many load requests the stand-in apps have answered.
func (fc *fakeCluster) loads() int64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var n int64
	for _, a := range fc.apps {
		n += a.loads.Load()
	}
	return n
}

// Counters read on the nodes at the instant are read under the run's
// load: the read that opens the window as the warm-up ends, with the load
// kept on, and the one that closes it with the load kept on after the
// window. Both nodes' reads, before and after, found the apps under load;
// the counters span the window and no idle time; the window is marked
// aligned and its CPU per request is the rate over the window's
// throughput. Without a warm-up the reads are taken idle around the
// window, as before.
func TestNodeReadsTakenUnderLoad(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	reads := &loadWatchingReads{fc: fc}
	var said []string
	logf := func(f string, a ...any) {
		if l := fmt.Sprintf(f, a...); strings.Contains(l, "under load") {
			said = append(said, l)
		}
	}
	tg := fc.newTarget(t, Options{Mesh: m, Logf: logf})
	tg.fetch, tg.onDemand = reads.fetch, true
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	reads.take()

	o := testbed.Window{Concurrency: 2, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond}
	for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
		start := time.Now()
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
		require.NoError(t, err, arm)
		took := time.Since(start)
		assert.Equal(t, []bool{true, true, true, true}, reads.take(), "%s: both nodes read under load, before and after the window", arm)
		assert.Empty(t, run.Invalid, arm)
		assert.Empty(t, run.CPUInvalid, "%s: no idle time in the counters", arm)
		assert.True(t, run.Resources.Aligned, arm)
		assert.Greater(t, run.Resources.Elapsed, run.Load.Elapsed, "%s: the counters span the window and some of the load around it", arm)
		assert.Less(t, run.Resources.Elapsed, run.Load.Elapsed+2*readStretchMin, arm)
		assert.Less(t, took, o.Warmup+o.Duration+2*readStretchMin+2*time.Second, "%s: the load is stopped once the reads are done", arm)
		for _, u := range run.Resources.Usage {
			assert.InDelta(t, u.MilliCores/run.Load.AchievedQPS*1000, run.CPUPer1k(u.MilliCores), 1e-6,
				"%s %s: per request, the rate over the window's throughput", arm, u.Name)
		}
	}
	assert.Len(t, said, 1, "the cost is said once: %q", said)

	o.Warmup = -1
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false, false}, reads.take(), "without a warm-up, the reads are idle around the window")
	assert.False(t, run.Resources.Aligned)
}
