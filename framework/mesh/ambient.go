package mesh

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Istio ambient names.
const (
	ambientDataplaneMode = "istio.io/dataplane-mode"
	ambientUseWaypoint   = "istio.io/use-waypoint"
	ambientRedirection   = "ambient.istio.io/redirection"
	waypointManaged      = "gateway.istio.io/managed"
	gatewayNameLabel     = "gateway.networking.k8s.io/gateway-name"
	ztunnelStatsPort     = 15020
)

type ambient struct{ ns, waypoint string }

func newAmbient(cfg config) *ambient {
	return &ambient{ns: cmp.Or(cfg.namespace, "istio-system"), waypoint: cfg.waypoint}
}

func (a *ambient) Name() string { return "istio-ambient" }

// Detect finds the ztunnel DaemonSet, istiod and istio-cni.
func (a *ambient) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: "istio-ambient", Namespace: a.ns, Threads: Threads{Mode: "unknown"}}
	ds, err := c.AppsV1().DaemonSets(a.ns).Get(ctx, "ztunnel", metav1.GetOptions{})
	if notFound(err) {
		return info, &NotInstalledError{Mesh: "istio-ambient", Looked: fmt.Sprintf("no DaemonSet %s/ztunnel", a.ns)}
	}
	if err != nil {
		return info, fmt.Errorf("istio-ambient: get DaemonSet %s/ztunnel: %w", a.ns, err)
	}
	info.Installed = true
	info.Config = map[string]string{"waypoint": a.waypoint}
	// ztunnel is the pod's first (only) container.
	for _, ctr := range ds.Spec.Template.Spec.Containers[:min(1, len(ds.Spec.Template.Spec.Containers))] {
		info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: ds.Namespace, Name: ds.Name, Image: ctr.Image})
		info.Version = imageTag(ctr.Image)
		lim := ctr.Resources.Limits.Cpu()
		info.Config["ztunnel.limits.cpu"] = lim.String()
		info.Config["ztunnel.requests.cpu"] = ctr.Resources.Requests.Cpu().String()
		if w, ok := envValue(&ctr, "ZTUNNEL_WORKER_THREADS"); ok {
			if n, err := strconv.Atoi(w); err == nil {
				info.Threads = Threads{N: n, Mode: "fixed", Source: "ztunnel ZTUNNEL_WORKER_THREADS"}
			}
		} else {
			info.Threads = Threads{Mode: "auto", Source: "ztunnel ZTUNNEL_WORKER_THREADS unset: ztunnel's default of 2 workers, " +
				"bounded by ZTUNNEL_CPU_LIMIT (limits.cpu=" + lim.String() + ")"}
		}
	}
	comps, _, err := istiod(ctx, c, a.ns, "")
	if err != nil {
		return info, err
	}
	info.Components = append(info.Components, comps...)
	if cni, err := c.AppsV1().DaemonSets(a.ns).Get(ctx, "istio-cni-node", metav1.GetOptions{}); err == nil {
		for _, ctr := range cni.Spec.Template.Spec.Containers {
			info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: cni.Namespace, Name: cni.Name, Image: ctr.Image})
			break
		}
	}
	return info, nil
}

// Enable labels the namespace istio.io/dataplane-mode=ambient, and
// istio.io/use-waypoint=<name> when a waypoint is configured.
func (a *ambient) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	labels := map[string]*string{ambientDataplaneMode: ptr("ambient")}
	if a.waypoint != "" {
		labels[ambientUseWaypoint] = ptr(a.waypoint)
	}
	return setNamespaceMeta(ctx, c, namespace, labels, nil)
}

func (a *ambient) Roles() Roles {
	return Roles{
		NodeProxies: []Workload{{Namespace: a.ns, Labels: map[string]string{"app": "ztunnel"}}},
		Waypoints:   []Workload{{Labels: map[string]string{waypointManaged: "istio.io-mesh-controller"}}},
		ControlPlane: []Workload{
			{Namespace: a.ns, Labels: map[string]string{"app": "istiod"}},
			{Namespace: a.ns, Labels: map[string]string{"k8s-app": "istio-cni-node"}},
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
	ztunnels, err := nodesWith(ctx, c, a.ns, "app=ztunnel")
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
			if a.waypoint != "" && p.Labels[gatewayNameLabel] == a.waypoint && (len(p.Status.Conditions) == 0 || podReady(p)) {
				waypointUp = true
			}
			continue
		}
		workloads++
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
		v.Pods = append(v.Pods, pc)
	}
	if workloads == 0 {
		problems = append(problems, "no running pods to verify")
	}
	if a.waypoint != "" {
		if got := ns.Labels[ambientUseWaypoint]; got != a.waypoint {
			problems = append(problems, fmt.Sprintf("the namespace is not labelled %s=%s (got %q)", ambientUseWaypoint, a.waypoint, got))
		}
		if !waypointUp {
			problems = append(problems, fmt.Sprintf("no ready waypoint pod %s=%s in the namespace (is there a Gateway %q of class istio-waypoint?)",
				gatewayNameLabel, a.waypoint, a.waypoint))
		}
	}
	if len(problems) > 0 {
		return v, &VerifyError{Mesh: "istio-ambient", Namespace: namespace, Meshed: true, Problems: problems}
	}
	return v, nil
}

// MTLS reads every ztunnel's metrics (port 15020, /metrics) through the API
// server and keeps the edges that touch namespace.
func (a *ambient) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	zs, err := livePods(ctx, c, a.ns, "app=ztunnel")
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
	return out, nil
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
