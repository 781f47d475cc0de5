package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure/cgroups"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Where CPU is read without NodeExec (Options.NodeCPU).
const (
	// NodeCPUKubelet reads the kubelets' cached counters (refreshed every
	// 10-15 s) through the API server's node proxy.
	NodeCPUKubelet = "kubelet"
	// NodeCPUAgent deploys the mbnodecpu DaemonSet and reads each node's
	// cgroup files at the instant, through the API server's pod proxy.
	NodeCPUAgent = "agent"
)

// agentCounters names the agent's counters in the environment.
const agentCounters = "on demand: the mbnodecpu DaemonSet reading each node's cgroup files at the window's ends, through the API server's pod proxy"

// agentFallback says, after the agent failed, what a run can do instead,
// the setting in w.
func agentFallback(w testbed.Words) string {
	return "without the agent, CPU can be read from the kubelets' cached counters (refreshed every 10-15 s; each run then waits for their refreshes under load: about 27 s longer a run on kind, at most a minute): ask for it with " +
		w.Say(testbed.SettingNodeCPU, NodeCPUKubelet)
}

// nodeAgent reads the counters of the nodes from the agent's pods.
type nodeAgent struct {
	c    kubernetes.Interface
	ns   string
	now  func() time.Time
	logf func(string, ...any)

	mu   sync.Mutex
	pods map[string]string // node → the agent's pod on it
	// anchors put each node's monotonic clock on the local clock, once
	// per node, so that every read of a node is on one time line.
	anchors map[string]clockAnchor
}

// clockAnchor is a local time and the node's monotonic clock at it.
type clockAnchor struct {
	local time.Time
	mono  int64
}

// deployNodeAgent creates the agent's namespace (Pod Security level
// privileged: baseline forbids a hostPath) and DaemonSet, and waits until
// it runs on every node; Close deletes the namespace with the rest.
func (t *Target) deployNodeAgent(ctx context.Context) error {
	ns := t.ns("nodecpu")
	obj := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			manifests.LabelPartOf: manifests.PartOf, manifests.LabelRun: t.run,
			"pod-security.kubernetes.io/enforce": "privileged",
		}},
	}
	if err := t.createNamespace(ctx, obj); err != nil {
		return fmt.Errorf("%w\n%s", err, agentFallback(t.o.Words))
	}
	ds, err := manifests.NodeCPUAgent(manifests.NodeCPUParams{Namespace: ns, Run: t.run, Image: t.o.NodeCPUImage})
	if err != nil {
		return fmt.Errorf("kube target: %w", err)
	}
	if _, err := t.c.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return fmt.Errorf("kube target: creating the node CPU agent (DaemonSet %s/%s) was refused (RBAC, or an admission policy: see its name in the API server's answer): %w\n%s",
				ns, ds.Name, err, agentFallback(t.o.Words))
		}
		return fmt.Errorf("kube target: create DaemonSet %s/%s: %w", ns, ds.Name, err)
	}
	t.o.Logf("kube target: deploying the node CPU agent (%s) on %d nodes in %s", ds.Spec.Template.Spec.Containers[0].Image, len(t.nodes), ns)
	if err := t.deployer().waitReady(ctx, []want{{Namespace: ns, Component: manifests.NodeCPU, Replicas: len(t.nodes)}}); err != nil {
		return fmt.Errorf("the node CPU agent cannot run: %w\n%s", err, agentFallback(t.o.Words))
	}
	return t.agent.findPods(ctx, ns)
}

// findPods records the agent's pod on each node.
func (a *nodeAgent) findPods(ctx context.Context, ns string) error {
	l, err := a.c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: manifests.LabelComponent + "=" + string(manifests.NodeCPU)})
	if err != nil {
		return fmt.Errorf("kube target: list the node CPU agent's pods: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ns = ns
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			a.pods[p.Spec.NodeName] = p.Name
		}
	}
	return nil
}

// fetch reads node's counters from its agent: those of the node, and of
// every running container on it.
func (a *nodeAgent) fetch(ctx context.Context, node string) (kubelet.Snapshot, error) {
	a.mu.Lock()
	pod, ns := a.pods[node], a.ns
	a.mu.Unlock()
	if pod == "" {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: no ready pod of the node CPU agent on it", node)
	}
	cs, keys, err := a.containersOn(ctx, node)
	if err != nil {
		return kubelet.Snapshot{}, err
	}
	req := a.c.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").SubResource("proxy").
		Name(pod + ":" + strconv.Itoa(cgroups.AgentPort)).Suffix(cgroups.CountersPath)
	for _, v := range cgroups.Query(cs)["c"] {
		req = req.Param("c", v)
	}
	sent := a.now()
	raw, err := req.DoRaw(ctx)
	got := a.now()
	if err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: read the counters from the node CPU agent %s/%s: %w: %s", node, ns, pod, err, tailBytes(raw, 400))
	}
	var rd cgroups.Reading
	if err := json.Unmarshal(raw, &rd); err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: the node CPU agent's answer: %w: %s", node, err, tailBytes(raw, 200))
	}
	s, problems := agentSnapshot(node, rd, keys, a.clock(node, rd, sent, got))
	for _, p := range problems {
		a.logf("CPU counters: node %s: %s", node, p)
	}
	return s, nil
}

// containersOn lists the running containers of the pods on node, as the
// agent names them, and their keys by container ID.
func (a *nodeAgent) containersOn(ctx context.Context, node string) ([]cgroups.Container, map[string]kubelet.ContainerKey, error) {
	l, err := a.c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: list its pods: %w", node, err)
	}
	var cs []cgroups.Container
	keys := map[string]kubelet.ContainerKey{}
	for _, p := range l.Items {
		if p.Spec.NodeName != node { // the fake clientset ignores field selectors
			continue
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.ContainerID == "" || st.State.Running == nil {
				continue
			}
			cs = append(cs, cgroups.Container{PodUID: cgroupUID(&p), ID: st.ContainerID, QOS: cgroups.QOSClass(p.Status.QOSClass)})
			keys[st.ContainerID] = kubelet.ContainerKey{Namespace: p.Namespace, Pod: p.Name, Container: st.Name}
		}
	}
	return cs, keys, nil
}

// configHash is the annotation of a static pod's mirror that holds the UID
// the kubelet knows the pod by, and names its cgroup with.
const configHash = "kubernetes.io/config.hash"

// cgroupUID is the UID in p's cgroup's name: a mirror pod's (a static pod:
// kind's and kubeadm's control plane, etcd) is its config hash, since the
// API server gives the mirror a UID of its own.
func cgroupUID(p *corev1.Pod) string {
	if _, mirror := p.Annotations["kubernetes.io/config.mirror"]; mirror && p.Annotations[configHash] != "" {
		return p.Annotations[configHash]
	}
	return string(p.UID)
}

// clock returns the node's monotonic clock on the local one. The first
// read of a node anchors it: the middle of the request is the middle of
// the node's read. A clock behind the anchor (the node rebooted)
// re-anchors it.
func (a *nodeAgent) clock(node string, rd cgroups.Reading, sent, got time.Time) func(int64) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	an, ok := a.anchors[node]
	if !ok || rd.StartNanos < an.mono {
		an = clockAnchor{local: sent.Add(got.Sub(sent) / 2).Round(0).UTC(), mono: rd.StartNanos + (rd.EndNanos-rd.StartNanos)/2}
		a.anchors[node] = an
	}
	return func(mono int64) time.Time { return an.local.Add(time.Duration(mono - an.mono)) }
}

// agentSnapshot turns the agent's reading into a kubelet.Snapshot, each
// sample at its own read's time; problems lists the containers left out.
func agentSnapshot(node string, rd cgroups.Reading, keys map[string]kubelet.ContainerKey, at func(int64) time.Time) (kubelet.Snapshot, []string) {
	nodeAt := at(rd.NodeNanos)
	s := kubelet.Snapshot{Node: node, ReadAt: at(rd.StartNanos), Containers: map[kubelet.ContainerKey]kubelet.Container{}, Pods: map[kubelet.PodKey]kubelet.Pod{},
		NodeCPUSeconds: kubelet.Sample{Value: float64(rd.NodeCounters.UsageNanos) / 1e9, Time: nodeAt}}
	if rd.NodeCounters.HasMemory {
		s.NodeWorkingSetBytes = kubelet.Sample{Value: float64(rd.NodeCounters.WorkingSetBytes), Time: nodeAt}
	}
	var problems []string
	for _, cr := range rd.Containers {
		k, ok := keys[cr.ID]
		if !ok {
			continue
		}
		if cr.Counters == nil {
			problems = append(problems, fmt.Sprintf("%v (%s): left out of this read: %s", k, cr.ID, cr.Error))
			continue
		}
		when, n := at(cr.Nanos), cr.Counters
		c := kubelet.Container{ID: cr.ID, CPUSeconds: kubelet.Sample{Value: float64(n.UsageNanos) / 1e9, Time: when}}
		if n.HasMemory {
			c.WorkingSetBytes = kubelet.Sample{Value: float64(n.WorkingSetBytes), Time: when}
		}
		if n.HasRSS {
			c.RSSBytes = &kubelet.Sample{Value: float64(n.RSSBytes), Time: when}
		}
		if n.LimitCores > 0 { // as cAdvisor: CFS counters only under a limit
			c.Throttling = &kubelet.Throttling{
				Periods:          kubelet.Sample{Value: float64(n.Periods), Time: when},
				ThrottledPeriods: kubelet.Sample{Value: float64(n.ThrottledPeriods), Time: when},
				ThrottledSeconds: &kubelet.Sample{Value: float64(n.ThrottledNanos) / 1e9, Time: when},
				LimitCores:       n.LimitCores,
			}
		}
		s.Containers[k] = c
	}
	return s, problems
}

// tailBytes is the last n bytes of b, as text.
func tailBytes(b []byte, n int) string {
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
