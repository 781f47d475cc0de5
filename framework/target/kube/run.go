package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target"
)

// Run implements target.Target: a warm-up and a measured window of arm over
// path, driven by the arm's loadgen replicas; CPU and memory per role from
// the kubelets over the window; the path proved by the nginx counters and
// the mesh's telemetry; the arms verified again.
func (t *Target) Run(ctx context.Context, s target.Spec) (*target.Run, error) {
	armName, w, o := s.Arm, s.Workload, s.Load
	if err := t.Supports(w, s.Fault); err != nil {
		return nil, fmt.Errorf("kube target: %w", err)
	}
	_ = w.Normalize(t.workload()) // checked by Supports
	p := w.Path
	a, ok := t.arms[armName]
	if !ok {
		return nil, fmt.Errorf("kube target: unknown arm %q", armName)
	}
	o.Protocol, o.RequestSize = w.Protocol, w.RequestSize
	o.URL = a.url(p, o.Protocol)
	if err := o.Normalize(); err != nil {
		return nil, fmt.Errorf("kube target: load options: %w", err)
	}
	if err := supported(o); err != nil {
		return nil, fmt.Errorf("kube target: %w", err)
	}
	fail := func(err error) (*target.Run, error) {
		return nil, fmt.Errorf("kube target: %s %s: %w", armName, p, err)
	}

	lgPods, err := t.readyPods(ctx, a.loadgenNS, manifests.Loadgen)
	if err != nil {
		return fail(err)
	}
	if len(lgPods) < t.o.Loadgens {
		return fail(fmt.Errorf("%d of %d loadgen pods are ready in %s", len(lgPods), t.o.Loadgens, a.loadgenNS))
	}
	shardOpts := load.Split(o, len(lgPods))
	lgPods = lgPods[:len(shardOpts)]
	for i := range shardOpts {
		shardOpts[i].Labels = strings.TrimSpace(shardOpts[i].Labels + " " + lgPods[i].Namespace + "/" + lgPods[i].Name)
	}
	// One client per run, with keep-alive: the measured runs go over
	// connections (and port-forward streams) opened before the window, so
	// that the shards start together.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
	defer hc.CloseIdleConnections()
	lgs, closeLG, err := t.loadgens(ctx, hc, a.loadgenNS, lgPods)
	if err != nil {
		return fail(err)
	}
	defer closeLG()
	apps, closeApps, err := t.appTunnels(ctx, a)
	if err != nil {
		return fail(err)
	}
	defer closeApps()

	countStart := t.now()
	c0, err := t.counters(ctx, apps)
	if err != nil {
		return fail(err)
	}
	var peers0 []mesh.Edge
	if a.sidecar {
		// The verified peers so far: the run's are the difference.
		if peers0, err = t.peerCounts(ctx, a); err != nil {
			return fail(err)
		}
	}
	loadedFrom := t.now()
	if o.Warmup > 0 {
		if _, err := runShards(ctx, lgs, shardOpts, o.Warmup); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	if err := prime(ctx, lgs); err != nil {
		return fail(err)
	}
	before, err := t.snapshots(ctx)
	if err != nil {
		return fail(err)
	}
	xfrm0, err := t.readXFRM(ctx)
	if err != nil {
		return fail(err)
	}
	if o.Warmup <= 0 {
		loadedFrom = t.now()
	}
	frs, err := runShards(ctx, lgs, shardOpts, o.Duration)
	if err != nil {
		return fail(err)
	}
	loadedTo := t.now()
	xfrm1, err := t.readXFRM(ctx)
	if err != nil {
		return fail(err)
	}
	pods, err := t.allPods(ctx)
	if err != nil {
		return fail(err)
	}
	roleOf := t.roleOf(a, pods)
	after, err := t.snapshotsAfter(ctx, before, func(k kubelet.ContainerKey) bool {
		return roleOf(k.Namespace, k.Pod, k.Container) != kubelet.RoleOther
	})
	if err != nil {
		return fail(err)
	}
	c1, err := t.counters(ctx, apps)
	if err != nil {
		return fail(err)
	}
	countWindow := t.now().Sub(countStart)

	// The load.
	shards := make([]*load.Result, len(frs))
	names := make([]string, len(frs))
	for i, fr := range frs {
		shards[i] = shardResult(shardOpts[i], fr)
		names[i] = lgs[i].pod
	}
	res, err := load.Merge(o, shards, names)
	if err != nil {
		return fail(err)
	}
	run := &target.Run{Arm: armName, Path: p, Workload: w, Load: res, Invalid: append([]string(nil), res.Invalid...)}
	if len(shards) > 1 {
		run.Shards = shards
	}

	// The resources.
	wr := t.resourceWindow(roleOf, before, after, loadedFrom, loadedTo)
	run.Resources = wr.Window
	run.Invalid = append(run.Invalid, wr.Invalid...)
	run.Warnings = append(run.Warnings, wr.Warnings...)

	// The path and the arm.
	cnt := counted{Delta: map[manifests.Component]int64{}, Pods: map[manifests.Component]int{}, Allowance: map[manifests.Component]int64{}}
	for comp, ts := range apps {
		cnt.Delta[comp] = c1[comp] - c0[comp]
		cnt.Pods[comp] = len(ts)
		cnt.Allowance[comp] = probeAllowance(len(ts), countWindow)
	}
	var mtls []mesh.Edge
	why := ""
	if a.sidecar {
		// The sidecars' logs are buffered for up to a second.
		if d := time.Until(loadedTo.Add(1500 * time.Millisecond)); d > 0 && t.o.CounterWait >= 0 {
			select {
			case <-ctx.Done():
				return fail(ctx.Err())
			case <-time.After(d):
			}
		}
		mtls, why = t.mtls(ctx, a)
		run.Edges = sidecarEdges(p, cnt, peers0, mtls)
	} else {
		mtls, why = t.mtls(ctx, a)
		run.Edges = pathEdges(a, p, cnt, mtls)
	}
	checkArm := armName
	if t.o.Mesh.Name() == "none" && armName != target.Baseline {
		checkArm = target.Baseline // an A/A run: both arms must be unmeshed
		run.Warnings = append(run.Warnings, "mesh none: the meshed arm is a second baseline (an A/A run)")
	}
	outOfMesh := t.o.Placement == OutOfMesh
	if why != "" && checkArm == target.Meshed {
		run.Invalid = append(run.Invalid, "mTLS not verified: "+why)
	}
	if why := mesh.PlainByDesign(t.o.Mesh, t.meshInfo); why != "" && armName != target.Baseline {
		run.Warnings = append(run.Warnings, why)
		run.Invalid = append(run.Invalid, target.CheckEdges(checkArm, p, run.Edges, res.Requests, target.Hops(p)...)...)
	} else {
		run.Invalid = append(run.Invalid, checkEdges(checkArm, p, run.Edges, res.Requests, outOfMesh)...)
	}
	if outOfMesh && armName == target.Meshed {
		run.Warnings = append(run.Warnings, "loadgen out of mesh: the loadgen → "+target.Hops(p)[0].Dst+" hop is plain text by design")
	}
	if err := t.verifyArm(ctx, a); err != nil {
		run.Invalid = append(run.Invalid, err.Error())
	}
	run.Encryption = encryptionOver(xfrm0, xfrm1)
	judgeEncryption(run, mesh.KernelEncryption(t.o.Mesh, t.meshInfo))
	target.Judge(run, t.loadgenBudget(lgPods))
	return run, nil
}

// loadgens opens a tunnel to each loadgen pod.
func (t *Target) loadgens(ctx context.Context, hc *http.Client, ns string, pods []corev1.Pod) ([]*loadgen, func(), error) {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	tns, err := openTunnels(ctx, t.fwd, ns, names, manifests.Port)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*loadgen, len(pods))
	for i, p := range pods {
		out[i] = &loadgen{pod: p.Name, node: p.Spec.NodeName, base: "http://" + tns[i].Addr, hc: hc}
	}
	return out, func() {
		for _, tn := range tns {
			tn.Close()
		}
	}, nil
}

// prime opens (or re-uses) each loadgen's connection with a health check,
// all at once, so that the measured runs do not wait for a new stream.
func prime(ctx context.Context, lgs []*loadgen) error {
	errs := make([]error, len(lgs))
	var wg sync.WaitGroup
	for i, lg := range lgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lg.health(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// appTunnels opens a tunnel to every backend and frontend pod of a, for
// their request counters.
func (t *Target) appTunnels(ctx context.Context, a *arm) (map[manifests.Component][]*tunnel, func(), error) {
	out := map[manifests.Component][]*tunnel{}
	closeAll := func() {
		for _, ts := range out {
			for _, tn := range ts {
				tn.Close()
			}
		}
	}
	for _, c := range []manifests.Component{manifests.Backend, manifests.Frontend} {
		pods, err := t.readyPods(ctx, a.ns, c)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		if len(pods) == 0 {
			closeAll()
			return nil, nil, fmt.Errorf("no ready %s pod in %s", c, a.ns)
		}
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Name
		}
		tns, err := openTunnels(ctx, t.fwd, a.ns, names, manifests.Port)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		out[c] = tns
	}
	return out, closeAll, nil
}

// runShards runs each loadgen's share for d, all at once, and returns
// their results in order. The first failure stops the others.
func runShards(ctx context.Context, lgs []*loadgen, opts []load.Options, d time.Duration) ([]*fortioResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]*fortioResult, len(lgs))
	errs := make([]error, len(lgs))
	var wg sync.WaitGroup
	for i, lg := range lgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = lg.run(ctx, opts[i], d)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// Report the first cause, not the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// mtls reads the meshed arm's mTLS evidence from the mesh, and keeps it
// for Evidence. It returns why there is none, when there is none.
func (t *Target) mtls(ctx context.Context, a *arm) ([]mesh.Edge, string) {
	if a.name != target.Meshed {
		return nil, ""
	}
	var edges []mesh.Edge
	why := ""
	if mc, ok := t.o.Mesh.(mesh.MTLSChecker); !ok {
		why = fmt.Sprintf("the %s adapter has no mTLS telemetry", t.o.Mesh.Name())
	} else {
		var err error
		if edges, err = mc.MTLS(ctx, t.c, a.ns); err != nil {
			why = err.Error()
		}
	}
	t.mu.Lock()
	t.lastMTLS, t.mtlsReason = edges, why
	t.mu.Unlock()
	return edges, why
}

// verifyArm repeats the mesh adapter's check of one arm's pods.
func (t *Target) verifyArm(ctx context.Context, a *arm) error {
	v, err := t.o.Mesh.Verify(ctx, t.c, a.ns, a.name == target.Meshed)
	t.mu.Lock()
	t.verified[a.name] = v
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("arm not verified: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}
