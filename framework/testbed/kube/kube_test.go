package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestCloseDeletesNamespaces(t *testing.T) {
	c := fake.NewClientset()
	tg, err := newTarget(c, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for _, arm := range []string{"baseline", "meshed", "loadgen"} {
		require.NoError(t, tg.createNamespace(ctx, manifests.Namespace(tg.ns(arm), arm, tg.run, true)))
	}
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}
	_, err = c.CoreV1().Namespaces().Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, tg.Close(ctx))
	l, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, l.Items, 1, "only the target's namespaces are deleted")
	assert.Equal(t, "someone-elses", l.Items[0].Name)
	var deletes int
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "namespaces" {
			deletes++
		}
	}
	assert.Equal(t, 3, deletes)
	require.NoError(t, tg.Close(ctx), "a second Close is a no-op")
}

func TestCloseReportsNamespacesThatDoNotGo(t *testing.T) {
	c := fake.NewClientset()
	tg, err := newTarget(c, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, tg.createNamespace(ctx, manifests.Namespace(tg.ns("baseline"), "baseline", tg.run, true)))
	// A namespace with a finalizer nobody removes stays Terminating.
	c.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	err = tg.Close(cctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "namespaces "+tg.ns("baseline")+" still there")
	c.ReactionChain = c.ReactionChain[1:]
	require.NoError(t, tg.Close(ctx), "Close can be retried after a failure")
}

// fakeCluster stands in for a cluster: a fake API server, a controller
// that turns Deployments into ready pods, nginx stand-ins that count
// requests like stub_status does, real mbloadgen processes as the loadgen
// pods, and kubelets whose counters advance with time.
type fakeCluster struct {
	t       *testing.T
	c       *fake.Clientset
	start   time.Time
	mu      sync.Mutex
	apps    map[string]*fakeApp // "ns/component"
	lgs     map[string]string   // "ns/pod" → address of its loadgen
	secured atomic.Bool         // what the mesh's telemetry says
	// started is when each restarted container ("ns/pod/container")
	// started again, as its kubelet reports it.
	started map[string]time.Time
}

type fakeApp struct {
	srv      *httptest.Server
	requests atomic.Int64
	// failUntil, in Unix nanoseconds, makes the app answer 503 until then.
	failUntil atomic.Int64
	// loads counts the load's requests (not status or health checks), and
	// peers the client addresses they came from: one per TCP connection.
	loads atomic.Int64
	peers sync.Map
	// last is the last load request as it arrived.
	last atomic.Pointer[received]
}

// received is a request as a stand-in app got it: its method, the body
// bytes it read, and its headers.
type received struct {
	method string
	body   int64
	header http.Header
}

func newFakeCluster(t *testing.T) *fakeCluster {
	nodes := []runtime.Object{}
	for _, n := range []string{"meshbench-worker", "meshbench-worker2"} {
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}},
			Spec:       corev1.NodeSpec{ProviderID: "kind://docker/meshbench/" + n},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
				NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.12.48", OSImage: "Debian GNU/Linux 12 (bookworm)",
					ContainerRuntimeVersion: "containerd://2.3.4", KubeletVersion: "v1.36.3"},
			},
		})
	}
	fc := &fakeCluster{t: t, c: fake.NewClientset(nodes...), start: time.Now(), apps: map[string]*fakeApp{}, lgs: map[string]string{},
		started: map[string]time.Time{}}
	fc.c.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.36.3"}
	fc.secured.Store(true)

	return fc
}

// app returns the nginx stand-in of component c in ns, starting it.
func (fc *fakeCluster) app(ns string, c manifests.Component) *fakeApp {
	if c != manifests.Backend && c != manifests.Frontend {
		return nil
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	key := ns + "/" + string(c)
	if a, ok := fc.apps[key]; ok {
		return a
	}
	a := &fakeApp{}
	var upstream *fakeApp
	if c == manifests.Frontend {
		fc.mu.Unlock()
		upstream = fc.app(ns, manifests.Backend)
		fc.mu.Lock()
	}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := a.requests.Add(1)
		switch r.URL.Path {
		case manifests.StatusPath:
			fmt.Fprintf(w, "Active connections: 1 \nserver accepts handled requests\n 1 1 %d \nReading: 0 Writing: 1 Waiting: 0 \n", n)
		case manifests.HealthPath:
			_, _ = io.WriteString(w, "ok\n")
		default:
			a.loads.Add(1)
			a.peers.Store(r.RemoteAddr, true)
			n, _ := io.Copy(io.Discard, r.Body)
			a.last.Store(&received{method: r.Method, body: n, header: r.Header.Clone()})
			if time.Now().UnixNano() < a.failUntil.Load() {
				http.Error(w, "sidecar down", http.StatusServiceUnavailable)
				return
			}
			if upstream == nil {
				_, _ = io.WriteString(w, strings.Repeat("x", 64))
				return
			}
			resp, err := http.Get(upstream.srv.URL + r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(w, resp.Body)
		}
	}))
	fc.t.Cleanup(a.srv.Close)
	fc.apps[key] = a
	return a
}

// forward points a pod's tunnel at its stand-in.
func (fc *fakeCluster) forward(_ context.Context, ns, pod string, _ int) (*tunnel, error) {
	comp := manifests.Component(pod[:strings.Index(pod, "-")])
	if comp == manifests.Loadgen {
		addr, err := fc.loadgen(ns, pod)
		return &tunnel{Addr: addr}, err
	}
	a := fc.app(ns, comp)
	if a == nil {
		return nil, fmt.Errorf("no pod %s/%s", ns, pod)
	}
	return &tunnel{Addr: strings.TrimPrefix(a.srv.URL, "http://")}, nil
}

// loadgen returns the address of the loadgen of pod: a real mbloadgen
// process on loopback behind a proxy that sends its load to the stand-in
// of the Service the harness named (cluster names do not resolve here).
func (fc *fakeCluster) loadgen(ns, pod string) (string, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if addr, ok := fc.lgs[ns+"/"+pod]; ok {
		return addr, nil
	}
	addr, err := startMbloadgen(fc.t)
	if err != nil {
		return "", err
	}
	backend, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(backend)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == fortioRunPath {
			q := r.URL.Query()
			u, err := url.Parse(q.Get("url"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			parts := strings.Split(u.Hostname(), ".") // component.namespace.svc
			app := fc.app(parts[1], manifests.Component(parts[0]))
			if app == nil {
				http.Error(w, "no service "+u.Host, http.StatusBadGateway)
				return
			}
			q.Set("url", app.srv.URL+"/")
			r.URL.RawQuery = q.Encode()
		}
		rp.ServeHTTP(w, r)
	}))
	fc.t.Cleanup(proxy.Close)
	a := strings.TrimPrefix(proxy.URL, "http://")
	fc.lgs[ns+"/"+pod] = a
	return a, nil
}

// mbloadgen is the binary of cmd/mbloadgen, built once per test binary.
var mbloadgen struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mbloadgen.dir != "" {
		_ = os.RemoveAll(mbloadgen.dir)
	}
	os.Exit(code)
}

// startMbloadgen starts an mbloadgen process on a free loopback port and
// waits for it to answer.
func startMbloadgen(t *testing.T) (string, error) {
	mbloadgen.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			mbloadgen.err = err
			return
		}
		if mbloadgen.dir, err = os.MkdirTemp("", "meshbench-kube-test-"); err != nil {
			mbloadgen.err = err
			return
		}
		mbloadgen.bin = filepath.Join(mbloadgen.dir, "mbloadgen")
		out, err := exec.Command(goBin, "build", "-o", mbloadgen.bin, "github.com/meshbench/meshbench/cmd/mbloadgen").CombinedOutput()
		if err != nil {
			mbloadgen.err = fmt.Errorf("build mbloadgen: %w: %s", err, out)
		}
	})
	if mbloadgen.err != nil {
		return "", mbloadgen.err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(mbloadgen.bin, "-listen", addr, "-loglevel", "error")
	if err := cmd.Start(); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return "", fmt.Errorf("mbloadgen on %s did not answer: %w", addr, err)
	}
	return addr, nil
}

// fetch is a kubelet whose every container burns 100m and the node 500m,
// stamped with the time of the read.
func (fc *fakeCluster) fetch(ctx context.Context, node string) (kubelet.Snapshot, error) {
	return fc.read(ctx, node, time.Now())
}

// read is a kubelet's read of node at the time its counters were last
// collected, at.
func (fc *fakeCluster) read(ctx context.Context, node string, at time.Time) (kubelet.Snapshot, error) {
	now := at
	el := now.Sub(fc.start).Seconds()
	s := kubelet.Snapshot{Node: node, ReadAt: time.Now(),
		NodeCPUSeconds:      kubelet.Sample{Value: 0.5 * el, Time: now},
		NodeWorkingSetBytes: kubelet.Sample{Value: 1 << 30, Time: now},
		Containers:          map[kubelet.ContainerKey]kubelet.Container{}, Pods: map[kubelet.PodKey]kubelet.Pod{}}
	pods, err := fc.c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node {
			continue
		}
		for _, c := range p.Spec.Containers {
			start := fc.start
			fc.mu.Lock()
			if at, ok := fc.started[p.Namespace+"/"+p.Name+"/"+c.Name]; ok {
				start = at
			}
			fc.mu.Unlock()
			s.Containers[kubelet.ContainerKey{Namespace: p.Namespace, Pod: p.Name, Container: c.Name}] = kubelet.Container{
				CPUSeconds:      kubelet.Sample{Value: 0.1 * max(0, now.Sub(start).Seconds()), Time: now},
				WorkingSetBytes: kubelet.Sample{Value: 10 << 20, Time: now},
				StartTime:       start,
			}
		}
	}
	return s, nil
}

// control turns Deployments into ready pods, spread over the nodes, until
// ctx ends; a Deployment scaled up gets its new pods. It places as the
// manifests' affinity asks: every arm alike, backends on one node,
// frontends and loadgens on the other (replicas round-robin from there).
func (fc *fakeCluster) control(ctx context.Context) {
	made := map[string]int{}
	nodes := []string{"meshbench-worker", "meshbench-worker2"}
	first := map[string]int{string(manifests.Frontend): 1, string(manifests.Loadgen): 1}
	_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ds, err := fc.c.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range ds.Items {
			key := d.Namespace + "/" + d.Name
			from := made[key]
			made[key] = int(*d.Spec.Replicas)
			for i := from; i < int(*d.Spec.Replicas); i++ {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", d.Name, i), Namespace: d.Namespace,
						Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
					Spec: *d.Spec.Template.Spec.DeepCopy(),
				}
				p.Spec.NodeName = nodes[(first[d.Spec.Template.Labels[manifests.LabelComponent]]+i)%len(nodes)]
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				for _, c := range p.Spec.Containers {
					p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
						Name: c.Name, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
				}
				if _, err := fc.c.CoreV1().Pods(d.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					fc.t.Errorf("controller: %v", err)
				}
			}
		}
		return false, nil
	})
}

// evidence is the mesh's mTLS telemetry: every pair of the meshed
// namespace, secured or not as the test says.
func (fc *fakeCluster) evidence(_ context.Context, _ kubernetes.Interface, ns string) ([]mesh.Edge, error) {
	var out []mesh.Edge
	for _, p := range [][2]string{{"loadgen", "backend"}, {"loadgen", "frontend"}, {"frontend", "backend"}} {
		out = append(out, mesh.Edge{Src: ns + "/" + p[0], Dst: ns + "/" + p[1], Secured: fc.secured.Load(), Evidence: "test telemetry"})
	}
	return out, nil
}

func (fc *fakeCluster) newTarget(t *testing.T, o Options) *Target {
	tg, err := newTarget(fc.c, o)
	require.NoError(t, err)
	tg.fwd, tg.fetch = fc.forward, fc.fetch
	return tg
}

// TestTargetOnFakeCluster drives New's set-up, Run on both arms and paths,
// and Close against the fake cluster, with the bring-your-own sidecar mesh
// and two loadgen shards.
func TestTargetOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	var logs []string
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: m, Loadgens: 2, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) },
		Workloads: manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })

	// Namespaces: restricted enforced where nothing is injected.
	nss := tg.Namespaces()
	require.Len(t, nss, 2)
	base, err := fc.c.CoreV1().Namespaces().Get(ctx, nss[0], metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "restricted", base.Labels["pod-security.kubernetes.io/enforce"])
	meshed, err := fc.c.CoreV1().Namespaces().Get(ctx, nss[1], metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "enabled", meshed.Labels["meshbench.io/sidecar"], "the adapter enabled injection")
	assert.NotContains(t, meshed.Labels, "pod-security.kubernetes.io/enforce")
	d, err := fc.c.AppsV1().Deployments(nss[1]).Get(ctx, "backend", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, d.Spec.Template.Spec.Containers, 2, "the sidecar was injected into the meshed arm")
	d, err = fc.c.AppsV1().Deployments(nss[0]).Get(ctx, "backend", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, d.Spec.Template.Spec.Containers, 1, "and not into the baseline")

	env := tg.Environment()
	assert.Equal(t, "kind", env.Target)
	assert.Equal(t, "v1.36.3", env.Kubernetes)
	assert.Equal(t, 2, env.Nodes)
	assert.Equal(t, 2, env.Cores)
	assert.EqualValues(t, 8192, env.MemoryMiB)
	assert.Equal(t, "6.12.48", env.Kernel)
	assert.Equal(t, "containerd://2.3.4", env.Runtime)
	if eth0, err := net.InterfaceByName("eth0"); err == nil {
		assert.Equal(t, eth0.MTU, env.MTU, "read by the loadgen from its eth0")
	}
	assert.Equal(t, "sidecar", env.Mesh.Name)
	assert.Equal(t, "dev", env.Mesh.Version)
	assert.Equal(t, "in-mesh", env.Mesh.Config["placement"])
	assert.Equal(t, "meshbench/nginx:dev", env.Mesh.Config["nginxImage"])
	assert.Contains(t, env.Loadgen, "2× mbloadgen (fortio v1.75.3")
	assert.Contains(t, env.Mesh.Config["nodes.meshed"], "backend=meshbench-worker")
	t.Logf("placement: %s", env.Mesh.Config["nodes.meshed"])
	ev := tg.Evidence()
	assert.True(t, ev.Verifications[testbed.Meshed].Meshed)
	assert.Len(t, ev.Verifications[testbed.Meshed].Pods, 4, "backend, frontend and two loadgens")

	o := testbed.Window{Concurrency: 4, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond}
	for _, arm := range testbed.Arms {
		for _, p := range []testbed.Path{testbed.OneHop, testbed.TwoHop} {
			run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: p}, Window: o})
			require.NoError(t, err, "%s %s", arm, p)
			assert.Empty(t, run.Invalid, "%s %s", arm, p)
			assert.Positive(t, run.Load.Requests)
			require.Len(t, run.Shards, 2, "two loadgens share the connections")
			assert.Equal(t, 2, run.Shards[0].Options.Concurrency)
			assert.Contains(t, run.Shards[1].Options.Labels, "shard 2/2 "+tg.arms[arm].loadgenNS+"/loadgen-")
			assert.Equal(t, run.Shards[0].Requests+run.Shards[1].Requests, run.Load.Requests)
			assert.Equal(t, run.Load.Requests, run.Load.Latency.Count, "the histograms were merged")
			assert.Equal(t, fmt.Sprintf("http://%s.%s.svc:8080/", testbed.Hops(p)[0].Dst, tg.arms[arm].ns), run.Load.Options.URL)
			require.Len(t, run.Edges, len(testbed.Hops(p)), "%s %s: %+v", arm, p, run.Edges)
			for _, e := range run.Edges {
				assert.GreaterOrEqual(t, e.Requests, run.Load.Requests, "%s %s %+v", arm, p, e)
				assert.Equal(t, arm == testbed.Meshed, e.Secured, "%s %s %+v", arm, p, e)
			}
			roles := map[measure.Role]bool{}
			for _, u := range run.Resources.Usage {
				roles[u.Role] = true
				assert.Contains(t, u.Name, tg.arms[arm].ns+"/", "only the arm's own containers are counted per role")
				assert.InDelta(t, 100, u.MilliCores, 1, u.Name)
				assert.EqualValues(t, 10<<20, u.IdleRSS, u.Name)
			}
			assert.True(t, roles[measure.RoleApp] && roles[measure.RoleLoadgen], "%v", roles)
			assert.Equal(t, arm == testbed.Meshed, roles[measure.RoleSidecar], "%s: sidecars %v", arm, roles)
			assert.InDelta(t, 25, run.Resources.NodeUtilisation["meshbench-worker"], 1, "500m of 2 cores")
		}
	}
	assert.Len(t, tg.Evidence().MTLS, 3)

	// The mesh's telemetry says the traffic was not mutually authenticated.
	fc.secured.Store(false)
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.TwoHop}, Window: o})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(run.Invalid.Strings(), "\n"), "mesh not really on")

	require.NoError(t, tg.Close(ctx))
	for _, ns := range nss {
		_, err := fc.c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), ns)
	}
	assert.NotEmpty(t, logs)
}

// TestTargetOutOfMesh puts the loadgen in its own namespace: the first hop
// is plain text by design and does not invalidate the meshed arm.
func TestTargetOutOfMesh(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m, Placement: OutOfMesh})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	nss := tg.Namespaces()
	require.Len(t, nss, 3)
	assert.Contains(t, nss[2], "-loadgen-")
	assert.Equal(t, nss[2], tg.arms[testbed.Baseline].loadgenNS, "one loadgen serves both arms")

	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.TwoHop}, Window: o})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	assert.True(t, run.Warnings.Has(validity.LoadgenOutOfMesh), "%v", run.Warnings)
	require.Len(t, run.Edges, 2)
	assert.False(t, run.Edges[0].Secured, "loadgen → frontend: the out-of-mesh loadgen has no identity")
	assert.True(t, run.Edges[1].Secured, "frontend → backend")
	for _, u := range run.Resources.Usage {
		if u.Role == measure.RoleLoadgen {
			assert.Contains(t, u.Name, nss[2]+"/")
		}
	}
}

// TestSetUpFailsFastAndCleansUp: an image that cannot be pulled stops New
// at once, with the pod's story, and every namespace is deleted.
func TestSetUpFailsFastAndCleansUp(t *testing.T) {
	fc := newFakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		// A kubelet that cannot pull the loadgen image.
		_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			ds, _ := fc.c.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			for _, d := range ds.Items {
				if d.Name != "loadgen" {
					continue
				}
				p := runPod(d.Namespace, "loadgen-0", manifests.Loadgen, d.Labels[manifests.LabelRun])
				p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
					Message: `failed to pull and unpack image "ghcr.io/meshbench/mbloadgen:v0.1.0": dial tcp: lookup ghcr.io: no such host`}
				_, _ = fc.c.CoreV1().Pods(d.Namespace).Create(ctx, p, metav1.CreateOptions{})
				return true, nil
			}
			return false, nil
		})
	}()
	tg := fc.newTarget(t, Options{})
	start := time.Now()
	err := tg.setUp(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	var pe *PodError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ErrImagePull", pe.Reason)
	nss, lerr := fc.c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, lerr)
	assert.Empty(t, nss.Items, "New deleted what it created")
}

func TestSetUpNeedsKubeletAccess(t *testing.T) {
	fc := newFakeCluster(t)
	tg := fc.newTarget(t, Options{})
	tg.fetch = func(context.Context, string) (kubelet.Snapshot, error) {
		return kubelet.Snapshot{}, &kubelet.RBACError{Node: "meshbench-worker", Path: "/api/v1/nodes/meshbench-worker/proxy/metrics/resource",
			Err: apierrors.NewForbidden(corev1.Resource("nodes/proxy"), "meshbench-worker", fmt.Errorf("no"))}
	}
	err := tg.setUp(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nodes/proxy")
	nss, _ := fc.c.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	assert.Empty(t, nss.Items, "nothing deployed before the check")
}

func TestAPIErrorMessages(t *testing.T) {
	err := apiError("https://127.0.0.1:6443", fmt.Errorf("dial tcp 127.0.0.1:6443: connect: connection refused"))
	assert.Contains(t, err.Error(), "API server at https://127.0.0.1:6443 is unreachable")
	err = apiError("h", apierrors.NewUnauthorized("token expired"))
	assert.Contains(t, err.Error(), "rejected the credentials")
}

func TestNodeInfo(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", Labels: map[string]string{
			labelInstanceType: "m6i.xlarge", labelNFDVendor: "Intel", labelNFDFamily: "6", labelNFDModel: "106"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("15Gi")}},
	}
	ni := nodeInfo(n)
	assert.Equal(t, 3.92, ni.AllocatableCores)
	assert.EqualValues(t, 15*1024, ni.AllocatableMiB)
	assert.Equal(t, "Intel family 6 model 106", ni.CPUModel)
	delete(n.Labels, labelNFDVendor)
	assert.Equal(t, "instance type m6i.xlarge", nodeInfo(n).CPUModel)
}

func TestPlacementAndOptions(t *testing.T) {
	p, err := ParsePlacement("")
	require.NoError(t, err)
	assert.Equal(t, InMesh, p)
	_, err = ParsePlacement("sideways")
	assert.Error(t, err)
	_, err = newTarget(fake.NewClientset(), Options{Loadgens: -1})
	assert.Error(t, err)
	_, err = newTarget(fake.NewClientset(), Options{Workloads: manifests.Params{ResponseSize: -1}})
	assert.Error(t, err)
	tg, err := newTarget(fake.NewClientset(), Options{})
	require.NoError(t, err)
	_, err = tg.Run(context.Background(), testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{Path: testbed.OneHop, Protocol: load.H2}})
	assert.Error(t, err)
}

func TestCoverage(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	assert.Equal(t, 1.0, coverage(at(10), at(20), at(0), at(30)))
	assert.Equal(t, 0.5, coverage(at(10), at(30), at(0), at(20)))
	assert.Equal(t, 0.0, coverage(at(10), at(20), at(30), at(40)))
}

// keep the JSON shape of Evidence stable for the report.
func TestEvidenceJSON(t *testing.T) {
	b, err := json.Marshal(Evidence{MTLSNote: "x"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"verifications":null,"mtlsNote":"x"}`, string(b))
}

// TestSupportsNoFlow skips a user flow with the reason.
func TestSupportsNoFlow(t *testing.T) {
	tg := &Target{o: Options{Placement: InMesh, Loadgens: 1}}
	require.NoError(t, tg.Supports(testbed.Workload{Path: testbed.TwoHop}, nil))
	err := tg.Supports(testbed.Workload{Path: testbed.TwoHop, Flow: &load.Flow{Steps: []load.Step{{Name: "home"}}}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "user flow: the cluster loadgen is fortio's REST API")
}

// startFakeCluster starts a fake cluster's control loop for the test (two
// minutes at most) and returns it with the bring-your-own sidecar mesh
// its pods run.
func startFakeCluster(t *testing.T) (*fakeCluster, context.Context, mesh.Mesh) {
	t.Helper()
	fc := newFakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	go fc.control(ctx)
	m, err := mesh.New("sidecar", mesh.WithSidecar("mb-sidecar", "meshbench/sidecar:dev"), mesh.WithMTLSEvidence(fc.evidence))
	require.NoError(t, err)
	return fc, ctx, m
}
