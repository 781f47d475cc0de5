package kube

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Node labels that reveal the CPU: node-feature-discovery's, and the
// cloud instance type.
const (
	labelNFDVendor    = "feature.node.kubernetes.io/cpu-model.vendor_id"
	labelNFDFamily    = "feature.node.kubernetes.io/cpu-model.family"
	labelNFDModel     = "feature.node.kubernetes.io/cpu-model.id"
	labelInstanceType = "node.kubernetes.io/instance-type"
	labelInstanceBeta = "beta.kubernetes.io/instance-type"
)

func nodeInfo(n *corev1.Node) NodeInfo {
	ni := n.Status.NodeInfo
	out := NodeInfo{
		Name:         n.Name,
		Kernel:       ni.KernelVersion,
		OSImage:      ni.OSImage,
		Runtime:      ni.ContainerRuntimeVersion,
		Kubelet:      ni.KubeletVersion,
		ProviderID:   n.Spec.ProviderID,
		InstanceType: orDefault(n.Labels[labelInstanceType], n.Labels[labelInstanceBeta]),
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
		out.AllocatableCores = float64(q.MilliValue()) / 1000
	}
	if q, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok {
		out.AllocatableMiB = q.Value() >> 20
	}
	switch {
	case n.Labels[labelNFDVendor] != "":
		out.CPUModel = strings.TrimSpace(fmt.Sprintf("%s family %s model %s", n.Labels[labelNFDVendor], n.Labels[labelNFDFamily], n.Labels[labelNFDModel]))
	case strings.HasPrefix(n.Spec.ProviderID, "kind://"):
		// A kind node is a container on this machine: its CPU is ours.
		if m := testbed.Host().CPUModel; m != "" {
			out.CPUModel = m + " (kind node on this host)"
		}
	case out.InstanceType != "":
		out.CPUModel = "instance type " + out.InstanceType
	}
	return out
}

// environment describes the cluster, the mesh and the workloads.
func (t *Target) environment(ctx context.Context) testbed.Environment {
	e := testbed.Environment{
		Target:    t.o.Name,
		GoVersion: runtime.Version(),
		Nodes:     len(t.nodes),

		CPUCounters: t.counterSource,
	}
	if v, err := serverVersion(ctx, t.c); err == nil {
		e.Kubernetes = v
	}
	nodeEnvironment(&e, t.nodes)
	t.meshEnvironment(ctx, &e)
	t.loadgenEnvironment(ctx, &e)
	return e
}

// meshEnvironment fills in e's mesh: its name, version, worker threads and
// the configuration of the mesh and the workloads.
func (t *Target) meshEnvironment(ctx context.Context, e *testbed.Environment) {
	info := t.meshInfo
	e.Mesh.Name = t.o.Mesh.Name()
	e.Mesh.Version = info.Version
	if e.Mesh.Version == "" && e.Mesh.Name == "sidecar" {
		// The bring-your-own proxy defaults to the workloads' nginx image.
		e.Mesh.Version = orDefault(t.o.Workloads.Images.Nginx, manifests.DefaultImages.Nginx)
	}
	measured := ""
	e.Mesh.Threads, measured = t.meshThreads(info.Threads)
	e.Mesh.Config = t.meshConfig(ctx, info, measured)
}

// meshConfig is the environment's configuration: the mesh's own (info),
// its threads (measured: what was read on the proxies), the placement, the
// workloads, the installed charts, and where each arm runs.
func (t *Target) meshConfig(ctx context.Context, info mesh.Info, measured string) map[string]string {
	p := t.o.Workloads
	_ = p.Normalize() // only for the defaults; validated by New
	cfg := map[string]string{}
	maps.Copy(cfg, info.Config)
	cfg["threads"] = info.Threads.String()
	cfg["threads.measured"] = measured
	if info.Namespace != "" {
		cfg["controlPlaneNamespace"] = info.Namespace
	}
	cfg["placement"] = string(t.o.Placement)
	cfg["loadgens"] = strconv.Itoa(t.o.Loadgens)
	// The protocol of each run is in its load settings; what the workloads
	// offer is this. nginx proxies in HTTP/1.1 only, so with h2 only the
	// loadgen's hop is HTTP/2.
	cfg["protocols"] = fmt.Sprintf("http1 :%d, h2c :%d (loadgen hop only)", manifests.Port, manifests.H2Port)
	cfg["responseSize"] = strconv.Itoa(p.ResponseSize)
	t.grpcConfig(cfg)
	cfg["nginxImage"] = orDefault(t.o.Workloads.Images.Nginx, manifests.DefaultImages.Nginx)
	cfg["loadgenImage"] = orDefault(t.o.Workloads.Images.Loadgen, manifests.DefaultImages.Loadgen)
	cfg["nginxWorkers"] = "auto"
	if p.NginxWorkers > 0 {
		cfg["nginxWorkers"] = strconv.Itoa(p.NginxWorkers)
	}
	cfg["namespaces"] = strings.Join(t.Namespaces(), ",")
	t.installedConfig(cfg)
	for name, a := range t.arms {
		if where := t.access().placement(ctx, a); where != "" {
			cfg["nodes."+string(name)] = where
		}
	}
	t.mu.Lock()
	cand := t.candInfo
	t.mu.Unlock()
	t.gate().armsConfig(cfg, t.meshInfo, cand)
	return cfg
}

// loadgenEnvironment fills in e's pod MTU and its description of the
// loadgens (how many, fortio's version, and where they run).
func (t *Target) loadgenEnvironment(ctx context.Context, e *testbed.Environment) {
	ni, err := t.access().loadgenNetInfo(ctx, t.meshedArms()[0])
	fortio := "fortio"
	if err != nil {
		t.o.Logf("kube target: pod MTU and fortio version unknown: %v", err)
	} else {
		e.MTU = ni.podMTU()
		fortio += " " + ni.Fortio
	}
	where := "in each arm's namespace (in-mesh: in the meshed arm it has the mesh's outbound proxy, so one hop crosses two proxies)"
	if t.o.Placement == OutOfMesh {
		where = "in its own unmeshed namespace calling both arms (out-of-mesh: the first hop is plain text, only the server side is meshed)"
	}
	e.Loadgen = fmt.Sprintf("%d× mbloadgen (%s REST API over port-forward) %s", t.o.Loadgens, fortio, where)
}

// nodeEnvironment puts nodes on e: their kernels, OS images, runtimes
// and CPU models (each once), and the smallest node's cores and memory.
func nodeEnvironment(e *testbed.Environment, nodes []NodeInfo) {
	var kernels, images, runtimes, models []string
	for i, n := range nodes {
		kernels, images, runtimes, models = appendNew(kernels, n.Kernel), appendNew(images, n.OSImage),
			appendNew(runtimes, n.Runtime), appendNew(models, n.CPUModel)
		cores := int(n.AllocatableCores)
		if i == 0 || cores < e.Cores {
			e.Cores = cores
		}
		if i == 0 || n.AllocatableMiB < e.MemoryMiB {
			e.MemoryMiB = n.AllocatableMiB
		}
	}
	e.Kernel, e.OSImage, e.Runtime, e.CPUModel = strings.Join(kernels, ", "), strings.Join(images, ", "),
		strings.Join(runtimes, ", "), strings.Join(models, ", ")
}

// installedConfig records what this run installed, if anything: which
// charts, from where, with which values (certificates shown by their
// length only).
func (t *Target) installedConfig(cfg map[string]string) {
	inst := t.Installed()
	if len(inst) == 0 {
		return
	}
	cfg["installedBy"] = "meshbench"
	for _, r := range inst {
		src := r.Repo
		if r.From != "" {
			src = r.From
		}
		cfg["helm."+r.Release] = r.Loaded + " from " + src
		if vs := mesh.FlattenValues(r.Values); len(vs) > 0 {
			cfg["helm."+r.Release+".values"] = strings.Join(vs, " ")
		}
	}
}

// meshThreads is the proxies' worker threads for the environment: what
// Verify read from the meshed arm's proxies when they all run the same
// number, else the configured fixed number (0 when not fixed); and the
// summary of what was read.
func (t *Target) meshThreads(configured mesh.Threads) (int, string) {
	name := testbed.Meshed // before the arms are made
	if as := t.meshedArms(); len(as) > 0 && as[0] != nil {
		name = as[0].name
	}
	t.mu.Lock()
	measured, n := measuredThreads(t.verified[name])
	t.mu.Unlock()
	if n == 0 && configured.Mode == "fixed" {
		n = configured.N
	}
	if measured == "" {
		measured = "not read from the proxies"
	}
	return n, measured
}

// measuredThreads summarises the worker threads Verify read from the meshed
// arm's proxies ("2 (Envoy's envoy_server_concurrency ...) on 4 of 4 pods",
// one entry per distinct reading), and returns the count when every pod
// runs the same fixed number; "" and 0 when none was read.
func measuredThreads(v mesh.Verification) (string, int) {
	counts := map[string]int{}
	var keys []string
	fixed, total := map[int]bool{}, 0
	for _, p := range v.Pods {
		if p.Threads == nil {
			continue
		}
		total++
		k := p.Threads.String()
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
		if p.Threads.Mode == "fixed" {
			fixed[p.Threads.N] = true
		} else {
			fixed[-1] = true
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s on %d of %d pods", k, counts[k], len(v.Pods)))
	}
	n := 0
	if len(fixed) == 1 && !fixed[-1] {
		for k := range fixed {
			n = k
		}
	}
	return strings.Join(parts, "; "), n
}

// placement says which node each workload of a runs on, e.g.
// "backend=w1 frontend=w2 loadgen=w1,w2", and which share one.
func (pa podAccess) placement(ctx context.Context, a *arm) string {
	var parts []string
	byNode := map[string][]string{}
	for _, c := range manifests.Components {
		ns := a.ns
		if c == manifests.Loadgen {
			ns = a.loadgenNS
		}
		pods, err := pa.pods.ready(ctx, ns, c)
		if err != nil {
			return ""
		}
		if len(pods) == 0 {
			continue // not deployed: gRPC has no frontend
		}
		var nodes []string
		for _, p := range pods {
			nodes = appendNew(nodes, p.Spec.NodeName)
			byNode[p.Spec.NodeName] = appendNew(byNode[p.Spec.NodeName], string(c))
		}
		parts = append(parts, string(c)+"="+strings.Join(nodes, ","))
	}
	var shared []string
	for n, cs := range byNode {
		if len(cs) > 1 {
			shared = append(shared, n+" runs "+strings.Join(cs, "+"))
		}
	}
	sort.Strings(shared)
	if len(shared) > 0 {
		parts = append(parts, "(not enough nodes to spread: "+strings.Join(shared, "; ")+")")
	}
	return strings.Join(parts, " ")
}

// loadgenNetInfo asks one loadgen of arm a for its pod's interfaces.
func (pa podAccess) loadgenNetInfo(ctx context.Context, a *arm) (netInfo, error) {
	pods, err := pa.pods.ready(ctx, a.loadgenNS, manifests.Loadgen)
	if err != nil {
		return netInfo{}, err
	}
	if len(pods) == 0 {
		return netInfo{}, fmt.Errorf("no ready loadgen pod in %s", a.loadgenNS)
	}
	tn, err := pa.fwd(ctx, a.loadgenNS, pods[0].Name, manifests.Port)
	if err != nil {
		return netInfo{}, err
	}
	defer tn.Close()
	lg := &loadgen{pod: pods[0].Name, base: "http://" + tn.Addr, hc: pa.hc}
	return lg.netInfo(ctx)
}

// idleMemory reads every node's kubelet once, after the workloads are up
// and before any load: each container's memory then is its idle memory.
// The reads are kept whole, RSS and working set, so that a window takes
// the idle memory of the kind it reports (accountant.idleOf).
func (al aligner) idleMemory(ctx context.Context) (map[kubelet.ContainerKey]kubelet.Container, error) {
	snaps, err := al.snapshots(ctx)
	if err != nil {
		return nil, err
	}
	out := map[kubelet.ContainerKey]kubelet.Container{}
	for _, s := range snaps {
		for k, c := range s.Containers {
			out[k] = c
		}
	}
	return out, nil
}

func appendNew(l []string, s string) []string {
	if s == "" {
		return l
	}
	for _, x := range l {
		if x == s {
			return l
		}
	}
	l = append(l, s)
	sort.Strings(l)
	return l
}
