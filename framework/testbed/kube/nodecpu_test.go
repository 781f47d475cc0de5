package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure/cgroups"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/measure/nodestats"
)

const agentCID = "3ba2549fbef0c291508697ada01f5aa47661109c3b2ec7c96fb5f871a9725ac0"

var agentAppKey = kubelet.ContainerKey{Namespace: "mb", Pod: "app-1", Container: "app"}

func TestAgentSnapshot(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	at := func(mono int64) time.Time { return t0.Add(time.Duration(mono - 100e9)) }
	rd := cgroups.Reading{
		StartNanos: 100e9, EndNanos: 100e9 + 3e6, NodeNanos: 100e9,
		NodeCounters: cgroups.Counters{UsageNanos: 5e9},
		Containers: []cgroups.ContainerReading{
			{Container: cgroups.Container{ID: "containerd://" + agentCID}, Nanos: 100e9 + 1e6, Counters: &cgroups.Counters{
				UsageNanos: 1500000, Periods: 40, ThrottledPeriods: 3, ThrottledNanos: 2500000, LimitCores: 0.25, WorkingSetBytes: 4000, HasMemory: true,
				RSSBytes: 3000, HasRSS: true}},
			{Container: cgroups.Container{ID: "containerd://nolimit"}, Nanos: 100e9 + 2e6, Counters: &cgroups.Counters{UsageNanos: 7, HasMemory: true, WorkingSetBytes: 9}},
			{Container: cgroups.Container{ID: "containerd://gone"}, Error: "no cgroup at x", NotFound: true},
			{Container: cgroups.Container{ID: "containerd://unasked"}, Counters: &cgroups.Counters{}},
		},
	}
	other := kubelet.ContainerKey{Namespace: "mb", Pod: "app-1", Container: "proxy"}
	gone := kubelet.ContainerKey{Namespace: "mb", Pod: "app-2", Container: "app"}
	s, problems := agentSnapshot("n1", rd, map[string]kubelet.ContainerKey{
		"containerd://" + agentCID: agentAppKey, "containerd://nolimit": other, "containerd://gone": gone}, at)

	c1, c2 := t0.Add(time.Millisecond), t0.Add(2*time.Millisecond)
	assert.Equal(t, kubelet.Snapshot{
		Node: "n1", ReadAt: t0, NodeCPUSeconds: kubelet.Sample{Value: 5, Time: t0},
		Containers: map[kubelet.ContainerKey]kubelet.Container{
			agentAppKey: {ID: "containerd://" + agentCID, CPUSeconds: kubelet.Sample{Value: 0.0015, Time: c1}, WorkingSetBytes: kubelet.Sample{Value: 4000, Time: c1},
				RSSBytes: &kubelet.Sample{Value: 3000, Time: c1},
				Throttling: &kubelet.Throttling{Periods: kubelet.Sample{Value: 40, Time: c1}, ThrottledPeriods: kubelet.Sample{Value: 3, Time: c1},
					ThrottledSeconds: &kubelet.Sample{Value: 0.0025, Time: c1}, LimitCores: 0.25}},
			other: {ID: "containerd://nolimit", CPUSeconds: kubelet.Sample{Value: 7e-9, Time: c2}, WorkingSetBytes: kubelet.Sample{Value: 9, Time: c2}},
		},
		Pods: map[kubelet.PodKey]kubelet.Pod{},
	}, s)
	assert.Equal(t, []string{"mb/app-2/app (containerd://gone): left out of this read: no cgroup at x"}, problems)
}

// fakeAPIServer answers the pod list of a node and proxies the agent's
// pod to a cgroups.Handler, as the API server's pod proxy does.
func fakeAPIServer(t *testing.T, h http.Handler, pods ...corev1.Pod) kubernetes.Interface {
	t.Helper()
	const proxy = "/api/v1/namespaces/nodecpu/pods/mbnodecpu-x:9110/proxy"
	mux := http.NewServeMux()
	mux.Handle(proxy+"/", http.StripPrefix(proxy, h))
	mux.HandleFunc("/api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		node := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "spec.nodeName=")
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, p := range pods {
			if p.Spec.NodeName == node {
				l.Items = append(l.Items, p)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(l)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return c
}

func runningPod(ns, name, uid, node string, qos corev1.PodQOSClass, containers map[string]string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{QOSClass: qos}}
	for name, id := range containers {
		st := corev1.ContainerStatus{Name: name, ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if id == "" {
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
	}
	return p
}

// Two reads of a node through the (fake) API server's pod proxy make a
// window on the node's monotonic clock: exact CPU, exact span.
func TestNodeAgentFetch(t *testing.T) {
	dir := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_1.slice/cri-containerd-" + agentCID + ".scope"
	fsys := fstest.MapFS{
		"cgroup.controllers":    {Data: []byte("cpu memory\n")},
		"cpu.stat":              {Data: []byte("usage_usec 5000000\n")},
		dir + "/cpu.stat":       {Data: []byte("usage_usec 1000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")},
		dir + "/cpu.max":        {Data: []byte("max 100000\n")},
		dir + "/memory.current": {Data: []byte("4096\n")},
		dir + "/memory.stat":    {Data: []byte("anon 3000\ninactive_file 96\n")},
	}
	mono := int64(100e9)
	h := cgroups.NewHandler(fsys, "n1", func() (int64, time.Time) { mono += 1e6; return mono, time.Time{} })
	c := fakeAPIServer(t, h,
		runningPod("mb", "app-1", "uid-1", "n1", corev1.PodQOSBurstable, map[string]string{"app": "containerd://" + agentCID, "init": ""}),
		runningPod("mb", "app-2", "uid-2", "n2", corev1.PodQOSBestEffort, map[string]string{"app": "containerd://" + strings.Repeat("b", 64)}))
	t0 := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	local := t0
	var logs []string
	a := &nodeAgent{c: c, ns: "nodecpu", pods: map[string]string{"n1": "mbnodecpu-x"}, anchors: map[string]clockAnchor{},
		now: func() time.Time { local = local.Add(5 * time.Millisecond); return local }, logf: func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) }}

	ctx := context.Background()
	before, err := a.fetch(ctx, "n1")
	require.NoError(t, err)
	// 2 s later on the node, 1.5 CPU-seconds more in the container.
	mono += 2e9 - 3e6
	fsys[dir+"/cpu.stat"] = &fstest.MapFile{Data: []byte("usage_usec 2500000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")}
	fsys["cpu.stat"] = &fstest.MapFile{Data: []byte("usage_usec 9000000\n")}
	local = local.Add(2 * time.Second)
	after, err := a.fetch(ctx, "n1")
	require.NoError(t, err)
	assert.Empty(t, logs)

	// The first read anchors the node's clock: the middle of the request
	// (t0+7.5ms) is the middle of the read (mono 100.002 s).
	anchor := t0.Add(7500 * time.Microsecond)
	assert.Equal(t, kubelet.Sample{Value: 5, Time: anchor.Add(-time.Millisecond)}, before.NodeCPUSeconds)
	assert.Equal(t, kubelet.Container{ID: "containerd://" + agentCID, CPUSeconds: kubelet.Sample{Value: 1, Time: anchor},
		WorkingSetBytes: kubelet.Sample{Value: 4000, Time: anchor}, RSSBytes: &kubelet.Sample{Value: 3000, Time: anchor}}, before.Containers[agentAppKey])
	assert.Len(t, before.Containers, 1)

	u, err := kubelet.Delta(before, after)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, u.NodeWindow)
	assert.InDelta(t, 2.0, u.NodeCores, 1e-12)
	cu, ok := u.Container(agentAppKey)
	require.True(t, ok)
	assert.Equal(t, 2*time.Second, cu.Window)
	assert.InDelta(t, 750.0, cu.Millicores, 1e-9)
}

func TestNodeAgentFetchErrors(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "node n1: unrecognised cgroup layout: no kubepods cgroup", http.StatusInternalServerError)
	})
	a := &nodeAgent{c: fakeAPIServer(t, h), ns: "nodecpu", pods: map[string]string{"n1": "mbnodecpu-x"}, anchors: map[string]clockAnchor{}, now: time.Now, logf: t.Logf}
	_, err := a.fetch(context.Background(), "n1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node n1: read the counters from the node CPU agent nodecpu/mbnodecpu-x: ")
	assert.Contains(t, err.Error(), "unrecognised cgroup layout: no kubepods cgroup")

	_, err = a.fetch(context.Background(), "n9")
	assert.EqualError(t, err, "node n9: no ready pod of the node CPU agent on it")
}

// kind keeps reading through docker exec; the agent is used only when
// asked for, and only without NodeExec.
func TestUseCounters(t *testing.T) {
	exec := func(context.Context, string, ...string) ([]byte, error) { return nil, nil }
	for name, tc := range map[string]struct {
		o      Options
		source string
		agent  bool
	}{
		"kind":            {Options{NodeExec: exec}, nodestats.Source, false},
		"kind, agent":     {Options{NodeExec: exec, NodeCPU: NodeCPUAgent}, nodestats.Source, true},
		"remote":          {Options{}, kubeletCounters, false},
		"remote, agent":   {Options{NodeCPU: NodeCPUAgent}, agentCounters, true},
		"remote, kubelet": {Options{NodeCPU: NodeCPUKubelet}, kubeletCounters, false},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			tg, err := newTarget(c, tc.o)
			require.NoError(t, err)
			tg.useCounters(c)
			assert.Equal(t, tc.source, tg.counterSource)
			assert.Equal(t, tc.agent, tg.agent != nil)
		})
	}
	_, err := newTarget(fake.NewClientset(), Options{NodeCPU: "cadvisor"})
	assert.EqualError(t, err, `kube target: node CPU "cadvisor": want kubelet or agent`)
}

func agentTarget(t *testing.T, objs ...corev1.Pod) (*Target, *fake.Clientset) {
	t.Helper()
	c := fake.NewClientset()
	tg, err := newTarget(c, Options{NodeCPU: NodeCPUAgent, ReadyTimeout: 20 * time.Second})
	require.NoError(t, err)
	tg.run = "0a1b2c"
	tg.nodes = []NodeInfo{{Name: "n1"}, {Name: "n2"}}
	tg.useCounters(c)
	for _, p := range objs {
		_, err := c.CoreV1().Pods(p.Namespace).Create(context.Background(), &p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return tg, c
}

func agentPod(name, node string, ready bool) corev1.Pod {
	p := runningPod("meshbench-nodecpu-0a1b2c", name, "uid-"+name, node, corev1.PodQOSBurstable, map[string]string{"mbnodecpu": "containerd://" + name})
	p.Labels = map[string]string{manifests.LabelRun: "0a1b2c", manifests.LabelComponent: string(manifests.NodeCPU)}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func TestDeployNodeAgent(t *testing.T) {
	tg, c := agentTarget(t, agentPod("mbnodecpu-aaaaa", "n1", true), agentPod("mbnodecpu-bbbbb", "n2", true))
	require.NoError(t, tg.deployNodeAgent(context.Background()))

	ns, err := c.CoreV1().Namespaces().Get(context.Background(), "meshbench-nodecpu-0a1b2c", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "privileged", ns.Labels["pod-security.kubernetes.io/enforce"], "a hostPath needs the privileged level")
	assert.Equal(t, []string{"meshbench-nodecpu-0a1b2c"}, tg.created, "Close deletes it")
	ds, err := c.AppsV1().DaemonSets("meshbench-nodecpu-0a1b2c").Get(context.Background(), "mbnodecpu", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, manifests.DefaultNodeCPUImage, ds.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, map[string]string{"n1": "mbnodecpu-aaaaa", "n2": "mbnodecpu-bbbbb"}, tg.agent.pods)
}

// A DaemonSet whose pods a policy refuses, or whose image cannot be
// pulled, stops the set-up within seconds, with the reason and the
// fallback.
func TestDeployNodeAgentCannotRun(t *testing.T) {
	pull := agentPod("mbnodecpu-aaaaa", "n1", false)
	pull.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
		Message: "failed to pull image \"meshbench/mbnodecpu:dev\": pull access denied"}}
	tg, _ := agentTarget(t, pull)
	start := time.Now()
	err := tg.deployNodeAgent(context.Background())
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.True(t, strings.HasPrefix(err.Error(), "the node CPU agent cannot run: kube target: meshbench-nodecpu-0a1b2c/mbnodecpu-aaaaa container mbnodecpu: ErrImagePull: failed to pull image"), err.Error())
	assert.True(t, strings.HasSuffix(err.Error(), "\n"+agentFallback(nil)), err.Error())

	tg, c := agentTarget(t)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "meshbench-nodecpu-0a1b2c", Name: "mbnodecpu.1"}, Reason: "FailedCreate", Type: corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{Kind: "DaemonSet", Namespace: "meshbench-nodecpu-0a1b2c", Name: "mbnodecpu"}, Count: 1,
		Message: `Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: policy disallow-host-path: HostPath volumes are forbidden`}
	_, err = c.CoreV1().Events(ev.Namespace).Create(context.Background(), ev, metav1.CreateOptions{})
	require.NoError(t, err)
	// The fake does not count retries: five tries make it final.
	ev.Count = 5
	_, err = c.CoreV1().Events(ev.Namespace).Update(context.Background(), ev, metav1.UpdateOptions{})
	require.NoError(t, err)
	err = tg.deployNodeAgent(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "FailedCreate: DaemonSet mbnodecpu cannot create pods (5 times): Error creating: admission webhook \"validate.kyverno.svc-fail\" denied the request: policy disallow-host-path")
	assert.True(t, strings.HasSuffix(err.Error(), "\n"+agentFallback(nil)), err.Error())
}

func TestCompareReads(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	busy := kubelet.ContainerKey{Namespace: "mb", Pod: "backend-1", Container: "sidecar"}
	quiet := kubelet.ContainerKey{Namespace: "mb", Pod: "backend-1", Container: "app"}
	unread := kubelet.ContainerKey{Namespace: "kube-system", Pod: "etcd-n1", Container: "etcd"}
	snap := func(at time.Time, node float64, cs map[kubelet.ContainerKey]float64) kubelet.Snapshot {
		s := kubelet.Snapshot{Node: "n1", NodeCPUSeconds: kubelet.Sample{Value: node, Time: at}, Containers: map[kubelet.ContainerKey]kubelet.Container{}}
		for k, v := range cs {
			s.Containers[k] = kubelet.Container{ID: k.Container, CPUSeconds: kubelet.Sample{Value: v, Time: at}}
		}
		return s
	}
	a0, a1 := t0.Add(time.Millisecond), t0.Add(2*time.Second+time.Millisecond)
	before := readPair{
		node:  snap(t0, 10, map[kubelet.ContainerKey]float64{busy: 1, quiet: 1, unread: 3}),
		agent: snap(a0, 10, map[kubelet.ContainerKey]float64{busy: 1, quiet: 1}),
	}
	after := readPair{
		node:  snap(t0.Add(2*time.Second), 12, map[kubelet.ContainerKey]float64{busy: 1.5, quiet: 1.01, unread: 3.1}),
		agent: snap(a1, 12.02, map[kubelet.ContainerKey]float64{busy: 1.505, quiet: 1.01}),
	}
	assert.Equal(t, []string{
		"node n1: kube-system/etcd-n1/etcd: 50.0 millicores by the node read, not read by the agent",
		"node n1: mb/backend-1/sidecar: 250.0 millicores over 2s by the node read, 252.5 over 2s by the agent (+1.0%)",
		"node n1: node 1.000 cores by the node read, 1.010 by the agent; containers at most 1.0% apart",
	}, compareReads(before, after))
}

// Comparing keeps the node read's figures, whatever the agent answers.
func TestComparingKeepsTheNodeRead(t *testing.T) {
	var logs []string
	c := fake.NewClientset()
	tg, err := newTarget(c, Options{NodeCPU: NodeCPUAgent, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	require.NoError(t, err)
	tg.agent = &nodeAgent{c: c, pods: map[string]string{}, anchors: map[string]clockAnchor{}, now: time.Now, logf: tg.o.Logf}
	want := kubelet.Snapshot{Node: "n1", NodeCPUSeconds: kubelet.Sample{Value: 3}}
	fetch := tg.comparing(func(context.Context, string) (kubelet.Snapshot, error) { return want, nil })
	got, err := fetch(context.Background(), "n1")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"node CPU agent vs node read: node n1: the agent's read failed: node n1: no ready pod of the node CPU agent on it"}, logs)
}

// A static pod's cgroup is named by its config hash, not by its mirror's
// UID (kind's control plane was "not read by the agent" before).
func TestCgroupUIDOfAStaticPod(t *testing.T) {
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "0f1e2d3c-mirror", Annotations: map[string]string{
		"kubernetes.io/config.mirror": "9a8b7c6d5e4f", configHash: "9a8b7c6d5e4f", "kubernetes.io/config.source": "file"}}}
	assert.Equal(t, "9a8b7c6d5e4f", cgroupUID(mirror))
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "5b1c9a2e-0000-4a00-8000-000000000001"}}
	assert.Equal(t, "5b1c9a2e-0000-4a00-8000-000000000001", cgroupUID(plain))
}
