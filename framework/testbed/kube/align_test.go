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

// refreshingKubelet is the fake cluster's kubelet as a real one serves
// its counters: collected every period, the second node half a period
// after the first, and read as they were at the last collection. It
// records the times it collected what it served.
type refreshingKubelet struct {
	fc     *fakeCluster
	period time.Duration
	mu     sync.Mutex
	served map[string][]time.Time
}

func (k *refreshingKubelet) fetch(ctx context.Context, node string) (kubelet.Snapshot, error) {
	phase := time.Duration(0)
	if node == "meshbench-worker2" {
		phase = k.period / 2
	}
	n := max(0, time.Since(k.fc.start)-phase) / k.period
	at := k.fc.start.Add(phase + n*k.period)
	k.mu.Lock()
	k.served[node] = append(k.served[node], at)
	k.mu.Unlock()
	return k.fc.read(ctx, node, at)
}

// A window shorter than the kubelet's refresh interval: the run keeps its
// load on until every node has collected its counters under load, both
// before and after the window, so that they span whole refresh intervals
// under load and the CPU figures stand. Without the wait (CounterWait
// negative), the same window's counters are idle for most of their span
// or do not move at all.
func TestWindowsAlignToKubeletRefreshes(t *testing.T) {
	const period = 1500 * time.Millisecond
	fc, ctx, m := startFakeCluster(t)
	kl := &refreshingKubelet{fc: fc, period: period, served: map[string][]time.Time{}}
	var said []string
	logf := func(f string, a ...any) {
		if l := fmt.Sprintf(f, a...); strings.Contains(l, "keeps its load on") {
			said = append(said, l)
		}
	}
	tg := fc.newTarget(t, Options{Mesh: m, CounterWait: 5 * time.Second, Logf: logf})
	tg.fetch = kl.fetch
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })

	o := testbed.Window{Concurrency: 2, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond}
	for _, arm := range testbed.Arms {
		start := time.Now()
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
		require.NoError(t, err, arm)
		took := time.Since(start)
		assert.Empty(t, run.Invalid, arm)
		assert.Empty(t, run.CPUInvalid, "%s: the counters were collected under load", arm)
		assert.Empty(t, run.Warnings, arm)
		assert.GreaterOrEqual(t, run.Resources.Elapsed, period, "%s: the counters span a refresh interval, longer than the 400 ms window", arm)
		assert.Less(t, took, 2*period+2*refreshChunk+3*time.Second, "%s: the wait is bounded by the refreshes", arm)
		assert.True(t, run.Resources.Aligned, arm)
		for _, u := range run.Resources.Usage {
			assert.InDelta(t, 100, u.MilliCores, 1, "%s %s", arm, u.Name)
			assert.InDelta(t, u.MilliCores/run.Load.AchievedQPS*1000, run.CPUPer1k(u.MilliCores), 1e-6,
				"%s %s: per request, the rate over the window's throughput", arm, u.Name)
		}
	}

	assert.Len(t, said, 1, "the cost is said once: %q", said)

	// The same window, without waiting for the kubelets.
	tg.o.CounterWait = -1
	found := false
	for i := 0; i < 3 && !found; i++ {
		run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
		require.NoError(t, err)
		found = len(run.CPUInvalid) > 0 || len(run.Warnings) > 0
		assert.False(t, run.Resources.Aligned)
	}
	assert.True(t, found, "unaligned, a 400 ms window under a 1.5 s refresh leaves the counters diluted or unmoved")
}
