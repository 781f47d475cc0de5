package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// Throttling limits: a container that spent more of its CFS periods
// throttled than this measured its CPU limit, not its work.
const (
	throttledWarn    = 0.01 // warning for any container of a role
	throttledInvalid = 0.05 // invalid for a loadgen or a proxy
)

// minCoverage is the fraction of every node's counter window that must
// lie under load for the run's CPU figures to stand: below it they are
// invalid (testbed.Run.CPUInvalid), the rest of the run stands.
const minCoverage = 0.9

// snapshots reads every node's kubelet concurrently.
func (al aligner) snapshots(ctx context.Context) (map[string]kubelet.Snapshot, error) {
	return al.snapshotNodes(ctx, al.nodeNames())
}

// nodeNames are the names of the target's nodes.
func (al aligner) nodeNames() []string {
	names := make([]string, len(al.nodes))
	for i, n := range al.nodes {
		names[i] = n.Name
	}
	return names
}

// snapshotNodes is aligner.snapshotNodes with the target's aligner.
func (t *Target) snapshotNodes(ctx context.Context, nodes []string) (map[string]kubelet.Snapshot, error) {
	return t.aligner().snapshotNodes(ctx, nodes)
}

// snapshotNodes reads the kubelets of nodes concurrently.
func (al aligner) snapshotNodes(ctx context.Context, nodes []string) (map[string]kubelet.Snapshot, error) {
	return readNodes(ctx, al.fetch, nodes)
}

// checkReads reads every node concurrently with the check's reader
// (Options.CheckExec); nil without one.
func (al aligner) checkReads(ctx context.Context) (map[string]kubelet.Snapshot, error) {
	if al.check == nil {
		return nil, nil
	}
	m, err := readNodes(ctx, al.check, al.nodeNames())
	if err != nil {
		return nil, fmt.Errorf("the check's reads (CheckExec): %w", err)
	}
	return m, nil
}

// readNodes reads nodes concurrently with fetch.
func readNodes(ctx context.Context, fetch func(context.Context, string) (kubelet.Snapshot, error), nodes []string) (map[string]kubelet.Snapshot, error) {
	out := make([]kubelet.Snapshot, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = fetch(ctx, n)
			out[i].Node = n
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("CPU counters: %w", err)
	}
	m := make(map[string]kubelet.Snapshot, len(nodes))
	for i, n := range nodes {
		m[n] = out[i]
	}
	return m, nil
}

// accountant turns the nodes' counters into a run's resources per role:
// it classifies the cluster's containers by the mesh's roles and the arms,
// and sums their usage over the window on the nodes, with each
// container's idle memory; the aligner says why counters were diluted.
type accountant struct {
	mesh  mesh.Mesh
	arms  map[testbed.Arm]*arm
	nodes []NodeInfo
	idle  map[kubelet.ContainerKey]kubelet.Container
	pods  runPods
	al    aligner
}

// accountant is the target's accountant.
func (t *Target) accountant() accountant {
	return accountant{mesh: t.o.Mesh, arms: t.arms, nodes: t.nodes, idle: t.idle, pods: t.pods(), al: t.aligner()}
}

// roleOf is accountant.roleOf with the target's accountant.
func (t *Target) roleOf(a *arm, pods []corev1.Pod) kubelet.RoleOf {
	return t.accountant().roleOf(a, pods)
}

// resourceWindow is accountant.resourceWindow with the target's accountant.
func (t *Target) resourceWindow(roleOf kubelet.RoleOf, before, after map[string]kubelet.Snapshot, loadedFrom, loadedTo time.Time, killed kubelet.ContainerKey) windowReport {
	return t.accountant().resourceWindow(roleOf, before, after, loadedFrom, loadedTo, killed)
}

// roleOf classifies the containers of the cluster for a run of arm: the
// mesh's control plane and node proxies whatever the arm (in a revision
// gate, the arm's own revision's: the other istiod is "other"); the arm's
// own (and its loadgen's) sidecars, apps and loadgen; everything else,
// including the idle other arm, as "other".
func (ac accountant) roleOf(a *arm, pods []corev1.Pod) kubelet.RoleOf {
	r := a.meshOr(ac.mesh).Roles()
	var rules []kubelet.RoleRule
	add := func(role measure.Role, ws []mesh.Workload) {
		for _, w := range ws {
			rules = append(rules, kubelet.RoleRule{Role: role, Namespace: w.Namespace, PodLabels: w.Labels, Container: w.Container})
		}
	}
	add(measure.RoleControlPlane, r.ControlPlane)
	add(measure.RoleNodeProxy, r.NodeProxies)
	for _, other := range ac.arms {
		if other != a && other.ns != a.ns {
			rules = append(rules, kubelet.RoleRule{Role: kubelet.RoleOther, Namespace: other.ns})
			if other.loadgenNS != a.loadgenNS {
				rules = append(rules, kubelet.RoleRule{Role: kubelet.RoleOther, Namespace: other.loadgenNS})
			}
		}
	}
	add(kubelet.RoleWaypoint, r.Waypoints)
	mine := []string{a.ns}
	if a.loadgenNS != a.ns {
		mine = append(mine, a.loadgenNS)
	}
	for _, ns := range mine {
		for _, s := range r.Sidecars {
			rules = append(rules, kubelet.RoleRule{Role: measure.RoleSidecar, Namespace: ns, Container: s})
		}
		rules = append(rules,
			kubelet.RoleRule{Role: measure.RoleLoadgen, Namespace: ns, PodLabels: map[string]string{manifests.LabelComponent: string(manifests.Loadgen)}},
			kubelet.RoleRule{Role: measure.RoleApp, Namespace: ns, PodLabels: map[string]string{manifests.LabelComponent: string(manifests.Backend)}},
			kubelet.RoleRule{Role: measure.RoleApp, Namespace: ns, PodLabels: map[string]string{manifests.LabelComponent: string(manifests.Frontend)}},
		)
	}
	return kubelet.RolesFromPods(pods, kubelet.RoleOther, rules...)
}

// windowReport is two reads of every node turned into the run's
// measure.Window, with what a reader must know about it: CPUInvalid are
// the reasons not to trust its CPU figures alone.
type windowReport struct {
	Window     measure.Window
	Usages     []kubelet.Usage
	Warnings   validity.Reasons
	Invalid    validity.Reasons
	CPUInvalid validity.Reasons
}

// nodeSpan is the span of one node's counters and the part of it that
// lay under load.
type nodeSpan struct {
	node     string
	span     time.Duration
	coverage float64
}

// resourceWindow computes usage per container and role over the window.
// loaded is the span the cluster was under load (warm-up included), used to
// say how much of the counters' own window it covers: the nodes whose
// counters were under load for less than minCoverage of it make the run's
// CPU figures invalid, in one reason for them all (CPUInvalid). killed,
// unless zero, is the container a fault killed: its restart is expected.
func (ac accountant) resourceWindow(roleOf kubelet.RoleOf, before, after map[string]kubelet.Snapshot, loadedFrom, loadedTo time.Time, killed kubelet.ContainerKey) windowReport {
	var rep windowReport
	relevant := func(k kubelet.ContainerKey) bool {
		return roleOf(k.Namespace, k.Pod, k.Container) != kubelet.RoleOther
	}
	nodes := make([]string, 0, len(after))
	for n := range after {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var diluted []nodeSpan
	for _, n := range nodes {
		b, ok := before[n]
		if !ok {
			continue
		}
		u, err := kubelet.Delta(b, after[n])
		rep.Invalid = append(rep.Invalid, restartsOf(err, relevant, killed)...)
		rep.Warnings = append(rep.Warnings, windowProblems(err, relevant)...)
		var kept []kubelet.ContainerKey
		for _, k := range u.Appeared {
			if relevant(k) {
				kept = append(kept, k)
			}
		}
		u.Appeared = kept
		rep.Usages = append(rep.Usages, u)
		if u.NodeWindow > 0 {
			from := b.NodeCPUSeconds.Time
			if c := coverage(from, from.Add(u.NodeWindow), loadedFrom, loadedTo); c < minCoverage {
				diluted = append(diluted, nodeSpan{node: n, span: u.NodeWindow, coverage: c})
			}
		}
	}
	if len(diluted) > 0 {
		rep.CPUInvalid.Add(validity.CPUDiluted, "%s", ac.al.diluted(diluted))
	}
	rep.Window = ac.window(roleOf, rep.Usages, loadedFrom)
	invalid, warn := throttling(roleOf, rep.Usages)
	rep.Invalid = append(rep.Invalid, invalid...)
	rep.Warnings = append(rep.Warnings, warn...)
	return rep
}

// window sums the nodes' usages into the run's measure.Window, from
// start, with each container's idle memory. The containers of no role of
// ours are left out: they are reported as node utilisation, not per
// container.
func (ac accountant) window(roleOf kubelet.RoleOf, usages []kubelet.Usage, start time.Time) measure.Window {
	alloc := map[string]float64{}
	for _, n := range ac.nodes {
		alloc[n.Name] = n.AllocatableCores
	}
	w := kubelet.Window(roleOf, alloc, usages...)
	w.Start = start
	for i := range w.Usage {
		if idle, ok := ac.idleOf(w.Usage[i].Name, w.Usage[i].Memory); ok {
			w.Usage[i].IdleRSS = idle
		}
	}
	usage := w.Usage[:0]
	for _, u := range w.Usage {
		if u.Role != kubelet.RoleOther {
			usage = append(usage, u)
		}
	}
	w.Usage = usage
	return w
}

// idleOf is the idle memory of the container named name (as a
// measure.Usage names it), of the kind its window reports: its RSS or its
// working set in the read before any load. It is false when that read
// lacks it (the container started later, or the read had no RSS of it):
// the window's own first read, of the same kind, then stands for it, so
// that idle and loaded memory are never of two kinds.
func (ac accountant) idleOf(name string, kind measure.MemoryKind) (int64, bool) {
	c, ok := ac.idle[containerKey(name)]
	switch {
	case !ok:
		return 0, false
	case kind == measure.MemoryRSS:
		if c.RSSBytes == nil {
			return 0, false
		}
		return int64(c.RSSBytes.Value), true
	}
	return int64(c.WorkingSetBytes.Value), true
}

// throttling judges the CFS throttling of the run's containers: a
// loadgen or a proxy throttled in throttledInvalid of its periods
// invalidates the run, any container of a role throttled in
// throttledWarn of them is a warning.
func throttling(roleOf kubelet.RoleOf, usages []kubelet.Usage) (invalid, warn validity.Reasons) {
	for _, u := range usages {
		for _, c := range u.Containers {
			role := roleOf(c.Container.Namespace, c.Container.Pod, c.Container.Container)
			if role == kubelet.RoleOther || !c.HasCFS || c.ThrottledRatio < throttledWarn {
				continue
			}
			msg := fmt.Sprintf("%s (%s) was CPU-throttled in %.0f%% of its CFS periods (limit %.2g cores): it measured its limit, not its work",
				c.Container, role, c.ThrottledRatio*100, c.LimitCores)
			if c.ThrottledRatio >= throttledInvalid && (role == measure.RoleLoadgen || role == measure.RoleSidecar || role == measure.RoleNodeProxy || role == kubelet.RoleWaypoint) {
				invalid.Add(validity.Throttled, "%s", msg)
			} else {
				warn.Add(validity.Throttled, "%s", msg)
			}
		}
	}
	return invalid, warn
}

// diluted is aligner.diluted with the target's aligner.
func (t *Target) diluted(ns []nodeSpan) string { return t.aligner().diluted(ns) }

// diluted says, in one sentence for the whole run, that the counters of
// the nodes ns spanned more than the loaded span, so that each was under
// load for less than minCoverage of its span.
func (al aligner) diluted(ns []nodeSpan) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("%v on node %s (%.0f%% under load)", n.span.Round(100*time.Millisecond), n.node, n.coverage*100)
	}
	spans := strings.Join(parts, ", ")
	if al.onDemand {
		return fmt.Sprintf("CPU diluted: the counters read on the nodes span %s, under the %.0f%% needed: per-role CPU is diluted by idle time around the window",
			spans, minCoverage*100)
	}
	if al.aligned() {
		return fmt.Sprintf("CPU diluted: the kubelet's counters span %s, under the %.0f%% needed: per-role CPU is diluted by idle time; "+
			"the kubelets did not collect them under load within the %v the run waits for them; %s reads them at the instant",
			spans, minCoverage*100, al.counterWait, al.words.Say(testbed.SettingNodeCPU, NodeCPUAgent))
	}
	return fmt.Sprintf("CPU diluted: the kubelet's counters span %s, under the %.0f%% needed: per-role CPU is diluted by idle time; "+
		"use a window and a warm-up longer than the kubelet's refresh interval (10-15 s), or %s", spans, minCoverage*100, al.words.Say(testbed.SettingNodeCPU, NodeCPUAgent))
}

// containerKey parses kubelet.ContainerKey.String().
func containerKey(s string) kubelet.ContainerKey {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 {
		return kubelet.ContainerKey{}
	}
	return kubelet.ContainerKey{Namespace: parts[0], Pod: parts[1], Container: parts[2]}
}

// coverage is the fraction of [from, to] inside [lf, lt].
func coverage(from, to, lf, lt time.Time) float64 {
	d := to.Sub(from)
	if d <= 0 {
		return 0
	}
	s, e := from, to
	if lf.After(s) {
		s = lf
	}
	if lt.Before(e) {
		e = lt
	}
	if !e.After(s) {
		return 0
	}
	return float64(e.Sub(s)) / float64(d)
}

// restartsOf lists the counter resets of containers that matter, but for
// the one a fault killed.
func restartsOf(err error, relevant func(kubelet.ContainerKey) bool, killed kubelet.ContainerKey) validity.Reasons {
	var out validity.Reasons
	for _, e := range kubelet.Flatten(err) {
		var cr *kubelet.CounterResetError
		if errors.As(e, &cr) && relevant(cr.Container) && cr.Container != killed {
			out.Add(validity.Restart, "restart during the window: %v", cr)
		}
	}
	return out
}

// windowProblems lists the other Delta errors: samples the kubelet had not
// refreshed, a node counter that went backwards.
func windowProblems(err error, relevant func(kubelet.ContainerKey) bool) validity.Reasons {
	var out validity.Reasons
	for _, e := range kubelet.Flatten(err) {
		var cr *kubelet.CounterResetError
		var we *kubelet.WindowError
		switch {
		case errors.As(e, &cr):
		case errors.As(e, &we):
			if we.What == "node" || relevant(containerKey(we.What)) {
				out.Add(validity.CPUIncomplete, "CPU not measured: %v", we)
			}
		default:
			out.Add(validity.CPUIncomplete, "CPU: %v", e)
		}
	}
	return out
}

// allPods lists the pods the roles are read from: the whole cluster, or,
// without the right to list it, the run's and the mesh's namespaces.
func (ac accountant) allPods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := ac.pods.c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err == nil {
		return l.Items, nil
	}
	nss := map[string]bool{}
	for _, a := range ac.arms {
		nss[a.ns], nss[a.loadgenNS] = true, true
	}
	r := ac.mesh.Roles()
	for _, ws := range [][]mesh.Workload{r.ControlPlane, r.NodeProxies, r.Waypoints} {
		for _, w := range ws {
			if w.Namespace != "" {
				nss[w.Namespace] = true
			}
		}
	}
	var out []corev1.Pod
	for ns := range nss {
		l, err := ac.pods.c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

// runPods lists the pods of one run (its manifests.LabelRun) through c.
type runPods struct {
	c   kubernetes.Interface
	run string
}

// pods lists the target's run's pods.
func (t *Target) pods() runPods { return runPods{c: t.c, run: t.run} }

// ready lists the ready pods of component c in ns, by name.
func (rp runPods) ready(ctx context.Context, ns string, c manifests.Component) ([]corev1.Pod, error) {
	l, err := rp.c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: manifests.LabelComponent + "=" + string(c) + "," + manifests.LabelRun + "=" + rp.run,
	})
	if err != nil {
		return nil, fmt.Errorf("list %s pods in %s: %w", c, ns, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// loadgenBudget is the CPU the used loadgen pods may burn, in millicores:
// per node, the sum of their CPU limits, or the node's allocatable cores
// when any of them has no limit (pods of one node share its cores).
func (ac accountant) loadgenBudget(pods []corev1.Pod) float64 {
	alloc := map[string]float64{}
	for _, n := range ac.nodes {
		alloc[n.Name] = n.AllocatableCores * 1000
	}
	limits := map[string]float64{}
	unlimited := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.Name != string(manifests.Loadgen) {
				continue
			}
			if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
				limits[p.Spec.NodeName] += float64(q.MilliValue())
			} else {
				unlimited[p.Spec.NodeName] = true
			}
		}
	}
	var total float64
	for n := range mergeKeys(limits, unlimited) {
		if unlimited[n] || limits[n] > alloc[n] {
			total += alloc[n]
		} else {
			total += limits[n]
		}
	}
	return total
}

func mergeKeys(a map[string]float64, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
