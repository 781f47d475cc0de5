package nodestats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
)

const node = "mbprobe-control-plane"

var (
	app  = kubelet.ContainerKey{Namespace: "mbprobe", Pod: "burner", Container: "app"}
	spin = kubelet.ContainerKey{Namespace: "mbprobe", Pod: "burner", Container: "spin"}
	etcd = kubelet.ContainerKey{Namespace: "kube-system", Pod: "etcd-mbprobe-control-plane", Container: "etcd"}
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func parse(t *testing.T, name string) kubelet.Snapshot {
	t.Helper()
	s, err := Parse(read(t, name), node)
	require.NoError(t, err)
	return s
}

func at(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func TestParseCgroupV1(t *testing.T) {
	s := parse(t, "kind_cgroupv1_read1.txt")

	clock := at(1796090380888252260)
	assert.Equal(t, node, s.Node)
	assert.Equal(t, clock, s.ReadAt)
	assert.Equal(t, kubelet.Sample{Value: 30.329123343, Time: clock}, s.NodeCPUSeconds)
	assert.Equal(t, kubelet.Sample{Value: 1489514496 - 900009984, Time: clock}, s.NodeWorkingSetBytes)
	assert.Len(t, s.Containers, 9)

	assert.Equal(t, kubelet.Container{
		ID:              "3ba2549fbef0c291508697ada01f5aa47661109c3b2ec7c96fb5f871a9725ac0",
		CPUSeconds:      kubelet.Sample{Value: 0.052683072, Time: at(1796090380937404971)},
		WorkingSetBytes: kubelet.Sample{Value: 2478080, Time: at(1796090380937404971)},
		RSSBytes:        &kubelet.Sample{Value: 1929216, Time: at(1796090380937404971)},
		Throttling: &kubelet.Throttling{
			Periods:          kubelet.Sample{Value: 6, Time: clock},
			ThrottledPeriods: kubelet.Sample{Value: 4, Time: clock},
			ThrottledSeconds: &kubelet.Sample{Value: 0.219501777, Time: clock},
			LimitCores:       0.1,
		},
	}, s.Containers[app])

	assert.Equal(t, kubelet.Container{
		ID:              "11580902185ddbd3ef1893b496d95e193ca501b4c53e11c516045e2f36470fee",
		CPUSeconds:      kubelet.Sample{Value: 3.426643662, Time: at(1796090380946578872)},
		WorkingSetBytes: kubelet.Sample{Value: 30154752, Time: at(1796090380946578872)},
		RSSBytes:        &kubelet.Sample{Value: 29048832, Time: at(1796090380946578872)},
	}, s.Containers[etcd], "no CPU limit: no CFS counters, as cAdvisor reports none")
}

// The two reads make a window as the kubelet's would: spin burned its
// 200m limit, throttled in every period; app was idle.
func TestDeltaOfTwoReads(t *testing.T) {
	u, err := kubelet.Delta(parse(t, "kind_cgroupv1_read1.txt"), parse(t, "kind_cgroupv1_read2.txt"))
	require.NoError(t, err)

	assert.Equal(t, at(1796090383028123735).Sub(at(1796090380888252260)), u.NodeWindow)
	assert.InDelta(t, (31.07009913-30.329123343)/2.139871475, u.NodeCores, 1e-9)

	s, ok := u.Container(spin)
	require.True(t, ok)
	assert.Equal(t, at(1796090383155537625).Sub(at(1796090380945273112)), s.Window)
	assert.InDelta(t, 0.773243569-0.331710865, s.CPUSeconds, 1e-12)
	assert.InDelta(t, 199.7646, s.Millicores, 1e-4)
	assert.True(t, s.HasCFS)
	assert.Equal(t, 22.0, s.Periods)
	assert.Equal(t, 22.0, s.ThrottledPeriods)
	assert.Equal(t, 1.0, s.ThrottledRatio)
	assert.InDelta(t, 2.478196527-1.020938435, s.ThrottledSeconds, 1e-12)
	assert.Equal(t, 0.2, s.LimitCores)

	a, ok := u.Container(app)
	require.True(t, ok)
	assert.Zero(t, a.CPUSeconds)
	assert.Zero(t, a.Periods)

	// containerd's rssBytes (cgroup v1 total_rss) in both reads: the
	// memory reported is the RSS, not the working set.
	e, ok := u.Container(etcd)
	require.True(t, ok)
	assert.True(t, e.HasRSS)
	assert.Equal(t, 29048832.0, e.RSSBytesBefore)
	assert.Equal(t, 29052928.0, e.RSSBytes)
	assert.Equal(t, 30158848.0, e.WorkingSetBytes)
	idle, load, kind := e.Memory()
	assert.Equal(t, []any{29048832.0, 29052928.0, measure.MemoryRSS}, []any{idle, load, kind})
}

func TestFetchRunsTheScriptOnTheNode(t *testing.T) {
	var got []string
	exec := func(_ context.Context, n string, cmd ...string) ([]byte, error) {
		got = append([]string{n}, cmd...)
		return read(t, "kind_cgroupv1_read1.txt"), nil
	}
	s, err := Fetch(context.Background(), exec, node)
	require.NoError(t, err)
	assert.Equal(t, []string{node, "sh", "-c", Script}, got)
	assert.Len(t, s.Containers, 9)
}

func TestFetchNodeCannotBeExecd(t *testing.T) {
	exec := func(context.Context, string, ...string) ([]byte, error) {
		return []byte("Error response from daemon: container abc is not running\n"), errors.New("exit status 1")
	}
	s, err := Fetch(context.Background(), exec, "kind-worker")
	assert.EqualError(t, err, "node kind-worker: read the container counters (crictl stats, cgroup files): exit status 1: "+
		"Error response from daemon: container abc is not running")
	assert.Empty(t, s.Containers)
}

// replace returns the capture with old replaced by new, exactly once.
func replace(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	s := string(b)
	i := indexOnce(t, s, old)
	return []byte(s[:i] + new + s[i+len(old):])
}

func indexOnce(t *testing.T, s, sub string) int {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, sub), "%q must occur once", sub)
	return strings.Index(s, sub)
}

func TestParseContainerWithoutCPU(t *testing.T) {
	// spin as containerd lists a container whose task is gone: no cpu.
	b := replace(t, read(t, "kind_cgroupv1_read1.txt"), `"cpu": {
        "timestamp": "1796090380945273112",`, `"cpuGone": {
        "timestamp": "1796090380945273112",`)
	s, err := Parse(b, node)
	assert.EqualError(t, err, "node mbprobe-control-plane: container mbprobe/burner/spin (id 56d942770047): "+
		"the runtime listed it without a CPU counter (stopped during the read?): left out of this read")
	var me *MissingError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, &MissingError{Node: node, Container: spin, ID: "56d9427700472fc16a0e31b19004aaa8855cfcb98ce0d9cb79d20b854fd59deb", What: "cpu"}, me)
	assert.Len(t, s.Containers, 8)
	assert.NotContains(t, s.Containers, spin)

	missing, rest := Missing(err)
	assert.Equal(t, []*MissingError{me}, missing)
	assert.NoError(t, rest)
}

// After a restart the runtime lists the exited instance too, without
// counters (seen after the e2e's kill): it is not a missing container.
func TestParseExitedInstanceOfRestartedContainer(t *testing.T) {
	b := replace(t, read(t, "kind_cgroupv1_read1.txt"), `"stats": [`, `"stats": [
    {"attributes": {"id": "00000000000000000000000000000000000000000000000000000000000000aa",
      "labels": {"io.kubernetes.container.name": "spin", "io.kubernetes.pod.name": "burner", "io.kubernetes.pod.namespace": "mbprobe"}}},`)
	s, err := Parse(b, node)
	require.NoError(t, err)
	assert.Len(t, s.Containers, 9)
	assert.Equal(t, "56d9427700472fc16a0e31b19004aaa8855cfcb98ce0d9cb79d20b854fd59deb", s.Containers[spin].ID)
}

func TestParseContainerWithoutCgroup(t *testing.T) {
	// app's cgroup gone from the cgroup read (the container started or
	// stopped between it and crictl's).
	var kept []string
	for _, line := range strings.SplitAfter(string(read(t, "kind_cgroupv1_read1.txt")), "\n") {
		if !strings.Contains(line, "cri-containerd-3ba2549fbef0") {
			kept = append(kept, line)
		}
	}
	s, err := Parse([]byte(strings.Join(kept, "")), node)
	assert.EqualError(t, err, "node mbprobe-control-plane: container mbprobe/burner/app (id 3ba2549fbef0): "+
		"no cgroup of it under /sys/fs/cgroup (started or stopped during the read?): its CPU throttling is unknown")
	require.Contains(t, s.Containers, app)
	assert.Nil(t, s.Containers[app].Throttling)
	assert.Equal(t, 0.052683072, s.Containers[app].CPUSeconds.Value)
}

func TestParseBrokenReads(t *testing.T) {
	full := string(read(t, "kind_cgroupv1_read1.txt"))
	for name, tc := range map[string]struct{ out, err string }{
		"no crictl": {out: "clock 1\nclock 2\n", err: `node n1: no "crictl stats" line in the read: clock 1` + "\nclock 2"},
		"one clock": {out: "clock 1\n/sys/fs/cgroup/cpuacct/cpuacct.usage:5\ncrictl stats\n{}", err: "node n1: want 2 clock lines around the cgroup read, got 1"},
		"no node cpu": {out: "clock 1\n/sys/fs/cgroup/memory/memory.usage_in_bytes:5\nclock 2\ncrictl stats\n{}",
			err: "node n1: the read has no node CPU counter (cpuacct.usage or cpu.stat usage_usec of /sys/fs/cgroup)"},
		"stray line": {out: "clock 1\ngrep: /sys/fs/cgroup/memory/memory.stat: No such file or directory\nclock 2\ncrictl stats\n{}",
			err: `node n1: unexpected line in the cgroup read: "grep: /sys/fs/cgroup/memory/memory.stat: No such file or directory"`},
		"crictl failed": {out: full[:indexOnce(t, full, "crictl stats\n")+len("crictl stats\n")] + "FATA[0000] validate service connection: rpc error\n",
			err: "node n1: parse crictl stats -o json: invalid character 'F' looking for beginning of value: FATA[0000] validate service connection: rpc error"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Parse([]byte(tc.out), "n1")
			assert.EqualError(t, err, tc.err)
			assert.Empty(t, s.Containers)
		})
	}
}

// cgroupV2 is a read written by hand in the kernel's cgroup v2 formats
// (no v2 host was at hand to capture one): node cpu.stat and memory, one
// container with a 250m limit, one without.
const cgroupV2 = `clock 1700000000000000000
/sys/fs/cgroup/cpu.stat:usage_usec 5000000
/sys/fs/cgroup/cpu.stat:user_usec 3000000
/sys/fs/cgroup/memory.current:1000000
/sys/fs/cgroup/memory.stat:inactive_file 400000
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cpu.max:max 100000
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope/cpu.stat:usage_usec 1500
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope/cpu.stat:nr_periods 40
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope/cpu.stat:nr_throttled 3
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope/cpu.stat:throttled_usec 2500
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope/cpu.max:25000 100000
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope/cpu.stat:nr_periods 0
/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-podu1.slice/cri-containerd-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope/cpu.max:max 100000
clock 1700000000020000000
crictl stats
{"stats": [
 {"attributes": {"id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "labels": {"io.kubernetes.container.name": "proxy", "io.kubernetes.pod.name": "p", "io.kubernetes.pod.namespace": "ns"}},
  "cpu": {"timestamp": "1700000000030000000", "usageCoreNanoSeconds": {"value": "1500000"}},
  "memory": {"timestamp": "1700000000030000000", "workingSetBytes": {"value": "2048"}, "rssBytes": {"value": "1024"}}},
 {"attributes": {"id": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "labels": {"io.kubernetes.container.name": "app", "io.kubernetes.pod.name": "p", "io.kubernetes.pod.namespace": "ns"}},
  "cpu": {"timestamp": "1700000000031000000", "usageCoreNanoSeconds": {"value": "7"}},
  "memory": {"timestamp": "1700000000031000000", "workingSetBytes": {"value": "4096"}}}
]}
`

func TestParseCgroupV2(t *testing.T) {
	s, err := Parse([]byte(cgroupV2), "v2")
	require.NoError(t, err)
	clock := at(1700000000000000000)
	assert.Equal(t, kubelet.Sample{Value: 5, Time: clock}, s.NodeCPUSeconds)
	assert.Equal(t, kubelet.Sample{Value: 600000, Time: clock}, s.NodeWorkingSetBytes)
	proxy := kubelet.ContainerKey{Namespace: "ns", Pod: "p", Container: "proxy"}
	assert.Equal(t, kubelet.Container{
		ID:              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		CPUSeconds:      kubelet.Sample{Value: 0.0015, Time: at(1700000000030000000)},
		WorkingSetBytes: kubelet.Sample{Value: 2048, Time: at(1700000000030000000)},
		RSSBytes:        &kubelet.Sample{Value: 1024, Time: at(1700000000030000000)},
		Throttling: &kubelet.Throttling{
			Periods:          kubelet.Sample{Value: 40, Time: clock},
			ThrottledPeriods: kubelet.Sample{Value: 3, Time: clock},
			ThrottledSeconds: &kubelet.Sample{Value: 0.0025, Time: clock},
			LimitCores:       0.25,
		},
	}, s.Containers[proxy])
	appV2 := s.Containers[kubelet.ContainerKey{Namespace: "ns", Pod: "p", Container: "app"}]
	assert.Nil(t, appV2.Throttling, "cpu.max max: no limit")
	assert.Nil(t, appV2.RSSBytes, "no rssBytes in the runtime's stats: none read")
}
