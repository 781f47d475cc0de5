package cgroups

import (
	"io/fs"
	"path"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	// uidU is uid as the systemd driver spells it in a slice name.
	uidU = "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
	cid  = "3ba2549fbef0c291508697ada01f5aa47661109c3b2ec7c96fb5f871a9725ac0"
)

// v2Files and v1Files are the files of one container cgroup (and of a
// root) in each version's formats.
var (
	v2Files = map[string]string{
		"cpu.stat":       "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 40\nnr_throttled 3\nthrottled_usec 2500\nnr_bursts 0\nburst_usec 0\n",
		"cpu.max":        "25000 100000\n",
		"memory.current": "4096000\n",
		"memory.stat":    "anon 1000000\nfile 3000000\nactive_file 1000000\ninactive_file 96000\n",
	}
	v1CPU = map[string]string{"cpu.stat": "nr_periods 6\nnr_throttled 4\nthrottled_time 219501777\n", "cpu.cfs_quota_us": "10000\n", "cpu.cfs_period_us": "100000\n", "cpuacct.usage": "52683072\n"}
	v1Mem = map[string]string{"memory.usage_in_bytes": "2478080\n",
		"memory.stat": "cache 548864\nrss 1929216\ntotal_cache 548864\ntotal_rss 1929216\ntotal_inactive_file 8192\ntotal_active_file 540672\n"}
)

// tree builds a fake cgroup tree holding cgroup dir (relative to the
// hierarchies' roots) in version v, beside a few cgroups that are not
// the kubelet's.
func tree(v Version, dirs ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	put := func(prefix, dir string, files map[string]string) {
		for name, body := range files {
			fsys[path.Join(prefix, dir, name)] = &fstest.MapFile{Data: []byte(body)}
		}
	}
	others := []string{"system.slice/containerd.service", "user.slice", "init.scope"}
	if v == V2 {
		fsys["cgroup.controllers"] = &fstest.MapFile{Data: []byte("cpuset cpu io memory pids\n")}
		put("", "", map[string]string{"cpu.stat": "usage_usec 5000000\nuser_usec 3000000\nsystem_usec 2000000\n"})
		for _, d := range append(others, dirs...) {
			put("", d, v2Files)
		}
		return fsys
	}
	put("cpu,cpuacct", "", map[string]string{"cgroup.procs": "1\n", "cpuacct.usage": "30329123343\n", "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"})
	put("memory", "", map[string]string{"cgroup.procs": "1\n", "memory.usage_in_bytes": "1489514496\n", "memory.stat": "total_inactive_file 900009984\n"})
	fsys["cpu"] = &fstest.MapFile{Data: []byte("cpu,cpuacct"), Mode: 0o777 | 1<<27} // a symlink, as on a host
	fsys["blkio/user.slice/tasks"] = &fstest.MapFile{}
	for _, d := range append(others, dirs...) {
		put("cpu,cpuacct", d, v1CPU)
		put("memory", d, v1Mem)
	}
	return fsys
}

// apart is a v1 tree as a kind node sees it on a host whose cpu and
// cpuacct controllers are mounted apart: an empty cpu,cpuacct directory,
// and the kubelet's cgroups under --cgroup-root=/kubelet.
func apart() fstest.MapFS {
	fsys := fstest.MapFS{"cpu,cpuacct": {Mode: fs.ModeDir | 0o755}}
	for _, h := range []string{"cpu", "cpuacct", "memory"} {
		fsys[h+"/cgroup.procs"] = &fstest.MapFile{Data: []byte("1\n")}
		fsys[h+"/kubelet/kubepods/besteffort/cgroup.procs"] = &fstest.MapFile{}
		fsys[h+"/system.slice/cgroup.procs"] = &fstest.MapFile{}
	}
	return fsys
}

// The kubelet's cgroup of a container, by driver, runtime and QoS class,
// for both cgroup versions: Detect reads the layout from the tree and Find
// gives exactly the path.
func TestFindContainerCgroup(t *testing.T) {
	cases := []struct {
		name, id string
		qos      QOSClass
		dir      string
	}{
		{"cgroupfs/containerd/guaranteed", "containerd://" + cid, Guaranteed, "kubepods/pod" + uid + "/" + cid},
		{"cgroupfs/containerd/burstable", "containerd://" + cid, Burstable, "kubepods/burstable/pod" + uid + "/" + cid},
		{"cgroupfs/containerd/besteffort", "containerd://" + cid, BestEffort, "kubepods/besteffort/pod" + uid + "/" + cid},
		{"cgroupfs/cri-o/guaranteed", "cri-o://" + cid, Guaranteed, "kubepods/pod" + uid + "/crio-" + cid},
		{"cgroupfs/cri-o/burstable", "cri-o://" + cid, Burstable, "kubepods/burstable/pod" + uid + "/crio-" + cid},
		{"cgroupfs/cri-o/besteffort", "cri-o://" + cid, BestEffort, "kubepods/besteffort/pod" + uid + "/crio-" + cid},
		{"systemd/containerd/guaranteed", "containerd://" + cid, Guaranteed,
			"kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"systemd/containerd/burstable", "containerd://" + cid, Burstable,
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"systemd/containerd/besteffort", "containerd://" + cid, BestEffort,
			"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"systemd/cri-o/guaranteed", "cri-o://" + cid, Guaranteed,
			"kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + cid + ".scope"},
		{"systemd/cri-o/burstable", "cri-o://" + cid, Burstable,
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-" + cid + ".scope"},
		{"systemd/cri-o/besteffort", "cri-o://" + cid, BestEffort,
			"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-" + cid + ".scope"},
		{"systemd/docker/burstable", "docker://" + cid, Burstable,
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/docker-" + cid + ".scope"},
		// kind's kubelet runs with --cgroup-root=/kubelet.
		{"systemd/kind-root/burstable", "containerd://" + cid, Burstable,
			"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"cgroupfs/kubelet-root/besteffort", "containerd://" + cid, BestEffort, "kubelet/kubepods/besteffort/pod" + uid + "/" + cid},
	}
	for _, v := range []Version{V1, V2} {
		prefix := map[Version]string{V1: "cpu,cpuacct/", V2: ""}[v]
		for _, tc := range cases {
			t.Run(tc.name+"/v"+string(rune('0'+v)), func(t *testing.T) {
				// A sibling the runtime keeps beside the container (CRI-O's
				// conmon) and a second pod must not confuse the mapping.
				pod := path.Dir(tc.dir)
				fsys := tree(v, tc.dir, path.Join(pod, "crio-conmon-"+cid+".scope"), path.Join(path.Dir(pod), "podother"))
				l, err := Detect(fsys)
				require.NoError(t, err)
				assert.Equal(t, v, l.Version)
				got, err := l.Find(fsys, Container{PodUID: uid, ID: tc.id, QOS: tc.qos})
				require.NoError(t, err)
				assert.Equal(t, prefix+tc.dir, got)
			})
		}
	}
}

func TestDetect(t *testing.T) {
	for name, tc := range map[string]struct {
		fsys fstest.MapFS
		want Layout
	}{
		"v2 systemd":  {tree(V2, "kubepods.slice/x.slice"), Layout{Version: V2, Driver: Systemd, Kubepods: "kubepods.slice"}},
		"v2 cgroupfs": {tree(V2, "kubepods/burstable"), Layout{Version: V2, Driver: Cgroupfs, Kubepods: "kubepods"}},
		"v2 kind": {tree(V2, "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice"),
			Layout{Version: V2, Driver: Systemd, Kubepods: "kubelet.slice/kubelet-kubepods.slice"}},
		"v1 systemd": {tree(V1, "kubepods.slice/x.slice"),
			Layout{Version: V1, Driver: Systemd, Kubepods: "kubepods.slice", CPU: "cpu,cpuacct", CPUAcct: "cpu,cpuacct", Memory: "memory"}},
		"v1 cgroupfs": {tree(V1, "kubepods/besteffort"),
			Layout{Version: V1, Driver: Cgroupfs, Kubepods: "kubepods", CPU: "cpu,cpuacct", CPUAcct: "cpu,cpuacct", Memory: "memory"}},
		// A kind node on a v1 host whose cpu and cpuacct are mounted
		// apart: kind leaves an empty cpu,cpuacct directory beside them
		// (found on this repository's CI machine: the agent read the
		// empty one and stopped the run).
		"v1 kind, cpu and cpuacct apart": {apart(), Layout{Version: V1, Driver: Cgroupfs, Kubepods: "kubelet/kubepods", CPU: "cpu", CPUAcct: "cpuacct", Memory: "memory"}},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := Detect(tc.fsys)
			require.NoError(t, err)
			assert.Equal(t, tc.want, l)
		})
	}
}

func TestDetectUnrecognisedLayout(t *testing.T) {
	_, err := Detect(tree(V2, "containers/abc"))
	assert.EqualError(t, err, "unrecognised cgroup layout: no kubepods cgroup (kubepods, or a systemd …kubepods.slice) in the top two levels of ., whose top holds [containers/ init.scope/ system.slice/ user.slice/]")

	_, err = Detect(fstest.MapFS{"unified/cgroup.procs": {}, "systemd/tasks": {}})
	assert.EqualError(t, err, "unrecognised cgroup tree: no cgroup.controllers (v2) and not the cpu, cpuacct and memory hierarchies of v1; its root holds [systemd/ unified/]")

	_, err = Detect(tree(V2, "kubepods/burstable", "kubepods.slice/x"))
	assert.EqualError(t, err, "unrecognised cgroup layout: several kubepods cgroups in .: kubepods, kubepods.slice")
}

// A container not where the layout puts it: the error names the deepest
// directory on the way and what it holds.
func TestFindNamesWhatItFound(t *testing.T) {
	pod := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice"
	fsys := tree(V2, pod+"/runc-"+cid+".scope")
	l, err := Detect(fsys)
	require.NoError(t, err)
	_, err = l.Find(fsys, Container{PodUID: uid, ID: "containerd://" + cid, QOS: Burstable})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, pod, nf.Found)
	assert.EqualError(t, err, "container containerd://"+cid+" of pod "+uid+" (Burstable): no cgroup at "+pod+"/cri-containerd-"+cid+".scope; "+
		"the deepest directory on that path is "+pod+", which holds [runc-"+cid+".scope/]: "+
		"the container is gone, or its cgroup layout is not one this reader recognises")
}

func TestDirRejectsBadInput(t *testing.T) {
	l := Layout{Version: V2, Driver: Systemd, Kubepods: "kubepods.slice"}
	for name, tc := range map[string]struct {
		c   Container
		err string
	}{
		"runtime": {Container{PodUID: uid, ID: "rkt://" + cid, QOS: Burstable},
			`container ID "rkt://` + cid + `": runtime "rkt" has no known cgroup naming (known: containerd, cri-o, docker)`},
		"no scheme": {Container{PodUID: uid, ID: cid, QOS: Burstable}, `container ID "` + cid + `": want <runtime>://<id>`},
		"traversal": {Container{PodUID: uid, ID: "containerd://../x", QOS: Burstable}, `container ID "containerd://../x": want <runtime>://<id>`},
		"qos": {Container{PodUID: uid, ID: "containerd://" + cid, QOS: "Gold"},
			"container containerd://" + cid + " of pod " + uid + ` (Gold): unknown QoS class "Gold" (want Guaranteed, Burstable or BestEffort)`},
		"uid": {Container{PodUID: "../..", ID: "containerd://" + cid, QOS: Burstable},
			"container containerd://" + cid + ` of pod ../.. (Burstable): bad pod UID "../.."`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := l.Dir(tc.c)
			assert.EqualError(t, err, tc.err)
		})
	}
}
