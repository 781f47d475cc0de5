package mesh

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func init() {
	register(Adapter{Name: "istio-ambient", Rank: 3, New: func(c config) Mesh { return newAmbient(c) },
		Marks: []InjectionMark{{Key: "istio.io/dataplane-mode", Value: "ambient"}}})
}

// Istio ambient names.
const (
	ambientDataplaneMode = "istio.io/dataplane-mode"
	ambientUseWaypoint   = "istio.io/use-waypoint"
	ambientRedirection   = "ambient.istio.io/redirection"
	waypointManaged      = "gateway.istio.io/managed"
	gatewayNameLabel     = "gateway.networking.k8s.io/gateway-name"
	ztunnelStatsPort     = 15020
)

// DefaultWaypoint is the name of the waypoint the harness creates in the
// meshed namespace for WithWaypoint (istioctl's default name).
const DefaultWaypoint = "waypoint"

type ambient struct {
	ns, waypoint string
	// zns and cniNS are where Detect found ztunnel and istio-cni: the
	// control-plane namespace, or kube-system (as GKE installs them).
	zns, cniNS string
	// crdDir is where the Gateway API CRDs are read ("": the module's);
	// createdCRDs are those the run installed, for Cleanup.
	crdDir      string
	createdCRDs []string
}

func newAmbient(cfg config) *ambient {
	ns := cmp.Or(cfg.namespace, "istio-system")
	return &ambient{ns: ns, waypoint: cfg.waypoint, zns: ns, cniNS: ns, crdDir: cfg.gatewayAPICRDs}
}

// Name is "istio-ambient" (Mesh).
func (a *ambient) Name() string { return "istio-ambient" }

// nodeAgentNamespaces are where the node agents (ztunnel, istio-cni) are
// looked for: the control plane's namespace, then kube-system, where GKE's
// managed Istio and its ambient add-on run them.
func (a *ambient) nodeAgentNamespaces() []string {
	if a.ns == metav1.NamespaceSystem {
		return []string{a.ns}
	}
	return []string{a.ns, metav1.NamespaceSystem}
}

// findDaemonSet returns the first DaemonSet called name in namespaces.
func findDaemonSet(ctx context.Context, c kubernetes.Interface, name string, namespaces []string) (*appsv1.DaemonSet, error) {
	for _, ns := range namespaces {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get DaemonSet %s/%s: %w", ns, name, err)
		}
		return ds, nil
	}
	return nil, nil
}

// Detect finds the ztunnel DaemonSet (in the control plane's namespace or
// kube-system), istiod and istio-cni.
func (a *ambient) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: "istio-ambient", Namespace: a.ns, Threads: Threads{Mode: "unknown"}}
	nss := a.nodeAgentNamespaces()
	ds, err := findDaemonSet(ctx, c, "ztunnel", nss)
	if err != nil {
		return info, fmt.Errorf("istio-ambient: %w", err)
	}
	if ds == nil {
		return info, &NotInstalledError{Mesh: "istio-ambient", Looked: "no DaemonSet ztunnel in " + strings.Join(nss, " or ")}
	}
	a.zns = ds.Namespace
	info.Installed = true
	info.Config = map[string]string{"waypoint": a.waypoint, "ztunnel.namespace": a.zns}
	// ztunnel is the pod's first (only) container.
	if cs := ds.Spec.Template.Spec.Containers; len(cs) > 0 {
		ctr := &cs[0]
		info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: ds.Namespace, Name: ds.Name, Image: ctr.Image})
		info.Version = imageTag(ctr.Image)
		info.Config["ztunnel.limits.cpu"] = ctr.Resources.Limits.Cpu().String()
		info.Config["ztunnel.requests.cpu"] = ctr.Resources.Requests.Cpu().String()
		info.Threads = ztunnelThreads(ctr)
	}
	comps, _, err := istiod(ctx, c, a.ns, "")
	if err != nil {
		return info, err
	}
	info.Components = append(info.Components, comps...)
	cni, err := findDaemonSet(ctx, c, "istio-cni-node", nss)
	if err != nil {
		return info, fmt.Errorf("istio-ambient: %w", err)
	}
	if cni != nil && len(cni.Spec.Template.Spec.Containers) > 0 {
		a.cniNS = cni.Namespace
		info.Config["istio-cni.namespace"] = a.cniNS
		info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: cni.Namespace, Name: cni.Name,
			Image: cni.Spec.Template.Spec.Containers[0].Image})
	}
	return info, nil
}

// ztunnelDefaultThreads is ztunnel's DEFAULT_WORKER_THREADS (src/config.rs).
const ztunnelDefaultThreads = 2

// ztunnelThreads says how many worker threads ztunnel runs, the way its
// src/config.rs decides: ZTUNNEL_WORKER_THREADS when set (a number, or a
// percentage of ZTUNNEL_CPU_LIMIT, rounded up, at least 1), else the
// concurrency of its proxy config (PROXY_CONFIG), else 2. The CPU limit only
// matters to a percentage.
func ztunnelThreads(ctr *corev1.Container) Threads {
	w, ok := envValue(ctr, "ZTUNNEL_WORKER_THREADS")
	if !ok {
		if pc, ok := envValue(ctr, "PROXY_CONFIG"); ok {
			var v struct {
				Concurrency *int `yaml:"concurrency"`
			}
			if err := yaml.Unmarshal([]byte(pc), &v); err == nil && v.Concurrency != nil && *v.Concurrency > 0 {
				return Threads{N: *v.Concurrency, Mode: "fixed", Source: "ztunnel PROXY_CONFIG concurrency"}
			}
		}
		return Threads{N: ztunnelDefaultThreads, Mode: "fixed",
			Source: "ztunnel's default (ZTUNNEL_WORKER_THREADS and PROXY_CONFIG concurrency unset)"}
	}
	pct, isPct := strings.CutSuffix(w, "%")
	if !isPct {
		n, err := strconv.Atoi(w)
		if err != nil || n <= 0 {
			return Threads{Mode: "unknown", Source: "ZTUNNEL_WORKER_THREADS=" + w + " is not a number of threads"}
		}
		return Threads{N: n, Mode: "fixed", Source: "ztunnel ZTUNNEL_WORKER_THREADS"}
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil || p <= 0 || p > 100 {
		return Threads{Mode: "unknown", Source: "ZTUNNEL_WORKER_THREADS=" + w + " is not a percentage between 0 and 100"}
	}
	cpus, from := ztunnelCPULimit(ctr)
	if cpus == 0 {
		return Threads{Mode: "auto", Source: "ZTUNNEL_WORKER_THREADS=" + w + " of ZTUNNEL_CPU_LIMIT, " + from}
	}
	n := max(1, int(math.Ceil(float64(cpus)*p/100)))
	return Threads{N: n, Mode: "fixed", Source: fmt.Sprintf("ZTUNNEL_WORKER_THREADS=%s of ZTUNNEL_CPU_LIMIT=%d (%s)", w, cpus, from)}
}

// ztunnelCPULimit returns ZTUNNEL_CPU_LIMIT as ztunnel will read it, or 0
// when it is the node's core count (no CPU limit, or not set), and where it
// comes from.
func ztunnelCPULimit(ctr *corev1.Container) (int, string) {
	if v, ok := envValue(ctr, "ZTUNNEL_CPU_LIMIT"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n, "set in the environment"
		}
	}
	for _, e := range ctr.Env {
		if e.Name == "ZTUNNEL_CPU_LIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.cpu" {
			if lim := ctr.Resources.Limits.Cpu(); !lim.IsZero() {
				// The downward API rounds up to whole cores (divisor 1).
				return int((lim.MilliValue() + 999) / 1000), "limits.cpu " + lim.String() + " rounded up"
			}
			return 0, "which without a CPU limit is the node's core count"
		}
	}
	return 0, "unset: the node's core count"
}

// Enable labels the namespace istio.io/dataplane-mode=ambient. With a
// waypoint it first installs the Gateway API CRDs when the cluster has none
// (Cleanup removes them), creates the waypoint Gateway in the namespace and
// waits until istiod has programmed it, then labels the namespace
// istio.io/use-waypoint=<name>.
func (a *ambient) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	labels := map[string]*string{ambientDataplaneMode: ptr("ambient")}
	if a.waypoint != "" {
		rc, err := restOf(c)
		if err != nil {
			return fmt.Errorf("istio-ambient: %w", err)
		}
		if err := a.ensureGatewayAPI(ctx, rc); err != nil {
			return err
		}
		if err := createWaypoint(ctx, rc, namespace, a.waypoint); err != nil {
			return err
		}
		labels[ambientUseWaypoint] = ptr(a.waypoint)
	}
	return setNamespaceMeta(ctx, c, namespace, labels, nil)
}

// Roles are ztunnel as the node proxy, the Istio-managed waypoints in any
// namespace, and istiod and istio-cni-node as the control plane (Mesh).
func (a *ambient) Roles() Roles {
	return Roles{
		NodeProxies: []Workload{{Namespace: a.zns, Labels: map[string]string{"app": "ztunnel"}}},
		Waypoints:   []Workload{{Labels: map[string]string{waypointManaged: "istio.io-mesh-controller"}}},
		ControlPlane: []Workload{
			{Namespace: a.ns, Labels: map[string]string{"app": "istiod"}},
			{Namespace: a.cniNS, Labels: map[string]string{"k8s-app": "istio-cni-node"}},
		},
	}
}

// Verify, for the meshed arm, checks that the namespace is in ambient mode,
// that every workload pod was captured by ztunnel (istio-cni annotates it
// ambient.istio.io/redirection=enabled) and runs no sidecar, that a ready
// ztunnel runs on every node hosting one, and, with a waypoint, that the
// namespace uses it and its pod is up.
func (a *ambient) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "istio-ambient", namespace)
	}
	v := Verification{Mesh: "istio-ambient", Namespace: namespace, Meshed: true}
	ns, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	var problems []string
	if ns.Labels[ambientDataplaneMode] != "ambient" {
		problems = append(problems, fmt.Sprintf("the namespace is not labelled %s=ambient", ambientDataplaneMode))
	}
	ztunnels, err := nodesWith(ctx, c, a.zns, "app=ztunnel")
	if err != nil {
		return v, err
	}
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return v, err
	}
	waypointUp := false
	workloads := 0
	for i := range pods {
		p := &pods[i]
		if p.Labels[waypointManaged] != "" {
			waypointUp = waypointUp || a.readyWaypoint(p)
			continue
		}
		workloads++
		pc, ps := ambientPodCheck(p, ztunnels)
		problems = append(problems, ps...)
		v.Pods = append(v.Pods, pc)
	}
	if workloads == 0 {
		problems = append(problems, "no running pods to verify")
	}
	problems = append(problems, a.waypointProblems(ns, waypointUp)...)
	if len(problems) > 0 {
		return v, &VerifyError{Mesh: "istio-ambient", Namespace: namespace, Meshed: true, Problems: problems}
	}
	return v, nil
}

// readyWaypoint says whether p, a waypoint pod, is the configured waypoint
// and ready (or has no conditions yet).
func (a *ambient) readyWaypoint(p *corev1.Pod) bool {
	return a.waypoint != "" && p.Labels[gatewayNameLabel] == a.waypoint && (len(p.Status.Conditions) == 0 || podReady(p))
}

// ambientPodCheck checks that workload pod p runs no sidecar, was captured
// by ztunnel, and is scheduled on a node with a ready ztunnel (ztunnels, by
// node name); it returns the pod's check and its problems.
func ambientPodCheck(p *corev1.Pod, ztunnels map[string]bool) (PodCheck, []string) {
	var problems []string
	pc := PodCheck{Pod: p.Name, Node: p.Spec.NodeName}
	if _, ok := proxyContainer(p, istioProxy); ok {
		problems = append(problems, fmt.Sprintf("pod %s has an istio-proxy sidecar: it runs in sidecar mode, not ambient", p.Name))
	}
	if p.Annotations[ambientRedirection] != "enabled" {
		problems = append(problems, fmt.Sprintf("pod %s is not captured by ztunnel (no %s=enabled annotation): "+
			"is istio-cni running on its node, and was the pod started after the namespace was labelled?", p.Name, ambientRedirection))
	} else {
		pc.Proxies = []string{"ztunnel"}
	}
	switch {
	case p.Spec.NodeName == "":
		problems = append(problems, fmt.Sprintf("pod %s is not scheduled", p.Name))
	case !ztunnels[p.Spec.NodeName]:
		problems = append(problems, fmt.Sprintf("pod %s runs on node %s, which has no ready ztunnel", p.Name, p.Spec.NodeName))
	}
	return pc, problems
}

// waypointProblems, with a waypoint configured, says whether namespace ns
// does not use it, or no ready waypoint pod was found (waypointUp false).
func (a *ambient) waypointProblems(ns *corev1.Namespace, waypointUp bool) []string {
	if a.waypoint == "" {
		return nil
	}
	var problems []string
	if got := ns.Labels[ambientUseWaypoint]; got != a.waypoint {
		problems = append(problems, fmt.Sprintf("the namespace is not labelled %s=%s (got %q)", ambientUseWaypoint, a.waypoint, got))
	}
	if !waypointUp {
		problems = append(problems, fmt.Sprintf("no ready waypoint pod %s=%s in the namespace (is there a Gateway %q of class istio-waypoint?)",
			gatewayNameLabel, a.waypoint, a.waypoint))
	}
	return problems
}

// MTLS reads every ztunnel's metrics (port 15020, /metrics) through the API
// server and keeps the edges that touch namespace. With a waypoint it also
// reads the waypoint's own metrics (Envoy's, port 15090) and proves the
// path through it (WaypointEdges).
func (a *ambient) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	zs, err := livePods(ctx, c, a.zns, "app=ztunnel")
	if err != nil {
		return nil, err
	}
	var rs []io.Reader
	for i := range zs {
		body, err := scrape(ctx, c, &zs[i], ztunnelStatsPort, "metrics")
		if err != nil {
			return nil, fmt.Errorf("istio-ambient: %w", err)
		}
		rs = append(rs, bytes.NewReader(body))
	}
	all, err := ZtunnelEdges(rs...)
	if err != nil {
		return nil, err
	}
	var out []Edge
	for _, e := range all {
		if strings.HasPrefix(e.Src, namespace+"/") || strings.HasPrefix(e.Dst, namespace+"/") {
			out = append(out, e)
		}
	}
	if a.waypoint == "" {
		return out, nil
	}
	wps, err := livePods(ctx, c, namespace, gatewayNameLabel+"="+a.waypoint)
	if err != nil {
		return nil, err
	}
	if len(wps) == 0 {
		return nil, fmt.Errorf("istio-ambient: no pod of waypoint %s/%s to read", namespace, a.waypoint)
	}
	rs = rs[:0]
	for i := range wps {
		body, err := scrape(ctx, c, &wps[i], istioEnvoyStatsPort, "stats/prometheus")
		if err != nil {
			return nil, fmt.Errorf("istio-ambient: waypoint: %w", err)
		}
		rs = append(rs, bytes.NewReader(body))
	}
	return WaypointEdges(namespace+"/"+a.waypoint, out, rs...)
}

// WaypointEdges proves the path through a waypoint (waypoint, as
// "namespace/name"). The waypoint's own series (reporter="waypoint", which
// name the client and the destination workload and say whether the
// client's connection was mutual TLS) give the edges; ztunnel's legs to
// and from the waypoint are added to their evidence, and an edge is
// secured only when the waypoint and both legs (when seen) say so. A
// ztunnel edge into the waypoint's namespace that did not go through the
// waypoint is not secured: the path bypassed it. The remaining ztunnel
// edges are returned as they are.
func WaypointEdges(waypoint string, ztunnel []Edge, rs ...io.Reader) ([]Edge, error) {
	var obs []observation
	for _, r := range rs {
		ss, err := readSeries(r, "istio_requests_total", "istio_tcp_connections_opened_total")
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if s.value > 0 && s.labels["reporter"] == "waypoint" {
				obs = append(obs, istioObservation(s, true))
			}
		}
	}
	ns, _, _ := strings.Cut(waypoint, "/")
	legs := map[[2]string]Edge{}
	var out []Edge
	for _, e := range ztunnel {
		switch {
		case e.Src == waypoint || e.Dst == waypoint:
			legs[[2]string{e.Src, e.Dst}] = e
			out = append(out, e)
		case strings.HasPrefix(e.Dst, ns+"/"):
			out = append(out, Edge{Src: e.Src, Dst: e.Dst, Evidence: "bypassed waypoint " + waypoint + ": ztunnel saw " + e.Evidence})
		default:
			out = append(out, e)
		}
	}
	for _, w := range mergeEdges(obs) {
		for _, leg := range [][2]string{{w.Src, waypoint}, {waypoint, w.Dst}} {
			if l, ok := legs[leg]; ok {
				w.Secured = w.Secured && l.Secured
				w.Evidence += fmt.Sprintf("; ztunnel %s → %s: %s", leg[0], leg[1], l.Evidence)
			}
		}
		out = append(out, w)
	}
	return MergeEdges(out), nil
}

// ZtunnelEdges reads ztunnel's L4 metrics. Unlike a sidecar's client side,
// ztunnel knows on both ends whether it tunnelled the connection over HBONE,
// so every reporter's connection_security_policy counts.
func ZtunnelEdges(rs ...io.Reader) ([]Edge, error) {
	var obs []observation
	for _, r := range rs {
		ss, err := readSeries(r, "istio_tcp_connections_opened_total", "istio_tcp_sent_bytes_total",
			"istio_tcp_received_bytes_total", "istio_requests_total")
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if s.value > 0 {
				obs = append(obs, istioObservation(s, true))
			}
		}
	}
	return mergeEdges(obs), nil
}

func (a *ambient) defaultVersion() string { return "1.28.0" }

// Charts installs Istio in ambient mode: base, istiod, the CNI node agent
// and ztunnel, all with the ambient profile. A waypoint also needs the
// Gateway API CRDs, which are not Istio's charts: install them first.
func (a *ambient) Charts(o InstallOptions) ([]Chart, error) {
	return istioCharts("istio-ambient", a.ns, "", a.defaultVersion(), o, "ambient", [2]string{"istio-cni", "cni"}, [2]string{"ztunnel", "ztunnel"})
}
