package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/internal/kubewait"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/measure/nodestats"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Target runs both arms in namespaces of one cluster, or, with a
// candidate sidecar (Options.Candidate), the baseline, reference and
// candidate arms. It implements testbed.Target and testbed.Armed.
//
// Target coordinates; each concern is a small type over the target's
// state, built by an accessor with only what it needs: the mesh's
// installation (installer: meshInstaller), the workloads' deployment
// (deployer), the upgrade gate's arms (gate: upgradeGate), the nodes'
// counters and their alignment (aligner), the resources per role
// (accountant), the faults (faults: faultInjector) and the pods' tunnels,
// counters and logs (access: podAccess). The state each owns is embedded here (installState,
// deployState, counterState, faultState).
type Target struct {
	o   Options
	c   kubernetes.Interface
	run string // random suffix shared by the run's namespaces

	// Seams to the cluster, replaced in tests.
	fwd forwarder
	// counterState is where the nodes' counters are read (aligner).
	counterState
	hc  *http.Client
	now func() time.Time

	// deployState is what the deployer created (deployer).
	deployState

	mu         sync.Mutex
	closed     bool
	arms       map[testbed.Arm]*arm
	env        testbed.Environment
	meshInfo   mesh.Info
	candInfo   mesh.Info // the candidate revision's, in a revision gate
	nodes      []NodeInfo
	idle       map[kubelet.ContainerKey]kubelet.Container // each container's read before any load, for its idle memory
	verified   map[testbed.Arm]mesh.Verification
	lastMTLS   []mesh.Edge
	mtlsReason string
	// sidecar is the bring-your-own sidecar mesh's wiring of the meshed
	// arm (certificates made at set-up), nil for every other mesh.
	sidecar *manifests.Sidecar
	// restCfg is what New was given; installState is the mesh's
	// installer when the run installed it (meshInstaller).
	restCfg *rest.Config
	installState
	// faultState is the faults' killer (faultInjector).
	faultState
}

// arm is one side's namespaces; in a run, as the run's placement sees it
// (Target.runArm).
type arm struct {
	name testbed.Arm
	// ns holds the backend and the frontend; loadgenNS the loadgen (ns
	// itself in-mesh, the shared loadgen namespace out-of-mesh).
	ns, loadgenNS string
	// placement is where the loadgen sits.
	placement Placement
	// sidecar: the arm's pods are wired through the bring-your-own
	// sidecar; in the mesh, the loadgen calls its own sidecar's outbound
	// listeners, out of it, the callee sidecar's plain (permissive) port.
	sidecar bool
	// proxy is the arm's sidecar wiring when the harness wires it (the
	// candidate's differs from the reference's); image, when set, the
	// image of the mesh's injected proxy container instead of the mesh's
	// own (an unwired candidate).
	proxy *manifests.Sidecar
	image string
	// mesh is the arm's own mesh adapter (the candidate revision's), nil
	// for the target's (Target.meshOf).
	mesh mesh.Mesh
}

// url is what the loadgen calls for path p in protocol proto: the
// Service's HTTP/1.1 or h2c port, or, with the bring-your-own sidecar, the
// loadgen sidecar's matching outbound listener (in the mesh) or the
// callee sidecar's plain listener (out of it).
func (a *arm) url(p testbed.Path, proto load.Protocol) string {
	svc := manifests.Backend
	if p == testbed.TwoHop {
		svc = manifests.Frontend
	}
	h2 := proto == load.H2
	switch {
	case a.sidecar && a.placement == OutOfMesh:
		return fmt.Sprintf("http://%s.%s.svc:%d/", svc, a.ns, manifests.PlainPort)
	case a.sidecar && h2:
		return fmt.Sprintf("http://127.0.0.1:%d/", manifests.OutboundH2Port(svc))
	case a.sidecar:
		return fmt.Sprintf("http://127.0.0.1:%d/", manifests.OutboundPort(svc))
	case h2:
		return fmt.Sprintf("http://%s.%s.svc:%d/", svc, a.ns, manifests.H2Port)
	}
	return fmt.Sprintf("http://%s.%s.svc:%d/", svc, a.ns, manifests.Port)
}

var _ testbed.Target = (*Target)(nil)

// NodeInfo describes one node of the cluster.
type NodeInfo struct {
	Name             string  `json:"name"`                   // the node's name
	AllocatableCores float64 `json:"allocatableCores"`       // allocatable CPU, in cores
	AllocatableMiB   int64   `json:"allocatableMiB"`         // allocatable memory, in MiB
	Kernel           string  `json:"kernel"`                 // kernel version, from the node's status
	OSImage          string  `json:"osImage"`                // e.g. "Debian GNU/Linux 12 (bookworm)"
	Runtime          string  `json:"containerRuntime"`       // e.g. "containerd://2.3.4"
	Kubelet          string  `json:"kubelet"`                // the kubelet's version
	CPUModel         string  `json:"cpuModel,omitempty"`     // from a node label or the host, when known
	InstanceType     string  `json:"instanceType,omitempty"` // node.kubernetes.io/instance-type, on a cloud
	ProviderID       string  `json:"providerID,omitempty"`   // e.g. "kind://docker/meshbench/meshbench-worker"
}

// New deploys both arms in the cluster cfg points at and waits until they
// are ready and verified. On error everything created so far is deleted.
func New(ctx context.Context, cfg *rest.Config, o Options) (*Target, error) {
	if cfg == nil {
		return nil, errors.New("kube target: no rest.Config")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default (5 QPS) would delay the kubelet reads around
		// a window behind the watcher's and the verifier's requests.
		cfg.QPS, cfg.Burst = 50, 100
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube target: client for %s: %w", cfg.Host, err)
	}
	t, err := newTarget(c, o)
	if err != nil {
		return nil, err
	}
	t.restCfg = cfg
	t.fwd = spdyForwarder(cfg, c)
	t.useCounters(c)
	if _, err := serverVersion(ctx, c); err != nil {
		return nil, apiError(cfg.Host, err)
	}
	if err := t.setUp(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// kubeletCounters names the kubelet's counters in the environment.
const kubeletCounters = "the kubelets' /metrics/resource and /metrics/cadvisor through the API server (cached, refreshed every 10-15 s)"

// useCounters picks where CPU and memory are read: on the nodes, at the
// moment of the read, when the target can run commands there (kind) or
// through its node agent (Options.NodeCPU agent, deployed by preflight);
// else from the kubelets.
func (t *Target) useCounters(c kubernetes.Interface) {
	if t.o.NodeExec == nil && t.o.NodeCPU == NodeCPUAgent {
		t.agent = &nodeAgent{c: c, now: t.now, logf: t.o.Logf, pods: map[string]string{}, anchors: map[string]clockAnchor{}}
		t.counterSource, t.onDemand, t.fetch = agentCounters, true, t.agent.fetch
		return
	}
	if t.o.NodeExec == nil {
		t.counterSource = kubeletCounters
		t.fetch = func(ctx context.Context, node string) (kubelet.Snapshot, error) { return kubelet.Fetch(ctx, c, node) }
		if t.o.CheckExec != nil {
			t.check = t.nodeReads(t.o.CheckExec)
		}
		return
	}
	t.counterSource, t.onDemand = nodestats.Source, true
	t.fetch = t.nodeReads(t.o.NodeExec)
	if t.o.NodeCPU == NodeCPUAgent {
		// The node reads stay the figures; the agent is read beside them
		// and compared, to check it.
		t.agent = &nodeAgent{c: c, now: t.now, logf: t.o.Logf, pods: map[string]string{}, anchors: map[string]clockAnchor{}}
		t.fetch = t.comparing(t.fetch)
	}
}

// nodeReads reads a node's counters on it with exec, at the instant
// (framework/measure/nodestats), logging the counters it lacks.
func (t *Target) nodeReads(exec NodeExec) func(context.Context, string) (kubelet.Snapshot, error) {
	return func(ctx context.Context, node string) (kubelet.Snapshot, error) {
		s, err := nodestats.Fetch(ctx, nodestats.Exec(exec), node)
		missing, err := nodestats.Missing(err)
		for _, m := range missing {
			t.o.Logf("CPU counters: %v", m)
		}
		return s, err
	}
}

// newTarget builds a Target around a clientset without touching the cluster.
func newTarget(c kubernetes.Interface, o Options) (*Target, error) {
	if err := o.normalize(); err != nil {
		return nil, fmt.Errorf("kube target: %w", err)
	}
	return &Target{
		o:   o,
		c:   c,
		run: envconf.RandomName("", 6),
		// No keep-alive: tunnels are per run, and a later tunnel may get the
		// local port of an earlier one.
		hc:          &http.Client{Transport: &http.Transport{DisableCompression: true, DisableKeepAlives: true}},
		now:         time.Now,
		arms:        map[testbed.Arm]*arm{},
		verified:    map[testbed.Arm]mesh.Verification{},
		deployState: deployState{replicas: map[string]int{}},
	}, nil
}

// serverVersion asks the API server its version, within 30s.
func serverVersion(ctx context.Context, c kubernetes.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := discovery.ToServerVersionInterfaceWithContext(c.Discovery()).ServerVersionWithContext(ctx)
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// apiError explains a failed first contact with the API server.
func apiError(host string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("kube target: the API server at %s rejected the credentials (expired token or wrong -context?): %w", host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("kube target: the API server at %s refused the identity in use: %w", host, err)
	}
	return fmt.Errorf("kube target: the API server at %s is unreachable (check -kubeconfig/-context and that the cluster is running): %w", host, err)
}

func (t *Target) ns(role string) string {
	return fmt.Sprintf("%s-%s-%s", t.o.NamespacePrefix, role, t.run)
}

// setUp does New's work after the API server answered, as a list of
// steps; on error it deletes what it created.
func (t *Target) setUp(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.o.DeleteTimeout+t.o.InstallTimeout)
			defer cancel()
			if cerr := t.Close(cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean-up: %w", cerr))
			}
		}
	}()
	if err := t.preflight(ctx); err != nil {
		return err
	}
	if err := t.newArms(); err != nil {
		return err
	}
	if err := t.createArmNamespaces(ctx); err != nil {
		return err
	}
	if err := t.deployArms(ctx); err != nil {
		return err
	}
	if err := t.verify(ctx); err != nil {
		return err
	}
	if t.idle, err = t.aligner().idleMemory(ctx); err != nil {
		return err
	}
	t.env = t.environment(ctx)
	t.killer, t.faultWhyNot = t.newKiller(ctx)
	return nil
}

// preflight finds (or installs) the mesh and reads the nodes, and fails
// before anything is deployed when the kubelets cannot be read.
func (t *Target) preflight(ctx context.Context) error {
	info, err := t.installer().detect(ctx)
	if err != nil {
		return err
	}
	t.meshInfo = info
	cand, err := t.installer().detectCandidate(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.candInfo = cand
	t.mu.Unlock()
	if t.nodes, err = t.readNodes(ctx); err != nil {
		return err
	}
	if t.agent != nil {
		if err := t.deployNodeAgent(ctx); err != nil {
			return err
		}
		if _, err := t.agent.fetch(ctx, t.nodes[0].Name); err != nil {
			return fmt.Errorf("kube target: node CPU agent on node %s: %w\n%s", t.nodes[0].Name, err, agentFallback(t.o.Words))
		}
	}
	if _, err := t.fetch(ctx, t.nodes[0].Name); err != nil {
		return fmt.Errorf("kube target: kubelet metrics of node %s: %w", t.nodes[0].Name, err)
	}
	return nil
}

// newArms names the arms' namespaces and, for the bring-your-own sidecar
// mesh, makes the meshed arms' wiring (permissive, so that a loadgen out
// of the mesh can call it): the candidate's is the reference's with the
// candidate's image and configuration.
func (t *Target) newArms() error {
	t.arms[testbed.Baseline] = &arm{name: testbed.Baseline, ns: t.ns("baseline")}
	meshed := t.gate().newMeshedArms(t.ns)
	for _, a := range meshed {
		t.arms[a.name] = a
	}
	for _, a := range t.arms {
		a.placement, a.loadgenNS = t.o.Placement, a.ns
		if t.o.Placement == OutOfMesh {
			a.loadgenNS = t.sharedNS()
		}
	}
	sp, ok := t.o.Mesh.(mesh.SidecarProxy)
	if !ok || !sp.Wired() {
		t.gate().wireCandidate(nil)
		return nil
	}
	var err error
	workers := t.o.Workloads.NginxWorkers
	if t.o.SidecarWorkers > 0 {
		workers = t.o.SidecarWorkers
	}
	if t.sidecar, err = newSidecar(sp, workers); err != nil {
		return err
	}
	t.sidecar.Permissive = true
	for _, a := range meshed {
		a.sidecar, a.proxy = true, t.sidecar
	}
	t.gate().wireCandidate(t.sidecar)
	return nil
}

// sharedNS is the out-of-mesh loadgen's namespace.
func (t *Target) sharedNS() string { return t.ns("loadgen") }

// createArmNamespaces creates the arms' namespaces (and the out-of-mesh
// loadgen's, when that is the default placement) and turns the mesh on
// in the meshed ones. The restricted standard is enforced in the meshed
// namespace only when the mesh adds nothing to it: injected sidecars come
// with privileged init containers (istio-init, linkerd-init without their
// CNI), and waypoints are the mesh's own pods. Otherwise it is warned
// about. The bring-your-own sidecar, as the target wires it, is restricted
// too.
func (t *Target) createArmNamespaces(ctx context.Context) error {
	m := t.o.Mesh
	_, injector := m.(mesh.Injector)
	roles := m.Roles()
	enforceMeshed := len(roles.Sidecars) == 0 && len(roles.Waypoints) == 0 && !injector || t.sidecar != nil && len(t.sidecar.Args) == 0
	nss := []*corev1.Namespace{manifests.Namespace(t.arms[testbed.Baseline].ns, string(testbed.Baseline), t.run, true)}
	for _, a := range t.meshedArms() {
		nss = append(nss, manifests.Namespace(a.ns, string(a.name), t.run, enforceMeshed))
	}
	if t.o.Placement == OutOfMesh {
		nss = append(nss, manifests.Namespace(t.sharedNS(), manifests.ArmShared, t.run, true))
	}
	for _, ns := range nss {
		if err := t.createNamespace(ctx, ns); err != nil {
			return err
		}
	}
	for _, a := range t.meshedArms() {
		if err := t.meshOf(a).Enable(ctx, t.c, a.ns); err != nil {
			return fmt.Errorf("kube target: %s: enable injection in %s: %w", m.Name(), a.ns, err)
		}
	}
	return nil
}

// deployArms renders and creates the workloads of the default placement
// and waits until they are ready.
func (t *Target) deployArms(ctx context.Context) error {
	shared := ""
	if t.o.Placement == OutOfMesh {
		shared = t.sharedNS()
	}
	d := t.deployer()
	sets, wants, err := d.render(append([]*arm{t.arms[testbed.Baseline]}, t.meshedArms()...), shared)
	if err != nil {
		return err
	}
	t.o.Logf("kube target: deploying %s in %s", strings.Join(componentsOf(wants), ", "), strings.Join(t.Namespaces(), ", "))
	if err := d.apply(ctx, sets); err != nil {
		return err
	}
	if err := d.waitReady(ctx, wants); err != nil {
		return err
	}
	d.deployMu.Lock()
	defer d.deployMu.Unlock()
	for _, w := range wants {
		if w.Component == manifests.Loadgen {
			d.replicas[w.Namespace] = w.Replicas
		}
	}
	return nil
}

func (t *Target) readNodes(ctx context.Context) ([]NodeInfo, error) {
	l, err := t.c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("kube target: listing nodes was forbidden: the identity in use needs RBAC list on nodes: %w", err)
		}
		return nil, fmt.Errorf("kube target: list nodes: %w", err)
	}
	if len(l.Items) == 0 {
		return nil, errors.New("kube target: the cluster has no nodes")
	}
	out := make([]NodeInfo, 0, len(l.Items))
	for _, n := range l.Items {
		out = append(out, nodeInfo(&n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// verify checks, with the mesh adapter, that the meshed arms' pods carry
// the mesh and that the baseline's (and the out-of-mesh loadgen's) do not.
func (t *Target) verify(ctx context.Context) error {
	var errs []error
	for _, a := range append([]*arm{t.arms[testbed.Baseline]}, t.meshedArms()...) {
		v, err := t.meshOf(a).Verify(ctx, t.c, a.ns, a.name.IsMeshed())
		t.mu.Lock()
		t.verified[a.name] = v
		t.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range v.Notes {
			t.o.Logf("kube target: %s arm: %s", a.name, n)
		}
	}
	t.mu.Lock()
	ref := t.verified[testbed.Reference]
	t.mu.Unlock()
	errs = append(errs, t.gate().revisionsApart(ref))
	if m := t.meshedArms()[0]; m.loadgenNS != m.ns {
		if _, err := t.o.Mesh.Verify(ctx, t.c, m.loadgenNS, false); err != nil {
			errs = append(errs, fmt.Errorf("out-of-mesh loadgen: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kube target: the arms are not what they claim: %w", err)
	}
	return nil
}

// Name implements testbed.Target: "kind" or "remote".
func (t *Target) Name() string { return t.o.Name }

// Environment implements testbed.Target.
func (t *Target) Environment() testbed.Environment { return t.env }

// Nodes describes every node of the cluster, as New found them.
func (t *Target) Nodes() []NodeInfo { return append([]NodeInfo(nil), t.nodes...) }

// Namespaces returns the namespaces of the run: baseline, meshed and, out
// of mesh, the loadgen's.
func (t *Target) Namespaces() []string {
	t.deployMu.Lock()
	defer t.deployMu.Unlock()
	return append([]string(nil), t.created...)
}

// Evidence is what the target verified about the arms.
type Evidence struct {
	// Verifications are the mesh adapter's checks of each arm's pods.
	Verifications map[testbed.Arm]mesh.Verification `json:"verifications"`
	// MTLS are the meshed arm's source → destination pairs as the mesh's
	// telemetry reported them after the last meshed run; nil when the mesh
	// has no such telemetry.
	MTLS []mesh.Edge `json:"mtls,omitempty"`
	// MTLSNote says why there is no MTLS table, when there is none.
	MTLSNote string `json:"mtlsNote,omitempty"`
}

// Evidence returns the latest verification of the arms, for the report's
// SRC / DST / SECURED table (mesh.PrintEdges).
func (t *Target) Evidence() Evidence {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := make(map[testbed.Arm]mesh.Verification, len(t.verified))
	for k, x := range t.verified {
		v[k] = x
	}
	return Evidence{Verifications: v, MTLS: append([]mesh.Edge(nil), t.lastMTLS...), MTLSNote: t.mtlsReason}
}

// Close deletes every namespace the target created and waits until they
// are gone, or ctx ends (without a deadline, Options.DeleteTimeout bounds
// it). It may be called again, after a failure too.
func (t *Target) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.mu.Unlock()
	t.helmMu.Lock()
	helm := t.helm
	t.helmMu.Unlock()
	nss := t.Namespaces()
	if len(nss) == 0 && (helm == nil || len(helm.Installed()) == 0 && len(helm.Namespaces()) == 0) {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.o.DeleteTimeout+t.o.InstallTimeout)
		defer cancel()
	}
	errs := kubewait.DeleteNamespaces(ctx, t.c, nss, t.o.Logf)
	// What the mesh adapter itself added for the run (a waypoint's Gateway
	// API CRDs, when it installed them) goes with the workloads.
	if cl, ok := t.o.Mesh.(mesh.Cleaner); ok {
		if err := cl.Cleanup(ctx, t.c); err != nil {
			errs = append(errs, fmt.Errorf("clean up after %s: %w", t.o.Mesh.Name(), err))
		}
	}
	// The mesh goes after the workloads it served, and only when the run
	// installed it.
	if helm != nil {
		start := t.now()
		if err := helm.Uninstall(ctx); err != nil {
			errs = append(errs, fmt.Errorf("uninstall %s: %w", t.o.Mesh.Name(), err))
		} else {
			t.o.Logf("kube target: %s uninstalled in %v", t.o.Mesh.Name(), t.now().Sub(start).Round(time.Second))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kube target: close: %w", err)
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return nil
}

func componentsOf(ws []want) []string {
	seen := map[string]int{}
	var order []string
	for _, w := range ws {
		if _, ok := seen[string(w.Component)]; !ok {
			order = append(order, string(w.Component))
		}
		seen[string(w.Component)] = max(seen[string(w.Component)], w.Replicas)
	}
	for i, c := range order {
		if seen[c] > 1 {
			order[i] = strconv.Itoa(seen[c]) + "×" + c
		}
	}
	return order
}
