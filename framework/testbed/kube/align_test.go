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
		assert.Less(t, took, 2*period+2*refreshPoll+3*time.Second, "%s: the wait is bounded by the refreshes", arm)
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

// loadTimeline samples the stand-in apps' load counter every 10 ms and
// notes when it grew: when the cluster was under load.
type loadTimeline struct {
	mu   sync.Mutex
	busy []time.Time
}

func watchLoad(ctx context.Context, fc *fakeCluster) *loadTimeline {
	lt := &loadTimeline{}
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := fc.loads()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if n := fc.loads(); n > last {
					lt.mu.Lock()
					lt.busy = append(lt.busy, now)
					lt.mu.Unlock()
					last = n
				}
			}
		}
	}()
	return lt
}

// longestIdle is the longest stretch without load between from and to.
func (lt *loadTimeline) longestIdle(from, to time.Time) time.Duration {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	var longest time.Duration
	prev := from
	for _, b := range lt.busy {
		if b.Before(from) || b.After(to) {
			continue
		}
		longest = max(longest, b.Sub(prev))
		prev = b
	}
	return max(longest, to.Sub(prev))
}

// slowKubelet is a refreshingKubelet whose every read takes 300 ms, as a
// kubelet read through a busy API server can.
type slowKubelet struct{ *refreshingKubelet }

func (k slowKubelet) fetch(ctx context.Context, node string) (kubelet.Snapshot, error) {
	time.Sleep(300 * time.Millisecond)
	return k.refreshingKubelet.fetch(ctx, node)
}

// While a run waits for the kubelets, its load stays on through their
// reads: the kubelet's counters collected under load, and the load never
// off for as long as a 300 ms read, from the warm-up's first request to
// the last request after the window (other than between the warm-up's
// stretch and the window, and the window and the stretch after it). The
// old wait, 2 s stretches with the kubelets read between them, leaves
// 400 ms gaps here.
func TestKubeletWaitKeepsTheLoadOn(t *testing.T) {
	const period = 3 * time.Second
	fc, ctx, m := startFakeCluster(t)
	kl := slowKubelet{&refreshingKubelet{fc: fc, period: period, served: map[string][]time.Time{}}}
	tg := fc.newTarget(t, Options{Mesh: m, CounterWait: 10 * time.Second})
	tg.fetch = kl.fetch
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	lt := watchLoad(ctx, fc)

	o := testbed.Window{Concurrency: 2, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond}
	for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
		require.NoError(t, err, arm)
		assert.Empty(t, run.CPUInvalid, arm)
		assert.True(t, run.Resources.Aligned, arm)
		assert.GreaterOrEqual(t, run.Resources.Elapsed, period, arm)
		warm := run.Resources.Start
		window := run.Load.Start
		end := window.Add(run.Load.Elapsed)
		last := lastBusy(lt, end.Add(period+readStretchMax))
		assert.Less(t, lt.longestIdle(warm.Add(50*time.Millisecond), window.Add(-200*time.Millisecond)), 250*time.Millisecond, "%s: the load stays on before the window", arm)
		assert.Less(t, lt.longestIdle(end.Add(200*time.Millisecond), last), 250*time.Millisecond, "%s: the load stays on after the window", arm)
		assert.Greater(t, last.Sub(end), 300*time.Millisecond, "%s: the load went on after the window", arm)
	}
}

// lastBusy is the last time lt saw load before limit.
func lastBusy(lt *loadTimeline, limit time.Time) time.Time {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	var last time.Time
	for _, b := range lt.busy {
		if b.Before(limit) {
			last = b
		}
	}
	return last
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

// With a check (Options.CheckExec), an aligned run also reads every node
// at the instant right after the kubelets' read that opens its window and
// the one that closes it, each time under the run's load, and carries
// those reads' window as Resources.Check beside the kubelets' figures.
func TestCheckReadsTheNodesBesideTheKubelets(t *testing.T) {
	const period = 1500 * time.Millisecond
	fc, ctx, m := startFakeCluster(t)
	kl := &refreshingKubelet{fc: fc, period: period, served: map[string][]time.Time{}}
	tg := fc.newTarget(t, Options{Mesh: m, CounterWait: 5 * time.Second})
	tg.fetch = kl.fetch
	var mu sync.Mutex
	var checked []time.Time
	tg.check = func(ctx context.Context, node string) (kubelet.Snapshot, error) {
		now := time.Now()
		mu.Lock()
		checked = append(checked, now)
		mu.Unlock()
		return fc.read(ctx, node, now)
	}
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	lt := watchLoad(ctx, fc)

	o := testbed.Window{Concurrency: 2, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	require.True(t, run.Resources.Aligned)
	check := run.Resources.Check
	require.NotNil(t, check, "the check's window is carried")
	assert.False(t, check.Aligned, "read at the instant")
	require.Len(t, checked, 2*len(tg.nodes), "every node read twice: as the window opens and as it closes")
	window := run.Load.Start
	end := window.Add(run.Load.Elapsed)
	opens, closes := checked[:len(tg.nodes)], checked[len(tg.nodes):]
	for i := range opens {
		assert.True(t, opens[i].Before(window) && closes[i].After(end), "read %d: around the window", i)
		for _, at := range []time.Time{opens[i], closes[i]} {
			assert.Less(t, lt.longestIdle(at.Add(-100*time.Millisecond), at), 100*time.Millisecond, "read %d at %v: under load", i, at)
		}
	}
	assert.InDelta(t, closes[0].Sub(opens[0]), check.Elapsed, float64(50*time.Millisecond), "the check spans its own reads")
	require.Equal(t, len(run.Resources.Usage), len(check.Usage))
	for i, u := range check.Usage {
		assert.Equal(t, run.Resources.Usage[i].Name, u.Name)
		assert.InDelta(t, 100, u.MilliCores, 1, u.Name)
	}

	bad := Options{CheckExec: func(context.Context, string, ...string) ([]byte, error) { return nil, nil }, NodeCPU: NodeCPUAgent}
	assert.ErrorContains(t, bad.normalize(), "CheckExec checks the kubelets' counters")
}
