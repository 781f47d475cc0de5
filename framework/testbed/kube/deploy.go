package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
)

// deployState is what the deployer keeps: the namespaces it created, in
// creation order (Close deletes them), and the loadgen replicas deployed
// per namespace, 0 where none is (yet): scenarios that need more scale
// them up. deployMu guards both.
type deployState struct {
	// loadgensMu makes ensureLoadgens one at a time: a duet's two arms
	// ask for the same loadgens at once.
	loadgensMu sync.Mutex
	deployMu   sync.Mutex
	created    []string
	replicas   map[string]int
}

// deployer renders the workloads, creates their namespaces and objects,
// scales the loadgens and waits until the pods are ready. It works in the
// run's namespaces through c, with the target's options (the mesh, the
// workloads' parameters, the timeouts) and its arms (armOf); what it
// created is its deployState.
type deployer struct {
	*deployState
	c        kubernetes.Interface
	run      string
	o        *Options
	now      func() time.Time
	sharedNS string // the out-of-mesh loadgen's namespace
	armOf    func(ns string) *arm
}

// deployer is the target's deployer.
func (t *Target) deployer() deployer {
	return deployer{deployState: &t.deployState, c: t.c, run: t.run, o: &t.o, now: t.now, sharedNS: t.sharedNS(), armOf: t.armOf}
}

// createNamespace is deployer.createNamespace with the target's deployer.
func (t *Target) createNamespace(ctx context.Context, ns *corev1.Namespace) error {
	return t.deployer().createNamespace(ctx, ns)
}

// waitReady waits, within Options.ReadyTimeout, until every wanted pod is
// ready, and stops at once on a pod that cannot become ready.
func (d deployer) waitReady(ctx context.Context, wants []want) error {
	rctx, cancel := context.WithTimeout(ctx, d.o.ReadyTimeout)
	defer cancel()
	start := d.now()
	r := &readiness{c: d.c, run: d.run, wants: wants, probes: d.o.ProbeFailures, grace: d.o.UnschedulableGrace,
		every: 2 * time.Second, now: d.now, logf: d.o.Logf, logLines: 20}
	if err := r.wait(rctx); err != nil {
		return fmt.Errorf("kube target: %w", err)
	}
	d.o.Logf("kube target: %s ready in %v", strings.Join(componentsOf(wants), ", "), d.now().Sub(start).Round(time.Second))
	return nil
}

func (d deployer) createNamespace(ctx context.Context, ns *corev1.Namespace) error {
	if _, err := d.c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("kube target: creating namespace %s was forbidden: the identity in use needs RBAC create on namespaces: %w", ns.Name, err)
		}
		return fmt.Errorf("kube target: create namespace %s: %w", ns.Name, err)
	}
	d.deployMu.Lock()
	d.created = append(d.created, ns.Name)
	d.deployMu.Unlock()
	return nil
}

// renderJob is what one namespace runs: its components, whether the
// mesh is in it, and its loadgen replicas.
type renderJob struct {
	ns, armLabel string
	comps        []manifests.Component
	inject       bool
	replicas     int
}

// render builds every namespace's objects (the arms', in order, and the
// out-of-mesh loadgen's in shared when set) and what readiness waits for.
func (d deployer) render(arms []*arm, shared string) ([]*manifests.Set, []want, error) {
	// The protocol's workloads (gRPC has no frontend), without the
	// loadgen when it runs out of the mesh.
	apps := manifests.ComponentsOf(d.o.Workloads.Protocol)
	if shared != "" {
		apps = slices.DeleteFunc(apps, func(c manifests.Component) bool { return c == manifests.Loadgen })
	}
	var jobs []renderJob
	for _, a := range arms {
		jobs = append(jobs, renderJob{a.ns, string(a.name), apps, a.name.IsMeshed(), d.o.Loadgens})
	}
	if shared != "" {
		jobs = append(jobs, renderJob{shared, manifests.ArmShared, []manifests.Component{manifests.Loadgen}, false, d.o.Loadgens})
	}
	var sets []*manifests.Set
	var wants []want
	for _, j := range jobs {
		s, ws, err := d.renderOne(j)
		if err != nil {
			return nil, nil, err
		}
		sets, wants = append(sets, s), append(wants, ws...)
	}
	return sets, wants, nil
}

// renderOne builds one namespace's objects, with the mesh injected (or
// the bring-your-own sidecar wired, as the namespace's arm wires it) where
// the job says.
func (d deployer) renderOne(j renderJob) (*manifests.Set, []want, error) {
	p := d.o.Workloads
	p.Namespace, p.Arm, p.Run, p.Components, p.LoadgenReplicas = j.ns, j.armLabel, d.run, j.comps, j.replicas
	a := d.armOf(j.ns)
	if j.inject && a != nil && a.proxy != nil {
		p.Sidecar = a.proxy
	}
	s, err := manifests.Render(p)
	if err != nil {
		return nil, nil, fmt.Errorf("kube target: %w", err)
	}
	if inj, ok := d.o.Mesh.(mesh.Injector); ok && j.inject {
		for _, dm := range s.Deployments {
			if err := d.inject(inj, a, &dm.Spec.Template); err != nil {
				return nil, nil, fmt.Errorf("kube target: %s: inject into %s/%s: %w", d.o.Mesh.Name(), dm.Namespace, dm.Name, err)
			}
		}
	}
	var wants []want
	for _, d := range s.Deployments {
		wants = append(wants, want{Namespace: j.ns, Component: manifests.Component(d.Labels[manifests.LabelComponent]), Replicas: int(*d.Spec.Replicas)})
	}
	return s, wants, nil
}

// inject injects the mesh into a pod template of arm a, with the arm's
// own proxy image when it has one (an unwired candidate).
func (d deployer) inject(inj mesh.Injector, a *arm, tmpl *corev1.PodTemplateSpec) error {
	if err := inj.Inject(tmpl); err != nil {
		return err
	}
	sp, ok := d.o.Mesh.(mesh.SidecarProxy)
	if a == nil || a.image == "" || !ok {
		return nil
	}
	name, _, _ := sp.Proxy()
	return setProxyImage(tmpl, name, a.image)
}

// apply creates every set's objects, the namespaces concurrently, each in
// creation order.
func (d deployer) apply(ctx context.Context, sets []*manifests.Set) error {
	errs := make([]error, len(sets))
	var wg sync.WaitGroup
	for i, s := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, o := range s.Objects() {
				if err := d.create(ctx, o); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (d deployer) create(ctx context.Context, o runtime.Object) error {
	var err error
	var kind, ns, name string
	switch x := o.(type) {
	case *corev1.ServiceAccount:
		kind, ns, name = "ServiceAccount", x.Namespace, x.Name
		_, err = d.c.CoreV1().ServiceAccounts(ns).Create(ctx, x, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// A component deployed again into its namespace (more
			// loadgens) keeps its identity: the same account.
			err = nil
		}
	case *corev1.ConfigMap:
		kind, ns, name = "ConfigMap", x.Namespace, x.Name
		_, err = d.c.CoreV1().ConfigMaps(ns).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.Secret:
		kind, ns, name = "Secret", x.Namespace, x.Name
		_, err = d.c.CoreV1().Secrets(ns).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.Service:
		kind, ns, name = "Service", x.Namespace, x.Name
		_, err = d.c.CoreV1().Services(ns).Create(ctx, x, metav1.CreateOptions{})
	case *appsv1.Deployment:
		kind, ns, name = "Deployment", x.Namespace, x.Name
		_, err = d.c.AppsV1().Deployments(ns).Create(ctx, x, metav1.CreateOptions{})
	default:
		return fmt.Errorf("kube target: cannot create %T", o)
	}
	if err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("kube target: creating %s %s/%s was forbidden (RBAC, or an admission policy): %w", kind, ns, name, err)
		}
		return fmt.Errorf("kube target: create %s %s/%s: %w", kind, ns, name, err)
	}
	return nil
}

// deployLoadgens creates the loadgens of one namespace, and the
// namespace itself when it is the out-of-mesh one.
func (d deployer) deployLoadgens(ctx context.Context, j renderJob) error {
	if j.ns == d.sharedNS {
		if err := d.createNamespace(ctx, manifests.Namespace(j.ns, manifests.ArmShared, d.run, true)); err != nil {
			return err
		}
	}
	s, _, err := d.renderOne(j)
	if err != nil {
		return err
	}
	d.o.Logf("kube target: deploying %d×loadgen in %s", j.replicas, j.ns)
	return d.apply(ctx, []*manifests.Set{s})
}

// scaleLoadgens sets the replicas of a namespace's loadgen Deployment.
func (d deployer) scaleLoadgens(ctx context.Context, ns string, n int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := d.c.AppsV1().Deployments(ns).Patch(ctx, string(manifests.Loadgen), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kube target: scale the loadgens of %s to %d: %w", ns, n, err)
	}
	d.o.Logf("kube target: scaling the loadgens of %s to %d", ns, n)
	return nil
}
