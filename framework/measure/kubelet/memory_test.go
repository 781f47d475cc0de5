package kubelet

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The containers of the kind v1.36 capture (testdata/README.md).
var (
	corednsK = ContainerKey{"kube-system", "coredns-589f44dc88-kwbmz", "coredns"}
	corednsW = ContainerKey{"kube-system", "coredns-589f44dc88-wp4p4", "coredns"}
	kubeProx = ContainerKey{"kube-system", "kube-proxy-7gwvw", "kube-proxy"}
)

func TestParseCadvisorRSSKind(t *testing.T) {
	cad, err := ParseCadvisor(open(t, "cadvisor_kind_v1.36.txt"))
	require.NoError(t, err)

	// Fifteen container_memory_rss series: the node, the QoS and pod
	// cgroups and the three pause containers (all container="", the
	// pause ones too under containerd), kubelet and containerd, and the
	// three containers. No container has a CPU limit, so none has CFS
	// counters.
	assert.Equal(t, map[ContainerKey]Cadvisor{
		corednsK: {RSSBytes: &Sample{Value: 8843264, Time: ms(1796514912532)}},
		corednsW: {RSSBytes: &Sample{Value: 8519680, Time: ms(1796514919195)}},
		kubeProx: {RSSBytes: &Sample{Value: 12156928, Time: ms(1796514912851)}},
	}, cad)
}

// A payload in cAdvisor's format with what the recorded ones lack: a
// dockershim pause container ("POD") and a container with both a CPU
// limit and an RSS.
const cadvisorPause = `# TYPE container_memory_rss gauge
container_memory_rss{container="",namespace="ns",pod="p"} 3e+06 1700000000000
container_memory_rss{container="POD",namespace="ns",pod="p"} 45056 1700000000000
container_memory_rss{container="proxy",namespace="ns",pod="p"} 2.5e+06 1700000000100
# TYPE container_cpu_cfs_periods_total counter
container_cpu_cfs_periods_total{container="POD",namespace="ns",pod="p"} 9 1700000000000
container_cpu_cfs_periods_total{container="proxy",namespace="ns",pod="p"} 40 1700000000100
# TYPE container_cpu_cfs_throttled_periods_total counter
container_cpu_cfs_throttled_periods_total{container="proxy",namespace="ns",pod="p"} 3 1700000000100
# TYPE container_spec_cpu_quota gauge
container_spec_cpu_quota{container="proxy",namespace="ns",pod="p"} 25000 1700000000100
# TYPE container_spec_cpu_period gauge
container_spec_cpu_period{container="proxy",namespace="ns",pod="p"} 100000 1700000000100
`

func TestParseCadvisorSkipsPodsAndPause(t *testing.T) {
	cad, err := ParseCadvisor(strings.NewReader(cadvisorPause))
	require.NoError(t, err)
	assert.Equal(t, map[ContainerKey]Cadvisor{
		{"ns", "p", "proxy"}: {
			Throttling: &Throttling{Periods: Sample{Value: 40, Time: ms(1700000000100)},
				ThrottledPeriods: Sample{Value: 3, Time: ms(1700000000100)}, LimitCores: 0.25},
			RSSBytes: &Sample{Value: 2500000, Time: ms(1700000000100)},
		},
	}, cad)
}

func TestWithCadvisor(t *testing.T) {
	cad, err := ParseCadvisor(open(t, "cadvisor_kind_v1.36.txt"))
	require.NoError(t, err)
	at := ms(1796514912532)
	noRSS := ContainerKey{"kube-system", "etcd-0", "etcd"}
	s := Snapshot{Node: "mb-dev-worker", Containers: map[ContainerKey]Container{
		corednsK: {CPUSeconds: Sample{Value: 3, Time: at}, WorkingSetBytes: Sample{Value: 9428992, Time: at}},
		noRSS:    {CPUSeconds: Sample{Value: 5, Time: at}, WorkingSetBytes: Sample{Value: 1 << 20, Time: at}},
	}}

	got := s.WithCadvisor(cad)
	assert.Len(t, got.Containers, 2, "the containers cAdvisor alone reports are not added")
	c := got.Containers[corednsK]
	assert.Equal(t, &Sample{Value: 8843264, Time: at}, c.RSSBytes)
	mem, rss := c.Memory()
	assert.Equal(t, Sample{Value: 8843264, Time: at}, mem)
	assert.True(t, rss)

	mem, rss = got.Containers[noRSS].Memory()
	assert.Equal(t, Sample{Value: 1 << 20, Time: at}, mem, "no RSS read: the working set")
	assert.False(t, rss)
	assert.Nil(t, s.Containers[corednsK].RSSBytes, "s itself is not changed")
}

// memoryReads makes a window's two reads of one node: a sidecar whose
// access log fills the page cache (working set 6.8 MiB to 50 MiB, RSS
// flat, as on kind), an app read without RSS the first time, and a
// loadgen read without RSS at all.
func memoryReads() (before, after Snapshot, sidecar, app, loadgen ContainerKey) {
	sidecar = ContainerKey{"mb-meshed", "backend-0", "mb-sidecar"}
	app = ContainerKey{"mb-meshed", "backend-0", "backend"}
	loadgen = ContainerKey{"mb-meshed", "loadgen-0", "loadgen"}
	t0, t1 := ms(1796514900000), ms(1796514910000)
	mk := func(at time.Time, cpu, sidecarWS, sidecarRSS float64, appRSS *Sample) Snapshot {
		return Snapshot{Node: "n1", NodeCPUSeconds: Sample{Value: cpu, Time: at}, Containers: map[ContainerKey]Container{
			sidecar: {CPUSeconds: Sample{Value: cpu, Time: at}, WorkingSetBytes: Sample{Value: sidecarWS, Time: at},
				RSSBytes: &Sample{Value: sidecarRSS, Time: at}},
			app:     {CPUSeconds: Sample{Value: cpu, Time: at}, WorkingSetBytes: Sample{Value: 3 << 20, Time: at}, RSSBytes: appRSS},
			loadgen: {CPUSeconds: Sample{Value: cpu, Time: at}, WorkingSetBytes: Sample{Value: 20 << 20, Time: at}},
		}}
	}
	before = mk(t0, 1, 7130317, 4718592, nil)
	after = mk(t1, 2, 52428800, 4722688, &Sample{Value: 2 << 20, Time: t1})
	return before, after, sidecar, app, loadgen
}

func TestDeltaMemory(t *testing.T) {
	before, after, sidecar, app, loadgen := memoryReads()
	u, err := Delta(before, after)
	require.NoError(t, err)

	s, ok := u.Container(sidecar)
	require.True(t, ok)
	assert.True(t, s.HasRSS)
	assert.Equal(t, 4718592.0, s.RSSBytesBefore)
	assert.Equal(t, 4722688.0, s.RSSBytes)
	assert.Equal(t, 7130317.0, s.WorkingSetBytesBefore)
	assert.Equal(t, 52428800.0, s.WorkingSetBytes)
	idle, load, kind := s.Memory()
	assert.Equal(t, []any{4718592.0, 4722688.0, measure.MemoryRSS}, []any{idle, load, kind})

	a, _ := u.Container(app)
	assert.False(t, a.HasRSS, "RSS in the second read only")
	assert.Zero(t, a.RSSBytes)
	idle, load, kind = a.Memory()
	assert.Equal(t, []any{3145728.0, 3145728.0, measure.MemoryWorkingSet}, []any{idle, load, kind})

	l, _ := u.Container(loadgen)
	assert.False(t, l.HasRSS)
}

// The page cache of the sidecar's access log grew its working set by
// 43 MiB over the window; its memory as reported did not grow.
func TestWindowReportsRSS(t *testing.T) {
	before, after, _, _, _ := memoryReads()
	u, err := Delta(before, after)
	require.NoError(t, err)
	roleOf := RolesFromPods(nil, RoleOther,
		RoleRule{Role: measure.RoleSidecar, Container: "mb-sidecar"},
		RoleRule{Role: measure.RoleApp, Container: "backend"},
		RoleRule{Role: measure.RoleLoadgen, Container: "loadgen"})

	w := Window(roleOf, nil, u)
	mem := map[string][3]any{}
	for _, x := range w.Usage {
		mem[x.Name] = [3]any{x.IdleRSS, x.LoadRSS, x.Memory}
	}
	assert.Equal(t, map[string][3]any{
		"mb-meshed/backend-0/mb-sidecar": {int64(4718592), int64(4722688), measure.MemoryRSS},
		"mb-meshed/backend-0/backend":    {int64(3 << 20), int64(3 << 20), measure.MemoryWorkingSet},
		"mb-meshed/loadgen-0/loadgen":    {int64(20 << 20), int64(20 << 20), measure.MemoryWorkingSet},
	}, mem)
	sc, ok := w.Role(measure.RoleSidecar)
	require.True(t, ok)
	assert.Equal(t, int64(4722688), sc.MaxLoadRSS, "the gate's sidecar RSS: 4.5 MiB, not the 50 MiB working set")
}
