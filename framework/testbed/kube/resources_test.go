package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/measure/nodestats"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

var (
	appKey    = kubelet.ContainerKey{Namespace: "mb-meshed", Pod: "backend-0", Container: "backend"}
	systemKey = kubelet.ContainerKey{Namespace: "kube-system", Pod: "coredns-0", Container: "coredns"}
)

func snap(node string, at time.Time, cpu float64, containers map[kubelet.ContainerKey]time.Time) kubelet.Snapshot {
	s := kubelet.Snapshot{Node: node, NodeCPUSeconds: kubelet.Sample{Value: cpu, Time: at}, Containers: map[kubelet.ContainerKey]kubelet.Container{}}
	for k, t := range containers {
		s.Containers[k] = kubelet.Container{CPUSeconds: kubelet.Sample{Value: cpu / 10, Time: t}}
	}
	return s
}

// The kubelet refreshes containers on their own schedule: a read counts
// as refreshed once the node's counters and those of every container that
// matters were collected at or after the time asked for.
func TestRefreshedSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	matters := func(k kubelet.ContainerKey) bool { return k.Namespace == "mb-meshed" }
	read := func(node, app, system time.Time) map[string]kubelet.Snapshot {
		return map[string]kubelet.Snapshot{
			"n1": snap("n1", node, 1, map[kubelet.ContainerKey]time.Time{appKey: app, systemKey: system}),
			"n2": snap("n2", t0.Add(time.Hour), 1, nil),
		}
	}
	later := t0.Add(10 * time.Second)
	assert.True(t, refreshedSince(read(later, later, t0), later, matters), "kube-system's stale sample is not waited for")
	assert.True(t, refreshedSince(read(later, later, t0), t0, matters))
	assert.False(t, refreshedSince(read(later, t0, t0), later, matters), "the app's sample is older")
	assert.False(t, refreshedSince(read(t0, later, later), later, matters), "the node's sample is older")
	assert.True(t, refreshedSince(read(later, time.Time{}, t0), later, matters), "a sample without a time is not waited for")
	assert.True(t, refreshedSince(nil, later, matters))
}

// windowFixture is a target with a meshed and a baseline arm on one node
// n1 of 2 cores, the arms' pods and, from mk, a read of n1 at a time with
// every container at cpu core-seconds and the meshed backend's proxy
// throttled in throttled% of its periods.
type windowFixture struct {
	tg     *Target
	roleOf kubelet.RoleOf
	mk     func(at time.Time, cpu float64, throttled float64) kubelet.Snapshot
}

func newWindowFixture(t *testing.T) windowFixture {
	t.Helper()
	tg, err := newTarget(fake.NewClientset(), Options{})
	require.NoError(t, err)
	m, err := mesh.New("linkerd")
	require.NoError(t, err)
	tg.o.Mesh = m
	tg.nodes = []NodeInfo{{Name: "n1", AllocatableCores: 2}}
	base := &arm{name: testbed.Baseline, ns: "mb-baseline", loadgenNS: "mb-baseline"}
	meshed := &arm{name: testbed.Meshed, ns: "mb-meshed", loadgenNS: "mb-meshed"}
	tg.arms = map[testbed.Arm]*arm{testbed.Baseline: base, testbed.Meshed: meshed}
	pod := func(ns, name string, c manifests.Component) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{manifests.LabelComponent: string(c)}}}
	}
	pods := []corev1.Pod{
		pod("mb-meshed", "backend-0", manifests.Backend), pod("mb-meshed", "loadgen-0", manifests.Loadgen),
		pod("mb-baseline", "backend-0", manifests.Backend),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "linkerd", Name: "linkerd-destination-0", Labels: map[string]string{"linkerd.io/control-plane-component": "destination"}}},
	}
	mk := func(at time.Time, cpu float64, throttled float64) kubelet.Snapshot {
		s := kubelet.Snapshot{Node: "n1", NodeCPUSeconds: kubelet.Sample{Value: 10 * cpu, Time: at}, Containers: map[kubelet.ContainerKey]kubelet.Container{}}
		for _, key := range []kubelet.ContainerKey{
			ck("mb-meshed", "backend-0", "backend"), ck("mb-meshed", "backend-0", "linkerd-proxy"),
			ck("mb-meshed", "loadgen-0", "loadgen"), ck("mb-meshed", "loadgen-0", "linkerd-proxy"),
			ck("mb-baseline", "backend-0", "backend"), ck("kube-system", "coredns-0", "coredns"),
		} {
			c := kubelet.Container{CPUSeconds: kubelet.Sample{Value: cpu, Time: at}, WorkingSetBytes: kubelet.Sample{Value: 1 << 20, Time: at}}
			if key.Container == "linkerd-proxy" && key.Pod == "backend-0" {
				c.Throttling = &kubelet.Throttling{Periods: kubelet.Sample{Value: 100 * cpu}, ThrottledPeriods: kubelet.Sample{Value: throttled * cpu}, LimitCores: 0.5}
			}
			s.Containers[key] = c
		}
		return s
	}
	return windowFixture{tg: tg, roleOf: tg.roleOf(meshed, pods), mk: mk}
}

func ck(ns, pod, c string) kubelet.ContainerKey {
	return kubelet.ContainerKey{Namespace: ns, Pod: pod, Container: c}
}

func TestResourceWindowRolesAndVerdicts(t *testing.T) {
	f := newWindowFixture(t)
	tg, mk := f.tg, f.mk
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	before := map[string]kubelet.Snapshot{"n1": mk(t0, 1, 10)}
	after := map[string]kubelet.Snapshot{"n1": mk(t1, 6, 10)}
	tg.idle = map[kubelet.ContainerKey]kubelet.Container{ck("mb-meshed", "backend-0", "backend"): {WorkingSetBytes: kubelet.Sample{Value: 512 << 10}}}
	rep := tg.resourceWindow(f.roleOf, before, after, t0.Add(-time.Second), t1, kubelet.ContainerKey{})

	roles := map[string]measure.Role{}
	for _, u := range rep.Window.Usage {
		roles[u.Name] = u.Role
		assert.InDelta(t, 500, u.MilliCores, 1e-6, u.Name)
	}
	assert.Equal(t, map[string]measure.Role{
		"mb-meshed/backend-0/backend":       measure.RoleApp,
		"mb-meshed/backend-0/linkerd-proxy": measure.RoleSidecar,
		"mb-meshed/loadgen-0/loadgen":       measure.RoleLoadgen,
		"mb-meshed/loadgen-0/linkerd-proxy": measure.RoleSidecar,
	}, roles, "the idle baseline arm and kube-system are not the run's")
	assert.InDelta(t, 250, rep.Window.NodeUtilisation["n1"], 1e-6, "5 cores-s over 10 s on 2 cores")
	for _, u := range rep.Window.Usage {
		if u.Name == "mb-meshed/backend-0/backend" {
			assert.EqualValues(t, 512<<10, u.IdleRSS, "idle memory from before any load")
			assert.EqualValues(t, 1<<20, u.LoadRSS)
		}
		assert.Equal(t, measure.MemoryWorkingSet, u.Memory, "%s: no RSS read", u.Name)
	}
	require.Len(t, rep.Invalid, 1, "a throttled proxy measured its limit")
	assert.Equal(t, validity.Throttled, rep.Invalid[0].Kind)
	assert.Contains(t, rep.Invalid[0].Detail, "mb-meshed/backend-0/linkerd-proxy (sidecar) was CPU-throttled in 10%")
	assert.Empty(t, rep.Warnings)

	// A restart of one of the run's containers invalidates it; one in the
	// other arm does not.
	restarted := mk(t1, 6, 10)
	c := restarted.Containers[ck("mb-meshed", "loadgen-0", "loadgen")]
	c.CPUSeconds.Value = 0.1
	restarted.Containers[ck("mb-meshed", "loadgen-0", "loadgen")] = c
	c = restarted.Containers[ck("mb-baseline", "backend-0", "backend")]
	c.CPUSeconds.Value = 0.1
	restarted.Containers[ck("mb-baseline", "backend-0", "backend")] = c
	rep = tg.resourceWindow(f.roleOf, before, map[string]kubelet.Snapshot{"n1": restarted}, t0, t1, kubelet.ContainerKey{})
	assert.Equal(t, []validity.Kind{validity.Restart, validity.Throttled}, rep.Invalid.Kinds(), "the proxy is still throttled")
	all := strings.Join(rep.Invalid.Strings(), "\n")
	assert.Contains(t, all, "restart during the window: container mb-meshed/loadgen-0/loadgen")
	assert.NotContains(t, all, "mb-baseline")
}

// The memory of a container whose reads have its RSS is its RSS, idle
// and loaded, however its page cache grows; the idle read stands for its
// idle memory only with the kind the window reports.
func TestResourceWindowMemory(t *testing.T) {
	f := newWindowFixture(t)
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	backendProxy, loadgenProxy := ck("mb-meshed", "backend-0", "linkerd-proxy"), ck("mb-meshed", "loadgen-0", "linkerd-proxy")
	backend := ck("mb-meshed", "backend-0", "backend")
	withRSS := func(s kubelet.Snapshot, at time.Time, ws, rss float64) kubelet.Snapshot {
		for _, k := range []kubelet.ContainerKey{backendProxy, loadgenProxy} {
			c := s.Containers[k]
			c.WorkingSetBytes = kubelet.Sample{Value: ws, Time: at}
			c.RSSBytes = &kubelet.Sample{Value: rss, Time: at}
			s.Containers[k] = c
		}
		return s
	}
	// The proxies' access logs grow their working sets from 6.8 MiB to
	// 50 MiB over the window; their RSS stays at 4.5 MiB.
	before := map[string]kubelet.Snapshot{"n1": withRSS(f.mk(t0, 1, 0), t0, 7130317, 4718592)}
	after := map[string]kubelet.Snapshot{"n1": withRSS(f.mk(t1, 6, 0), t1, 52428800, 4722688)}
	f.tg.idle = map[kubelet.ContainerKey]kubelet.Container{
		backendProxy: {WorkingSetBytes: kubelet.Sample{Value: 5 << 20}, RSSBytes: &kubelet.Sample{Value: 4 << 20}},
		loadgenProxy: {WorkingSetBytes: kubelet.Sample{Value: 5 << 20}}, // read without its RSS
		backend:      {WorkingSetBytes: kubelet.Sample{Value: 512 << 10}, RSSBytes: &kubelet.Sample{Value: 256 << 10}},
	}
	rep := f.tg.resourceWindow(f.roleOf, before, after, t0.Add(-time.Second), t1, kubelet.ContainerKey{})

	mem := map[string][3]any{}
	for _, u := range rep.Window.Usage {
		mem[u.Name] = [3]any{u.IdleRSS, u.LoadRSS, u.Memory}
	}
	assert.Equal(t, map[string][3]any{
		"mb-meshed/backend-0/linkerd-proxy": {int64(4 << 20), int64(4722688), measure.MemoryRSS},
		"mb-meshed/loadgen-0/linkerd-proxy": {int64(4718592), int64(4722688), measure.MemoryRSS},
		"mb-meshed/backend-0/backend":       {int64(512 << 10), int64(1 << 20), measure.MemoryWorkingSet},
		"mb-meshed/loadgen-0/loadgen":       {int64(1 << 20), int64(1 << 20), measure.MemoryWorkingSet},
	}, mem)
	sidecar, ok := rep.Window.Role(measure.RoleSidecar)
	require.True(t, ok)
	assert.Equal(t, int64(4722688), sidecar.MaxLoadRSS, "the gate's sidecar RSS, not the 50 MiB working set")
}

// TestResourceWindowWarnings: a little throttling and counters the
// kubelet did not refresh are warnings of their kinds; counters mostly
// idle make the run's CPU figures alone invalid.
func TestResourceWindowWarnings(t *testing.T) {
	f := newWindowFixture(t)
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	before := map[string]kubelet.Snapshot{"n1": f.mk(t0, 1, 2)}
	after := map[string]kubelet.Snapshot{"n1": f.mk(t1, 6, 2)}
	rep := f.tg.resourceWindow(f.roleOf, before, after, t0.Add(8*time.Second), t1, kubelet.ContainerKey{})
	assert.Empty(t, rep.Invalid)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Throttled, Detail: "mb-meshed/backend-0/linkerd-proxy (sidecar) was CPU-throttled in 2% of its CFS periods (limit 0.5 cores): it measured its limit, not its work"},
	}, rep.Warnings)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.CPUDiluted, Detail: "CPU diluted: the kubelet's counters span 10s on node n1 (20% under load), under the 90% needed: per-role CPU is diluted by idle time; " +
			"the kubelets did not collect them under load within the 30s the run waits for them; NodeCPU=agent reads them at the instant"},
	}, rep.CPUInvalid)

	stale := f.mk(t1, 6, 0)
	stale.NodeCPUSeconds.Time = t0
	rep = f.tg.resourceWindow(f.roleOf, before, map[string]kubelet.Snapshot{"n1": stale}, t0, t1, kubelet.ContainerKey{})
	assert.Empty(t, rep.CPUInvalid, "a window under load all along")
	assert.Equal(t, validity.Reasons{
		{Kind: validity.CPUIncomplete, Detail: "CPU not measured: node: samples are not in time order or not refreshed " +
			"(first at 1970-01-01T00:16:40Z, second at 1970-01-01T00:16:40Z); the kubelet had not updated its stats, lengthen the window"},
	}, rep.Warnings)
	assert.True(t, rep.Warnings.Has(validity.CPUIncomplete))

	back := f.mk(t1, 6, 0)
	back.NodeCPUSeconds.Value = 5
	rep = f.tg.resourceWindow(f.roleOf, before, map[string]kubelet.Snapshot{"n1": back}, t0, t1, kubelet.ContainerKey{})
	assert.Equal(t, validity.Reasons{
		{Kind: validity.CPUIncomplete, Detail: "CPU: node n1: node_cpu_usage_seconds_total went from 10 to 5 (the kubelet restarted or the node rebooted); mark the run invalid"},
	}, rep.Warnings)
}

// TestResourceWindowDilutedOnce: the kubelets of three nodes refreshed
// on their own schedules; two of them spanned far more than the load. The
// run gets one reason for its CPU, naming both, and no warning per node.
// Without waiting for the kubelets (CounterWait negative), it says how
// long a window must be.
func TestResourceWindowDilutedOnce(t *testing.T) {
	f := newWindowFixture(t)
	f.tg.o.CounterWait = -1
	f.tg.nodes = []NodeInfo{{Name: "n1", AllocatableCores: 2}, {Name: "n2", AllocatableCores: 2}, {Name: "n3", AllocatableCores: 2}}
	t0 := time.Unix(1000, 0)
	on := func(n string, s kubelet.Snapshot) kubelet.Snapshot {
		s.Node = n
		return s
	}
	before := map[string]kubelet.Snapshot{
		"n1": f.mk(t0, 1, 0), "n2": on("n2", f.mk(t0.Add(-6*time.Second), 1, 0)), "n3": on("n3", f.mk(t0.Add(2*time.Second), 1, 0)),
	}
	after := map[string]kubelet.Snapshot{
		"n1": f.mk(t0.Add(10*time.Second), 6, 0), "n2": on("n2", f.mk(t0.Add(9*time.Second), 6, 0)), "n3": on("n3", f.mk(t0.Add(22*time.Second), 6, 0)),
	}
	rep := f.tg.resourceWindow(f.roleOf, before, after, t0, t0.Add(10*time.Second), kubelet.ContainerKey{})
	assert.Empty(t, rep.Invalid)
	assert.Empty(t, rep.Warnings)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.CPUDiluted, Detail: "CPU diluted: the kubelet's counters span 15s on node n2 (60% under load), 20s on node n3 (40% under load), under the 90% needed: " +
			"per-role CPU is diluted by idle time; use a window and a warm-up longer than the kubelet's refresh interval (10-15 s), or NodeCPU=agent"},
	}, rep.CPUInvalid, "n1's counters spanned the load exactly")
}

// With node access (kind), the counters are read on the node at the
// moment of the read, and the environment says so; without, from the
// kubelets.
func TestCountersOnDemandWithNodeAccess(t *testing.T) {
	capture, err := os.ReadFile(filepath.Join("..", "..", "measure", "nodestats", "testdata", "kind_cgroupv1_read1.txt"))
	require.NoError(t, err)
	var logged []string
	var ran []string
	tg, err := newTarget(fake.NewClientset(), Options{
		NodeExec: func(_ context.Context, node string, cmd ...string) ([]byte, error) {
			ran = append([]string{node}, cmd...)
			if node == "gone" {
				return []byte("Error: No such container: gone"), errors.New("exit status 1")
			}
			// The runtime lists spin without its CPU counter.
			return []byte(strings.Replace(string(capture), `"cpu": {
        "timestamp": "1796090380945273112"`, `"cpuGone": {
        "timestamp": "1796090380945273112"`, 1)), nil
		},
		Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) },
	})
	require.NoError(t, err)
	tg.useCounters(fake.NewClientset())
	assert.True(t, tg.onDemand)
	assert.Equal(t, nodestats.Source, tg.counterSource)

	s, err := tg.fetch(context.Background(), "mbprobe-control-plane")
	require.NoError(t, err, "a container left out is logged, not an error")
	assert.Equal(t, []string{"mbprobe-control-plane", "sh", "-c", nodestats.Script}, ran)
	assert.Len(t, s.Containers, 8)
	assert.Equal(t, []string{"CPU counters: node mbprobe-control-plane: container mbprobe/burner/spin (id 56d942770047): " +
		"the runtime listed it without a CPU counter (stopped during the read?): left out of this read"}, logged)

	_, err = tg.snapshotNodes(context.Background(), []string{"gone"})
	assert.EqualError(t, err, "CPU counters: node gone: read the container counters (crictl stats, cgroup files): exit status 1: Error: No such container: gone")

	assert.Equal(t, "CPU diluted: the counters read on the nodes span 10.2s on node n1 (85% under load), under the 90% needed: per-role CPU is diluted by idle time around the window",
		tg.diluted([]nodeSpan{{node: "n1", span: 10234 * time.Millisecond, coverage: 0.85}}))

	remote, err := newTarget(fake.NewClientset(), Options{})
	require.NoError(t, err)
	remote.useCounters(fake.NewClientset())
	assert.False(t, remote.onDemand)
	assert.Equal(t, kubeletCounters, remote.counterSource)
}
