package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// Run implements testbed.Target: a warm-up and a measured window of arm over
// path, driven by the arm's loadgen replicas where the workload places
// them (deployed or scaled up on first use), with the spec's fault acted
// out in the window; CPU and memory per role from the kubelets over the
// window; the path proved by the nginx counters and the mesh's telemetry;
// the arms verified again.
func (t *Target) Run(ctx context.Context, s testbed.Spec) (*testbed.Run, error) {
	rs, err := t.prepare(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	fail := func(err error) (*testbed.Run, error) {
		return nil, fmt.Errorf("kube target: %s %s: %w", s.Arm, rs.w.Path, err)
	}
	if err := t.connect(ctx, rs); err != nil {
		return fail(err)
	}
	if err := t.warm(ctx, rs); err != nil {
		return fail(err)
	}
	if err := t.measure(ctx, rs); err != nil {
		return fail(err)
	}
	run, err := t.judge(ctx, rs)
	if err != nil {
		return fail(err)
	}
	t.copyLoadgenLogs(ctx, rs, run, maxLoadgenLog)
	if run.ControlPlane, err = t.controlPlane(ctx, rs); err != nil {
		if ctx.Err() != nil {
			return fail(err)
		}
		run.Invalidate(validity.ControlPlaneFailed, "control plane: %v", err)
	}
	return run, nil
}

// runState is one run as it goes through Run's steps.
type runState struct {
	s     testbed.Spec
	w     testbed.Workload
	o     load.Options
	a     *arm   // as the run's placement sees it
	dial  string // the scheme the loadgen dials a gRPC backend with (Target.dialScheme); "" for HTTP
	fault *faultRun
	hc    *http.Client
	// closers close the tunnels, last opened first.
	closers []func()

	lgPods    []corev1.Pod
	shardOpts []load.Options
	lgs       []*loadgen
	apps      map[manifests.Component][]*tunnel

	countStart, loadedFrom, loadedTo time.Time
	countWindow                      time.Duration
	c0, c1                           map[manifests.Component]int64
	peers0                           []mesh.Edge
	plain0, plain1                   map[string]int64
	xfrm0, xfrm1                     map[string]XFRM
	frs                              []*fortioResult
	// failed is how many requests of the warm-up and the window failed.
	failed int64
	// resources reads the kubelets over the window, and measured is what
	// it read.
	resources testbed.Measurement
	measured  testbed.Measured
}

// unmeasured is the shards' options for load outside the measured window
// (the warm-up, and the wait for the kubelets): no timeline.
func (rs *runState) unmeasured() []load.Options {
	opts := make([]load.Options, len(rs.shardOpts))
	for i, o := range rs.shardOpts {
		opts[i] = o
		opts[i].Timeline = 0
	}
	return opts
}

// roles lists the cluster's pods and classifies their containers for
// this run (accountant.roleOf), the run's idle loadgen replicas included.
func (rs *runState) roles(ctx context.Context, t *Target) (kubelet.RoleOf, []corev1.Pod, error) {
	ac := t.accountant()
	pods, err := ac.allPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	return withIdleLoadgens(ac.roleOf(rs.a, pods), pods, rs.lgPods), pods, nil
}

func (rs *runState) close() {
	for i := len(rs.closers) - 1; i >= 0; i-- {
		rs.closers[i]()
	}
	if rs.hc != nil {
		rs.hc.CloseIdleConnections()
	}
}

// prepare checks the spec, deploys the loadgens its placement needs,
// fills in the load's options and plans the fault.
func (t *Target) prepare(ctx context.Context, s testbed.Spec) (*runState, error) {
	w := s.Workload
	if err := t.Supports(w, s.Fault); err != nil {
		return nil, fmt.Errorf("kube target: %w", err)
	}
	_ = w.Normalize(t.workload()) // checked by Supports
	base, ok := t.arms[s.Arm]
	if !ok {
		return nil, fmt.Errorf("kube target: unknown arm %q", s.Arm)
	}
	if s.Barrier != nil && Placement(w.Placement) == OutOfMesh {
		return nil, fmt.Errorf("kube target: %s %s: a duet runs each arm with its own loadgen, and out of mesh the arms share one (%s); run this scenario sequentially",
			s.Arm, w.Path, t.sharedNS())
	}
	if err := t.ensureLoadgens(ctx, w); err != nil {
		return nil, err
	}
	rs := &runState{s: s, w: w, o: testbed.LoadOptions(w, s.Window), a: t.runArm(base, w)}
	rs.o.URL = rs.a.url(w.Path, rs.o.Protocol)
	if w.Protocol == load.GRPC {
		rs.dial = t.dialScheme(rs.a)
		rs.o.URL, rs.o.RequestSize = rs.a.grpcURL(rs.dial), grpcPayload(w)
	}
	fr, err := t.planFault(ctx, rs.a, s.Fault)
	if err != nil {
		return nil, fmt.Errorf("kube target: %s %s: %w", s.Arm, w.Path, err)
	}
	if fr != nil {
		rs.fault = fr
		rs.o.ExpectErrors = true
		rs.o.Timeline = cmp.Or(rs.o.Timeline, faultTimeline)
	}
	if err := rs.o.Normalize(); err != nil {
		return nil, fmt.Errorf("kube target: load options: %w", err)
	}
	if err := supported(rs.o); err != nil {
		return nil, fmt.Errorf("kube target: %w", err)
	}
	return rs, nil
}

// connect picks the loadgen pods, splits the load over them, and opens
// the tunnels to them and to the apps' counters. One client per run, with
// keep-alive: the measured runs go over connections (and port-forward
// streams) opened before the window, so that the shards start together.
func (t *Target) connect(ctx context.Context, rs *runState) error {
	var err error
	if rs.lgPods, err = t.loadgenPods(ctx, rs.a, rs.w.Loadgens); err != nil {
		return err
	}
	rs.shardOpts = load.Split(rs.o, len(rs.lgPods))
	rs.lgPods = rs.lgPods[:len(rs.shardOpts)]
	for i := range rs.shardOpts {
		rs.shardOpts[i].Labels = strings.TrimSpace(rs.shardOpts[i].Labels + " " + rs.lgPods[i].Namespace + "/" + rs.lgPods[i].Name)
	}
	rs.hc = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
	lgs, closeLG, err := t.access().loadgens(ctx, rs.hc, rs.a.loadgenNS, rs.lgPods)
	if err != nil {
		return err
	}
	rs.lgs, rs.closers = lgs, append(rs.closers, closeLG)
	if rs.w.Protocol == load.GRPC {
		return nil // the gRPC backend has no request counters (grpcEdge)
	}
	apps, closeApps, err := t.access().appTunnels(ctx, rs.a)
	if err != nil {
		return err
	}
	rs.apps, rs.closers = apps, append(rs.closers, closeApps)
	return nil
}

// warm reads the counters before the run, runs the warm-up, and reads
// the nodes' counters at the start of the window: under load when they
// are aligned to the kubelets' refreshes.
func (t *Target) warm(ctx context.Context, rs *runState) error {
	var err error
	rs.countStart = t.now()
	if rs.c0, err = t.access().counters(ctx, rs.apps); err != nil {
		return err
	}
	if rs.a.sidecar {
		// The verified peers (and plain requests) so far: the run's are the
		// difference.
		if rs.peers0, err = t.peerCounts(ctx, rs.a); err != nil {
			return err
		}
		if rs.plain0, err = t.access().plainCounts(ctx, rs.a); err != nil {
			return err
		}
	}
	// In a duet, both arms' warm-ups start together, then their accounting
	// and their windows (testbed.Barrier).
	if err := rs.s.Sync(ctx, testbed.StageWarmup); err != nil {
		return err
	}
	rs.loadedFrom = t.now()
	m := &kubeletMeasurement{t: t, rs: rs}
	rs.resources = m
	if t.aligner().aligned() {
		err = m.warmUntilRefreshed(ctx)
	} else {
		err = t.warmUp(ctx, rs)
	}
	if err != nil {
		return err
	}
	if err := prime(ctx, rs.lgs); err != nil {
		return err
	}
	if err := rs.s.Sync(ctx, testbed.StageAccounting); err != nil {
		return err
	}
	if err = rs.resources.Start(ctx); err != nil {
		return err
	}
	if rs.xfrm0, err = t.readXFRM(ctx); err != nil {
		return err
	}
	if rs.o.Warmup <= 0 && !t.aligner().aligned() {
		rs.loadedFrom = t.now()
	}
	return nil
}

// warmUp runs the warm-up's load, outside the measured window.
func (t *Target) warmUp(ctx context.Context, rs *runState) error {
	if rs.o.Warmup <= 0 {
		return nil
	}
	frs, err := runShards(ctx, rs.lgs, rs.unmeasured(), rs.o.Warmup)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	rs.failed += failedRequests(frs, rs.o.Protocol)
	return nil
}

// measure runs the window with the fault on time, keeps the load on
// until the kubelets refreshed when they are aligned to them
// (closeUnderLoad), reads them otherwise, waits for what the fault killed
// to be back, and reads the apps' counters after the run.
func (t *Target) measure(ctx context.Context, rs *runState) error {
	if err := rs.s.Sync(ctx, testbed.StageWindow); err != nil {
		return err
	}
	rs.fault.start(ctx, t.now, t.faults().watchRestart)
	frs, err := runShards(ctx, rs.lgs, rs.shardOpts, rs.o.Duration)
	rs.fault.wait()
	if err != nil {
		return err
	}
	rs.frs, rs.loadedTo = frs, t.now()
	rs.failed += failedRequests(frs, rs.o.Protocol)
	if m, ok := rs.resources.(*kubeletMeasurement); ok {
		loaded, err := m.closeUnderLoad(ctx, rs.loadedTo)
		if err != nil {
			return err
		}
		if loaded {
			rs.loadedTo = t.now()
		}
	}
	if rs.xfrm1, err = t.readXFRM(ctx); err != nil {
		return err
	}
	if rs.measured, err = rs.resources.Stop(ctx); err != nil {
		return err
	}
	awaitRestart(rs.fault)
	if rs.c1, err = t.access().counters(ctx, rs.apps); err != nil {
		return err
	}
	rs.countWindow = t.now().Sub(rs.countStart)
	return nil
}

// judge makes the run's record: the shards' load merged, the resources
// over the window, the path proof, the fault's outcome, and the arm
// verified again.
func (t *Target) judge(ctx context.Context, rs *runState) (*testbed.Run, error) {
	shards := make([]*load.Result, len(rs.frs))
	names := make([]string, len(rs.frs))
	for i, fr := range rs.frs {
		shards[i] = shardResult(rs.shardOpts[i], fr)
		names[i] = rs.lgs[i].pod
	}
	res, err := load.Merge(rs.o, shards, names)
	if err != nil {
		return nil, err
	}
	run := &testbed.Run{Arm: rs.s.Arm, Path: rs.w.Path, Workload: rs.w, Load: res, Invalid: slices.Clone(res.Invalid), Dial: rs.dial}
	if len(shards) > 1 {
		run.Shards = shards
	}
	run.Measured(rs.measured)
	if err := t.prove(ctx, rs, run); err != nil {
		return nil, err
	}
	t.judgeFault(run, rs.fault)
	if err := t.verifyArm(ctx, rs.a); err != nil {
		run.Invalidate(validity.UnverifiedArm, "%v", err)
	}
	run.Encryption = encryptionOver(rs.xfrm0, rs.xfrm1)
	judgeEncryption(run, mesh.KernelEncryption(t.o.Mesh, t.meshInfo))
	testbed.Judge(run, t.accountant().loadgenBudget(rs.lgPods))
	return run, nil
}

// prove puts the path proof on run: the edges from the nginx counters and
// the mesh's telemetry (or the sidecars' logs; for grpc, the loadgen's
// count: grpcEdge), checked against the path.
func (t *Target) prove(ctx context.Context, rs *runState, run *testbed.Run) error {
	lost, why, err := t.edges(ctx, rs, run)
	if err != nil {
		return err
	}
	checkArm := rs.s.Arm
	if t.o.Mesh.Name() == "none" && rs.s.Arm != testbed.Baseline {
		checkArm = testbed.Baseline // an A/A run: both arms must be unmeshed
		run.Warn(validity.SecondBaseline, "mesh none: the meshed arm is a second baseline (an A/A run)")
	}
	if why != "" && checkArm.IsMeshed() {
		run.Invalidate(validity.MeshNotOn, "mTLS not verified: %s", why)
	}
	outOfMesh := rs.a.placement == OutOfMesh
	if plain := mesh.PlainByDesign(t.o.Mesh, t.meshInfo); plain != "" && rs.s.Arm != testbed.Baseline {
		run.Warn(validity.PlainByDesign, "%s", plain)
		run.Invalid = append(run.Invalid, testbed.CheckEdges(checkArm, rs.w.Path, run.Edges, run.Load.Requests-run.Load.Errors-lost, testbed.Hops(rs.w.Path)...)...)
	} else {
		run.Invalid = append(run.Invalid, checkEdges(checkArm, rs.w.Path, run.Edges, run.Load.Requests-run.Load.Errors-lost, outOfMesh)...)
	}
	if note := placementNote(rs.a, rs.w.Path); note != "" {
		run.Warn(validity.LoadgenOutOfMesh, "%s", note)
	}
	return nil
}

// edges puts the edges of rs on run, and returns how many requests a
// killed sidecar's lost logs may leave unrecorded, and why there is no
// mTLS evidence, when there is none.
func (t *Target) edges(ctx context.Context, rs *runState, run *testbed.Run) (int64, string, error) {
	if rs.w.Protocol == load.GRPC {
		mtls, why := t.mtls(ctx, rs.a)
		run.Edges = grpcEdge(rs.a, run.Load.Codes[http.StatusOK], mtls)
		return 0, why, nil
	}
	cnt := counted{Delta: map[manifests.Component]int64{}, Pods: map[manifests.Component]int{}, Allowance: map[manifests.Component]int64{}}
	for comp, ts := range rs.apps {
		cnt.Delta[comp] = rs.c1[comp] - rs.c0[comp]
		cnt.Pods[comp] = len(ts)
		cnt.Allowance[comp] = probeAllowance(len(ts), rs.countWindow)
	}
	if !rs.a.sidecar {
		mtls, why := t.mtls(ctx, rs.a)
		run.Edges = pathEdges(rs.a, rs.w.Path, cnt, mtls)
		return 0, why, nil
	}
	// What a killed (or stopped) sidecar had buffered of its logs is lost
	// with it.
	lost := rs.fault.lostLog(rs.o.Concurrency)
	// The sidecars' logs are buffered for up to a second.
	if d := time.Until(rs.loadedTo.Add(1500 * time.Millisecond)); d > 0 && t.o.CounterWait >= 0 {
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(d):
		}
	}
	var err error
	if rs.plain1, err = t.access().plainCounts(ctx, rs.a); err != nil {
		return 0, "", err
	}
	mtls, why := t.mtls(ctx, rs.a)
	if lost > 0 {
		cnt.Allowance[rs.fault.component()] += lost
		run.Warn(validity.LostLogs, "%s lost up to %d lines of its logs of verified peers and plain requests when it was %s: up to that many of %s's requests are allowed without its sidecar's record",
			rs.fault.who(), lost, rs.fault.f.Action.Past(), rs.fault.component())
	}
	run.Edges = sidecarEdges(rs.w.Path, cnt, rs.peers0, mtls, plainDelta(rs.plain0, rs.plain1), rs.a.placement == OutOfMesh)
	return lost, why, nil
}

// loadgens opens a tunnel to each loadgen pod.
func (pa podAccess) loadgens(ctx context.Context, hc *http.Client, ns string, pods []corev1.Pod) ([]*loadgen, func(), error) {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	tns, err := openTunnels(ctx, pa.fwd, ns, names, manifests.Port)
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
func (pa podAccess) appTunnels(ctx context.Context, a *arm) (map[manifests.Component][]*tunnel, func(), error) {
	out := map[manifests.Component][]*tunnel{}
	closeAll := func() {
		for _, ts := range out {
			for _, tn := range ts {
				tn.Close()
			}
		}
	}
	for _, c := range []manifests.Component{manifests.Backend, manifests.Frontend} {
		pods, err := pa.pods.ready(ctx, a.ns, c)
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
		tns, err := openTunnels(ctx, pa.fwd, a.ns, names, manifests.Port)
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

// mtls reads a meshed arm's mTLS evidence from the mesh, and keeps it
// for Evidence. It returns why there is none, when there is none.
func (t *Target) mtls(ctx context.Context, a *arm) ([]mesh.Edge, string) {
	if !a.name.IsMeshed() {
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
	v, err := t.meshOf(a).Verify(ctx, t.c, a.ns, a.name.IsMeshed())
	t.mu.Lock()
	t.verified[a.name] = v
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("arm not verified: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}
