package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A scenario's loadgen placement and shards are deployed when it first
// runs and kept for the scenarios after it: in the mesh, every arm's
// namespace runs the same number of loadgen replicas, scaled up to the
// most any scenario asked for; out of the mesh, one unmeshed namespace
// runs them for both arms. A run drives the first w.Loadgens ready
// replicas (by name); the others idle, and count as "other" CPU.

// runArm is arm a as a run of workload w sees it: its loadgen where w
// places it.
func (t *Target) runArm(a *arm, w testbed.Workload) *arm {
	v := *a
	v.placement, v.loadgenNS = Placement(w.Placement), a.ns
	if v.placement == OutOfMesh {
		v.loadgenNS = t.sharedNS()
	}
	return &v
}

// loadgenJobs are the namespaces whose loadgens serve placement p.
func (t *Target) loadgenJobs(p Placement, replicas int) []renderJob {
	only := []manifests.Component{manifests.Loadgen}
	if p == OutOfMesh {
		return []renderJob{{t.sharedNS(), manifests.ArmShared, only, false, replicas}}
	}
	var jobs []renderJob
	for _, name := range t.Arms() {
		a := t.arms[name]
		jobs = append(jobs, renderJob{a.ns, string(name), only, name.IsMeshed(), replicas})
	}
	return jobs
}

// ensureLoadgens deploys, or scales up, the loadgens w needs and waits
// until they are ready and the arms verified again.
func (t *Target) ensureLoadgens(ctx context.Context, w testbed.Workload) error {
	var wants []want
	d := t.deployer()
	d.loadgensMu.Lock()
	defer d.loadgensMu.Unlock()
	for _, j := range t.loadgenJobs(Placement(w.Placement), w.Loadgens) {
		d.deployMu.Lock()
		have := d.replicas[j.ns]
		d.deployMu.Unlock()
		if have >= j.replicas {
			continue
		}
		var err error
		if have == 0 {
			err = d.deployLoadgens(ctx, j)
		} else {
			err = d.scaleLoadgens(ctx, j.ns, j.replicas)
		}
		if err != nil {
			return err
		}
		wants = append(wants, want{Namespace: j.ns, Component: manifests.Loadgen, Replicas: j.replicas})
	}
	if len(wants) == 0 {
		return nil
	}
	if err := d.waitReady(ctx, wants); err != nil {
		return err
	}
	d.deployMu.Lock()
	for _, w := range wants {
		d.replicas[w.Namespace] = w.Replicas
	}
	d.deployMu.Unlock()
	return t.afterLoadgens(ctx, wants)
}

// afterLoadgens verifies the arms again with their new loadgens (meshed
// where they must be, unmeshed elsewhere) and reads the new containers'
// idle memory.
func (t *Target) afterLoadgens(ctx context.Context, wants []want) error {
	var errs []error
	for _, w := range wants {
		a := t.armOf(w.Namespace)
		if a == nil {
			if _, err := t.o.Mesh.Verify(ctx, t.c, w.Namespace, false); err != nil {
				errs = append(errs, fmt.Errorf("out-of-mesh loadgen: %w", err))
			}
			continue
		}
		if err := t.verifyArm(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("%s arm: %w", a.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kube target: the new loadgens are not what they claim: %w", err)
	}
	snaps, err := t.aligner().snapshots(ctx)
	if err != nil {
		return fmt.Errorf("kube target: idle memory of the new loadgens: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range snaps {
		for k, c := range s.Containers {
			if _, ok := t.idle[k]; !ok {
				t.idle[k] = c
			}
		}
	}
	return nil
}

// armOf is the arm whose workloads live in ns, nil for the out-of-mesh
// loadgen's namespace.
func (t *Target) armOf(ns string) *arm {
	for _, a := range t.arms {
		if a.ns == ns {
			return a
		}
	}
	return nil
}

// loadgenPods picks the ready loadgen pods a run of a with n shards
// drives: the first n by name.
func (t *Target) loadgenPods(ctx context.Context, a *arm, n int) ([]corev1.Pod, error) {
	pods, err := t.pods().ready(ctx, a.loadgenNS, manifests.Loadgen)
	if err != nil {
		return nil, err
	}
	if len(pods) < n {
		return nil, fmt.Errorf("%d of %d loadgen pods are ready in %s", len(pods), n, a.loadgenNS)
	}
	return pods[:n], nil
}

// withIdleLoadgens classifies the loadgen pods a run does not drive (and
// their sidecars) as "other": their idle CPU and memory is no role's.
func withIdleLoadgens(roleOf kubelet.RoleOf, pods, used []corev1.Pod) kubelet.RoleOf {
	drives := map[string]bool{}
	for _, p := range used {
		drives[p.Namespace+"/"+p.Name] = true
	}
	idle := map[string]bool{}
	for _, p := range pods {
		k := p.Namespace + "/" + p.Name
		if p.Labels[manifests.LabelComponent] == string(manifests.Loadgen) && !drives[k] {
			idle[k] = true
		}
	}
	if len(idle) == 0 {
		return roleOf
	}
	return func(ns, pod, container string) kubelet.Role {
		if idle[ns+"/"+pod] {
			return kubelet.RoleOther
		}
		return roleOf(ns, pod, container)
	}
}

// placementNote is the run's warning about its placement, "" in the mesh.
func placementNote(a *arm, p testbed.Path) string {
	if a.placement != OutOfMesh || !a.name.IsMeshed() {
		return ""
	}
	hop := testbed.Hops(p)[0].Dst
	if a.sidecar {
		return "loadgen out of mesh: the loadgen → " + hop + " hop is plain text by design, into " + hop + "'s sidecar's permissive port " + fmt.Sprint(manifests.PlainPort)
	}
	return "loadgen out of mesh: the loadgen → " + hop + " hop is plain text by design"
}
