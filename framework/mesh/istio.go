package mesh

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Istio names.
const (
	istioProxy          = "istio-proxy"
	istioInjection      = "istio-injection"
	istioRev            = "istio.io/rev"
	istioProxyConfig    = "proxy.istio.io/config"
	istioSidecarInject  = "sidecar.istio.io/inject"
	istioEnvoyStatsPort = 15090
)

type istio struct{ ns, rev string }

func newIstio(cfg config) *istio {
	return &istio{ns: cmp.Or(cfg.namespace, "istio-system"), rev: cfg.revision}
}

func (i *istio) Name() string { return "istio" }

// istioMeshConfig is the part of the istio ConfigMap's "mesh" document that
// matters to a benchmark.
type istioMeshConfig struct {
	TrustDomain           string `yaml:"trustDomain"`
	EnablePrometheusMerge *bool  `yaml:"enablePrometheusMerge"`
	DefaultConfig         struct {
		Concurrency *int `yaml:"concurrency"`
	} `yaml:"defaultConfig"`
	OutboundTrafficPolicy struct {
		Mode string `yaml:"mode"`
	} `yaml:"outboundTrafficPolicy"`
}

// Detect finds istiod (of the configured revision) and reads the mesh
// config.
func (i *istio) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: "istio", Namespace: i.ns, Threads: Threads{Mode: "unknown"}}
	comps, version, err := istiod(ctx, c, i.ns, i.rev)
	if err != nil {
		return info, err
	}
	if len(comps) == 0 {
		return info, &NotInstalledError{Mesh: "istio", Looked: fmt.Sprintf("no Deployment labelled app=istiod in %s%s", i.ns, revNote(i.rev))}
	}
	info.Installed, info.Version, info.Components = true, version, comps
	info.Config = map[string]string{"revision": i.rev}
	mc, err := istioMesh(ctx, c, i.ns, i.rev)
	if err != nil {
		return info, err
	}
	info.Config["trustDomain"] = mc.TrustDomain
	info.Config["outboundTrafficPolicy.mode"] = mc.OutboundTrafficPolicy.Mode
	info.Threads = istioThreads(mc.DefaultConfig.Concurrency, "mesh config defaultConfig.concurrency")
	if mc.DefaultConfig.Concurrency != nil {
		info.Config["defaultConfig.concurrency"] = strconv.Itoa(*mc.DefaultConfig.Concurrency)
	}
	return info, nil
}

func revNote(rev string) string {
	if rev == "" {
		return ""
	}
	return " with istio.io/rev=" + rev
}

// istiod lists the istiod Deployments and returns them and the version of
// the first, from its discovery container's image tag.
func istiod(ctx context.Context, c kubernetes.Interface, ns, rev string) ([]Component, string, error) {
	sel := "app=istiod"
	if rev != "" {
		sel += "," + istioRev + "=" + rev
	}
	deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, "", fmt.Errorf("istio: list istiod deployments in %s: %w", ns, err)
	}
	var comps []Component
	version := ""
	for _, d := range deps.Items {
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 { // discovery is the first container
			comps = append(comps, Component{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Image: cs[0].Image})
			if version == "" {
				version = imageTag(cs[0].Image)
			}
		}
	}
	return comps, version, nil
}

// istioMesh reads the mesh config of a revision: ConfigMap istio, or
// istio-<rev> for a non-default revision.
func istioMesh(ctx context.Context, c kubernetes.Interface, ns, rev string) (istioMeshConfig, error) {
	var mc istioMeshConfig
	name := "istio"
	if rev != "" && rev != "default" {
		name = "istio-" + rev
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if notFound(err) {
		return mc, nil // istiod runs on its built-in defaults
	}
	if err != nil {
		return mc, fmt.Errorf("istio: get ConfigMap %s/%s: %w", ns, name, err)
	}
	if err := yaml.Unmarshal([]byte(cm.Data["mesh"]), &mc); err != nil {
		return mc, fmt.Errorf("istio: ConfigMap %s/%s: mesh: %w", ns, name, err)
	}
	return mc, nil
}

// istioThreads describes Envoy's worker threads from ProxyConfig.concurrency:
// unset lets pilot-agent size it from the proxy's CPU request or limit,
// 0 means one worker per core of the node.
func istioThreads(concurrency *int, source string) Threads {
	switch {
	case concurrency == nil:
		return Threads{Mode: "auto", Source: source + " unset: pilot-agent derives it from the proxy's CPU request/limit"}
	case *concurrency == 0:
		return Threads{Mode: "all-cores", Source: source + "=0: one Envoy worker per core of the node"}
	default:
		return Threads{N: *concurrency, Mode: "fixed", Source: source}
	}
}

// Enable labels the namespace istio-injection=enabled, or, with a revision,
// istio.io/rev=<rev> (removing istio-injection, which would take precedence).
func (i *istio) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	if i.rev == "" {
		return setNamespaceMeta(ctx, c, namespace, map[string]*string{istioInjection: ptr("enabled")}, nil)
	}
	return setNamespaceMeta(ctx, c, namespace, map[string]*string{istioRev: ptr(i.rev), istioInjection: nil}, nil)
}

func (i *istio) Roles() Roles {
	return Roles{
		Sidecars:     []string{istioProxy},
		ControlPlane: []Workload{{Namespace: i.ns, Labels: map[string]string{"app": "istiod"}}},
	}
}

func (i *istio) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "istio", namespace)
	}
	hint := "is the namespace labelled istio-injection=enabled, and were the pods restarted after?"
	if i.rev != "" {
		hint = "is the namespace labelled istio.io/rev=" + i.rev + ", and were the pods restarted after?"
	}
	return verifySidecars(ctx, c, "istio", namespace, istioProxy, hint,
		map[string]string{istioSidecarInject: "false"}, istioPodThreads)
}

// istioPodThreads reads Envoy's concurrency from the pod's
// proxy.istio.io/config annotation, else from the PROXY_CONFIG the injector
// put in the proxy's environment.
func istioPodThreads(p *corev1.Pod, ctr *corev1.Container) Threads {
	if a, ok := p.Annotations[istioProxyConfig]; ok {
		var pc struct {
			Concurrency *int `yaml:"concurrency"`
		}
		if err := yaml.Unmarshal([]byte(a), &pc); err == nil && pc.Concurrency != nil {
			return istioThreads(pc.Concurrency, "pod annotation "+istioProxyConfig+" concurrency")
		}
	}
	if env, ok := envValue(ctr, "PROXY_CONFIG"); ok {
		var pc struct {
			Concurrency *int `json:"concurrency"`
		}
		if err := json.Unmarshal([]byte(env), &pc); err == nil {
			return istioThreads(pc.Concurrency, "istio-proxy PROXY_CONFIG concurrency")
		}
	}
	return istioThreads(nil, "concurrency")
}

// MTLS reads every sidecar's Envoy stats (port 15090, /stats/prometheus)
// through the API server.
func (i *istio) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return nil, err
	}
	var rs []io.Reader
	for k := range pods {
		p := &pods[k]
		if _, ok := proxyContainer(p, istioProxy); !ok {
			continue
		}
		body, err := scrape(ctx, c, p, istioEnvoyStatsPort, "stats/prometheus")
		if err != nil {
			return nil, fmt.Errorf("istio: %w", err)
		}
		rs = append(rs, bytes.NewReader(body))
	}
	return IstioEdges(rs...)
}

// IstioEdges reads Istio's standard metrics (istio_requests_total,
// istio_tcp_connections_opened_total) from one or more proxies. A series
// reported by the destination (or a waypoint) is authoritative: its
// connection_security_policy is "mutual_tls" or "none". The client side
// (reporter="source") always reports "unknown", so an edge seen only from
// the client is returned as not secured, and the evidence says why.
func IstioEdges(rs ...io.Reader) ([]Edge, error) {
	var obs []observation
	for _, r := range rs {
		ss, err := readSeries(r, "istio_requests_total", "istio_tcp_connections_opened_total")
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if s.value <= 0 {
				continue
			}
			obs = append(obs, istioObservation(s, s.labels["reporter"] != "source"))
		}
	}
	return mergeEdges(obs), nil
}

func istioObservation(s series, authoritative bool) observation {
	l := s.labels
	return observation{
		src:           workloadName(l["source_workload_namespace"], l["source_workload"]),
		dst:           workloadName(l["destination_workload_namespace"], l["destination_workload"]),
		secured:       l["connection_security_policy"] == "mutual_tls",
		authoritative: authoritative,
		evidence:      describe(s, "reporter", "connection_security_policy"),
	}
}

// istioRepo is the official Istio Helm repository.
const istioRepo = "https://istio-release.storage.googleapis.com/charts"

func (i *istio) defaultVersion() string { return "1.28.0" }

// Charts installs Istio in sidecar mode: base (CRDs, cluster roles) and
// istiod, of revision rev when the adapter has one.
func (i *istio) Charts(o InstallOptions) ([]Chart, error) {
	return istioCharts("istio", i.ns, i.rev, i.defaultVersion(), o, "")
}

// istioCharts returns base and istiod, then the extra releases (ambient's
// cni and ztunnel, as {release, chart} pairs), all of one version, with the
// profile (when set) and the registry as their hub.
func istioCharts(mesh, ns, rev, def string, o InstallOptions, profile string, extra ...[2]string) ([]Chart, error) {
	v, err := o.version(mesh, def)
	if err != nil {
		return nil, err
	}
	chart := func(release, name string) Chart {
		values := map[string]any{}
		if profile != "" {
			values["profile"] = profile
		}
		if o.Registry != "" {
			hub := "global.hub"
			if name == "ztunnel" {
				hub = "hub" // the ztunnel chart reads its hub at the top level
			}
			set(values, hub, o.Registry)
		}
		return Chart{Release: release, Namespace: ns, Name: name, Repo: istioRepo, Version: v, Values: values}
	}
	base := chart("istio-base", "base")
	base.Values["defaultRevision"] = cmp.Or(rev, "default")
	istiod := chart("istiod", "istiod")
	if rev != "" {
		istiod.Release = "istiod-" + rev
		istiod.Values["revision"] = rev
	}
	out := []Chart{base, istiod}
	for _, e := range extra {
		out = append(out, chart(e[0], e[1]))
	}
	return out, nil
}
