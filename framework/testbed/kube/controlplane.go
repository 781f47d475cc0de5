package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// ControlPlaneOptions asks every meshed run for its mesh's control plane,
// measured after the window with the load stopped (testbed.ControlPlane):
// config propagation, as ClusterLoader2 and Istio's pilot-load measure it,
// and the control plane's CPU and RSS per connected proxy. Only a mesh
// that can change its routing and count its proxies (mesh.Propagator:
// istio-proxyless) measures it; New refuses the others.
type ControlPlaneOptions struct {
	// Changes is how many routing changes each phase makes, one after
	// another, each timed until every loadgen's xDS client routes by it.
	// 0 measures nothing.
	Changes int
	// ExtraPods, when above 0, adds a second phase with that many idle
	// injected pods (the backend's pod, unselected by its Service) beside
	// the run's own: the second pod count.
	ExtraPods int
	// ChangeTimeout bounds each change's wait. Default 30s.
	ChangeTimeout time.Duration
}

// idleProxies is the component of the second phase's idle pods.
const idleProxies manifests.Component = "idle-proxies"

// controlPlane measures the control plane for a meshed run that asked for
// it (ControlPlaneOptions), phase by phase; nil for any other run.
func (t *Target) controlPlane(ctx context.Context, rs *runState) (*testbed.ControlPlane, error) {
	o := t.o.ControlPlane
	pr, ok := t.meshOf(rs.a).(mesh.Propagator)
	if o.Changes <= 0 || !rs.s.Arm.IsMeshed() || !ok {
		return nil, nil
	}
	cp := &testbed.ControlPlane{Change: pr.ProbeChange()}
	counts := []int{0}
	if o.ExtraPods > 0 {
		counts = append(counts, o.ExtraPods)
	}
	for _, extra := range counts {
		base := 0 // the proxies the idle pods add to: the first phase's
		if len(cp.Phases) > 0 {
			base = cp.Phases[0].Proxies
		}
		ph, err := t.controlPlanePhase(ctx, rs, pr, extra, base)
		if err != nil {
			return cp, fmt.Errorf("control plane with %d extra pods: %w", extra, err)
		}
		cp.Phases = append(cp.Phases, ph)
		t.o.Logf("kube target: %s control plane, %d proxies: propagation %s (probe round trip %.1f ms), %.2f mcores and %.2f MiB per proxy",
			rs.s.Arm, ph.Proxies, propagationSummary(ph), ph.ProbeRTTMs, perProxy(ph.MilliCoresPerProxy), perProxy(ph.RSSMiBPerProxy))
	}
	return cp, nil
}

func perProxy(f func() (float64, bool)) float64 { v, _ := f(); return v }

// propagationSummary is "p50 12.3 ms, p99 45.6 ms of 10 changes".
func propagationSummary(ph testbed.ControlPlanePhase) string {
	p50, _ := ph.PropagationQuantile(0.5)
	p99, _ := ph.PropagationQuantile(0.99)
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms of %d changes", p50, p99, len(ph.PropagationMs))
}

// controlPlanePhase adds extra idle pods (removed again at its end) and
// waits until the control plane serves them beside the base proxies of
// the first phase, then times the changes with the control plane's
// counters read around them.
func (t *Target) controlPlanePhase(ctx context.Context, rs *runState, pr mesh.Propagator, extra, base int) (ph testbed.ControlPlanePhase, err error) {
	ph.ExtraPods = extra
	if extra > 0 {
		defer func() { err = errors.Join(err, t.removeIdleProxies(ctx, rs.a)) }()
		if err := t.addIdleProxies(ctx, rs.a, pr, extra); err != nil {
			return ph, err
		}
		if err := t.awaitProxies(ctx, pr, base+extra); err != nil {
			return ph, err
		}
	}
	host := fmt.Sprintf("%s.%s.svc.cluster.local", manifests.Backend, rs.a.ns)
	target := rs.a.grpcURL(rs.dial)
	if err := pr.SetProbeFault(ctx, t.c, rs.a.ns, host, false); err != nil {
		return ph, err
	}
	if ph.ProbeRTTMs, err = t.armProbes(ctx, rs.lgs, target); err != nil {
		return ph, err
	}
	roleOf, before, err := t.controlPlaneRead(ctx, rs)
	if err != nil {
		return ph, err
	}
	for i := range t.o.ControlPlane.Changes {
		ms, err := t.propagate(ctx, rs, pr, host, target, i%2 == 0)
		if err != nil {
			return ph, fmt.Errorf("change %d of %d: %w", i+1, t.o.ControlPlane.Changes, err)
		}
		ph.PropagationMs = append(ph.PropagationMs, ms)
	}
	after, err := t.aligner().snapshots(ctx)
	if err != nil {
		return ph, err
	}
	ph.CPUSeconds, ph.Seconds, ph.RSSBytes = controlPlaneUsage(roleOf, before, after)
	if ph.Proxies, err = pr.ConnectedProxies(ctx, t.c); err != nil {
		return ph, err
	}
	return ph, nil
}

// awaitProxies waits, up to a minute, until the control plane serves at
// least want proxies: a pod is ready when its agent has its certificate,
// but its app's xDS stream may connect after.
func (t *Target) awaitProxies(ctx context.Context, pr mesh.Propagator, want int) error {
	n := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		n, err = pr.ConnectedProxies(ctx, t.c)
		return n >= want, err
	})
	if err != nil {
		return fmt.Errorf("the control plane served %d proxies, not the %d expected with the idle pods: %w", n, want, err)
	}
	return nil
}

// controlPlaneRead classifies the cluster's containers (the arm's control
// plane) and reads every node's counters.
func (t *Target) controlPlaneRead(ctx context.Context, rs *runState) (kubelet.RoleOf, map[string]kubelet.Snapshot, error) {
	roleOf, _, err := rs.roles(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	before, err := t.aligner().snapshots(ctx)
	return roleOf, before, err
}

// propagate makes one change (the probe's fault on or off) and returns
// the milliseconds from the start of its apply call until the last
// loadgen's probe saw it.
func (t *Target) propagate(ctx context.Context, rs *runState, pr mesh.Propagator, host, target string, on bool) (float64, error) {
	want := load.RouteOK
	if on {
		want = load.RouteAbort
	}
	start := t.now()
	if err := pr.SetProbeFault(ctx, t.c, rs.a.ns, host, on); err != nil {
		return 0, err
	}
	errs := make([]error, len(rs.lgs))
	var wg sync.WaitGroup
	for i, lg := range rs.lgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = lg.routeProbe(ctx, target, want, t.o.ControlPlane.ChangeTimeout)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(t.now().Sub(start)) / float64(time.Millisecond), nil
}

// armProbes makes each loadgen's probe connection (its xDS client finds
// the route: up to a minute) and returns the longest round trip of a
// probe that then matched at once, in ms: the resolution of a change's
// timing.
func (t *Target) armProbes(ctx context.Context, lgs []*loadgen, target string) (float64, error) {
	rtt := 0.0
	for _, lg := range lgs {
		if _, err := lg.routeProbe(ctx, target, load.RouteOK, time.Minute); err != nil {
			return 0, err
		}
		start := t.now()
		if _, err := lg.routeProbe(ctx, target, load.RouteOK, t.o.ControlPlane.ChangeTimeout); err != nil {
			return 0, err
		}
		rtt = max(rtt, float64(t.now().Sub(start))/float64(time.Millisecond))
	}
	return rtt, nil
}

// routeProbe asks the loadgen to probe target until its route is in state
// want (load.RouteProbePath).
func (lg *loadgen) routeProbe(ctx context.Context, target, want string, timeout time.Duration) (load.RouteProbeResult, error) {
	var res load.RouteProbeResult
	u := lg.base + load.RouteProbePath + "?" + load.RouteProbeQuery(target, want, timeout, 0).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return res, err
	}
	resp, err := lg.hc.Do(req)
	if err != nil {
		return res, fmt.Errorf("loadgen %s: route probe: %w", lg.pod, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return res, fmt.Errorf("loadgen %s: route probe: %w", lg.pod, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusGatewayTimeout {
		return res, fmt.Errorf("loadgen %s: route probe answered %s: %.300s (an mbloadgen image older than the route probe, on a 404?)", lg.pod, resp.Status, body)
	}
	if jerr := json.Unmarshal(body, &res); jerr != nil {
		return res, fmt.Errorf("loadgen %s: route probe answered %s: %.200s (an mbloadgen image older than the route probe?)", lg.pod, resp.Status, body)
	}
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("loadgen %s: %s did not route as %q within %v (%d probes; last state %q: %s)",
			lg.pod, target, want, timeout, res.Probes, res.State, res.LastError)
	}
	return res, nil
}

// controlPlaneUsage sums the control plane's containers between two
// reads of the nodes: the core-seconds they used, the longest span of
// their counters in seconds, and their RSS at the second read (the
// working set where a read has no RSS).
func controlPlaneUsage(roleOf kubelet.RoleOf, before, after map[string]kubelet.Snapshot) (cpu, span float64, rss int64) {
	for node, a := range after {
		b := before[node]
		for k, c1 := range a.Containers {
			if roleOf(k.Namespace, k.Pod, k.Container) != measure.RoleControlPlane {
				continue
			}
			if c1.RSSBytes != nil {
				rss += int64(c1.RSSBytes.Value)
			} else {
				rss += int64(c1.WorkingSetBytes.Value)
			}
			c0, ok := b.Containers[k]
			if !ok || c0.ID != c1.ID {
				continue
			}
			cpu += c1.CPUSeconds.Value - c0.CPUSeconds.Value
			span = max(span, c1.CPUSeconds.Time.Sub(c0.CPUSeconds.Time).Seconds())
		}
	}
	return cpu, span, rss
}

// addIdleProxies deploys n idle pods in a's namespace from its backend's
// pod template (injected as the backend is, made an idle proxy's by the
// mesh), labelled so that no Service selects them, and waits until they
// are ready. Its caller removes them, also when they never got ready.
func (t *Target) addIdleProxies(ctx context.Context, a *arm, pr mesh.Propagator, n int) error {
	b, err := t.c.AppsV1().Deployments(a.ns).Get(ctx, string(manifests.Backend), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("idle proxies: the backend Deployment %s/%s: %w", a.ns, manifests.Backend, err)
	}
	d := idleDeployment(b, n)
	pr.IdleProxy(&d.Spec.Template)
	if _, err := t.c.AppsV1().Deployments(a.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("idle proxies: create Deployment %s/%s: %w", a.ns, d.Name, err)
	}
	return t.deployer().waitReady(ctx, []want{{Namespace: a.ns, Component: idleProxies, Replicas: n}})
}

// idleDeployment is backend's Deployment with n replicas of its pod,
// named and labelled as idleProxies, spread freely.
func idleDeployment(backend *appsv1.Deployment, n int) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: string(idleProxies), Namespace: backend.Namespace,
		Labels: map[string]string{}}, Spec: *backend.Spec.DeepCopy()}
	replicas := int32(n)
	d.Spec.Replicas = &replicas
	for k, v := range backend.Labels {
		d.Labels[k] = v
	}
	sel := manifests.Selector(idleProxies)
	for k, v := range sel {
		d.Labels[k] = v
		d.Spec.Template.Labels[k] = v
	}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	d.Spec.Template.Spec.Affinity = nil
	// Idle: the app asks the scheduler for next to nothing.
	for i := range d.Spec.Template.Spec.Containers {
		d.Spec.Template.Spec.Containers[i].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}
	}
	return d
}

// removeIdleProxies deletes the idle pods' Deployment and waits until its
// pods are gone, so that the next run's window does not count them.
func (t *Target) removeIdleProxies(ctx context.Context, a *arm) error {
	fg := metav1.DeletePropagationForeground
	err := t.c.AppsV1().Deployments(a.ns).Delete(ctx, string(idleProxies), metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("idle proxies: delete Deployment %s/%s: %w", a.ns, idleProxies, err)
	}
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: manifests.Selector(idleProxies)})
	err = wait.PollUntilContextTimeout(ctx, time.Second, t.o.DeleteTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := t.c.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(l.Items) == 0, err
	})
	if err != nil {
		return fmt.Errorf("idle proxies: their pods in %s did not go: %w", a.ns, err)
	}
	return nil
}

// check refuses a control-plane measurement the mesh cannot make, or
// asked with negative counts.
func (o ControlPlaneOptions) check(m mesh.Mesh) error {
	if o.Changes < 0 || o.ExtraPods < 0 || o.ChangeTimeout < 0 {
		return fmt.Errorf("control plane: changes %d, extra pods %d and change timeout %v must not be negative", o.Changes, o.ExtraPods, o.ChangeTimeout)
	}
	if o.ChangeTimeout > load.MaxRouteProbeTimeout {
		return fmt.Errorf("control plane: change timeout %v is over the loadgen's longest probe, %v", o.ChangeTimeout, load.MaxRouteProbeTimeout)
	}
	if o.Changes == 0 {
		if o.ExtraPods > 0 {
			return fmt.Errorf("control plane: %d extra pods without changes measure nothing: set the changes too", o.ExtraPods)
		}
		return nil
	}
	if _, ok := m.(mesh.Propagator); !ok {
		return fmt.Errorf("control plane: mesh %s cannot change its routing for a probe and count its proxies (mesh.Propagator): only %s measures its control plane",
			m.Name(), strings.Join(mesh.Propagators(), ", "))
	}
	return nil
}
