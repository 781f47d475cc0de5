package mesh

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/framework/pki"
)

func init() {
	register(Adapter{Name: "linkerd", Rank: 1, New: func(c config) Mesh { return newLinkerd(c) },
		Proxies: []string{linkerdProxy},
		Marks:   []InjectionMark{{Key: "linkerd.io/inject", Value: "enabled", Annotation: true}}})
}

// Linkerd names.
const (
	linkerdProxy       = "linkerd-proxy"
	linkerdInject      = "linkerd.io/inject"
	linkerdConfigMap   = "linkerd-config"
	linkerdCPLabel     = "linkerd.io/control-plane-ns"
	linkerdAdminPort   = 4191
	linkerdControlPort = 4190
)

type linkerd struct{ ns string }

func newLinkerd(cfg config) *linkerd {
	return &linkerd{ns: cmp.Or(cfg.namespace, "linkerd")}
}

// Name is "linkerd" (Mesh).
func (l *linkerd) Name() string { return "linkerd" }

// linkerdValues is the part of linkerd-config's "values" document that
// matters to a benchmark. The document is Linkerd's, so unknown fields are
// expected and ignored.
type linkerdValues struct {
	LinkerdVersion string `yaml:"linkerdVersion"`
	Proxy          struct {
		Cores                int    `yaml:"cores"`
		NativeSidecar        bool   `yaml:"nativeSidecar"`
		DefaultInboundPolicy string `yaml:"defaultInboundPolicy"`
		Image                struct {
			Name    string `yaml:"name"`
			Version string `yaml:"version"`
		} `yaml:"image"`
		Runtime struct {
			Workers struct {
				Minimum         int     `yaml:"minimum"`
				Maximum         int     `yaml:"maximum"`
				MaximumCPURatio float64 `yaml:"maximumCPURatio"`
			} `yaml:"workers"`
		} `yaml:"runtime"`
		Resources struct {
			CPU struct {
				Limit   string `yaml:"limit"`
				Request string `yaml:"request"`
			} `yaml:"cpu"`
		} `yaml:"resources"`
	} `yaml:"proxy"`
}

// Detect reads the linkerd-config ConfigMap and the control-plane
// Deployments.
func (l *linkerd) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: "linkerd", Namespace: l.ns, Threads: Threads{Mode: "unknown"}}
	cm, err := c.CoreV1().ConfigMaps(l.ns).Get(ctx, linkerdConfigMap, metav1.GetOptions{})
	if notFound(err) {
		return info, &NotInstalledError{Mesh: "linkerd", Looked: fmt.Sprintf("no ConfigMap %s/%s", l.ns, linkerdConfigMap)}
	}
	if err != nil {
		return info, fmt.Errorf("linkerd: get ConfigMap %s/%s: %w", l.ns, linkerdConfigMap, err)
	}
	var v linkerdValues
	if err := yaml.Unmarshal([]byte(cm.Data["values"]), &v); err != nil {
		return info, fmt.Errorf("linkerd: ConfigMap %s/%s: values: %w", l.ns, linkerdConfigMap, err)
	}
	info.Installed = true
	info.Version = v.LinkerdVersion
	p := v.Proxy
	info.Config = map[string]string{
		"linkerdVersion":              v.LinkerdVersion,
		"proxy.image":                 p.Image.Name + ":" + p.Image.Version,
		"proxy.nativeSidecar":         strconv.FormatBool(p.NativeSidecar),
		"proxy.defaultInboundPolicy":  p.DefaultInboundPolicy,
		"proxy.cores":                 strconv.Itoa(p.Cores),
		"proxy.runtime.workers.min":   strconv.Itoa(p.Runtime.Workers.Minimum),
		"proxy.runtime.workers.max":   strconv.Itoa(p.Runtime.Workers.Maximum),
		"proxy.runtime.workers.ratio": strconv.FormatFloat(p.Runtime.Workers.MaximumCPURatio, 'g', -1, 64),
		"proxy.resources.cpu.limit":   p.Resources.CPU.Limit,
		"proxy.resources.cpu.request": p.Resources.CPU.Request,
	}
	info.Threads = linkerdConfigThreads(v)
	deps, err := c.AppsV1().Deployments(l.ns).List(ctx, metav1.ListOptions{LabelSelector: linkerdCPLabel + "=" + l.ns})
	if err != nil {
		return info, fmt.Errorf("linkerd: list control-plane deployments: %w", err)
	}
	for _, d := range deps.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Name == linkerdProxy {
				continue
			}
			info.Components = append(info.Components, Component{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Image: ctr.Image})
			if info.Version == "" {
				info.Version = imageTag(ctr.Image)
			}
			break
		}
	}
	return info, nil
}

// linkerdConfigThreads mirrors how the proxy template turns the values into
// LINKERD2_PROXY_CORES: proxy.cores if set, else runtime.workers.minimum
// (default 1), with a maximum or a CPU ratio making the count variable.
func linkerdConfigThreads(v linkerdValues) Threads {
	w := v.Proxy.Runtime.Workers
	switch {
	case v.Proxy.Cores > 0:
		return Threads{N: v.Proxy.Cores, Mode: "fixed", Source: "linkerd-config proxy.cores"}
	case w.Maximum > 0 || w.MaximumCPURatio > 0:
		return Threads{Mode: "auto", Source: fmt.Sprintf("linkerd-config proxy.runtime.workers: minimum %d, maximum %d, maximumCPURatio %g",
			max(w.Minimum, 1), w.Maximum, w.MaximumCPURatio)}
	default:
		return Threads{N: max(w.Minimum, 1), Mode: "fixed", Source: "linkerd-config proxy.runtime.workers.minimum"}
	}
}

// Enable annotates the namespace linkerd.io/inject=enabled.
func (l *linkerd) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	return setNamespaceMeta(ctx, c, namespace, nil, map[string]*string{linkerdInject: ptr("enabled")})
}

// Roles are the linkerd-proxy sidecar and the pods labelled
// linkerd.io/control-plane-ns as the control plane (Mesh).
func (l *linkerd) Roles() Roles {
	return Roles{
		Sidecars:     []string{linkerdProxy},
		ControlPlane: []Workload{{Namespace: l.ns, Labels: map[string]string{linkerdCPLabel: l.ns}}},
	}
}

// Verify, for the meshed arm, checks that every pod runs a ready
// linkerd-proxy and is not annotated linkerd.io/inject=disabled, reading
// the proxy's threads from LINKERD2_PROXY_CORES; for the baseline, that no
// pod runs a mesh's data plane (Mesh).
func (l *linkerd) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "linkerd", namespace)
	}
	return verifySidecars(ctx, c, "linkerd", namespace, linkerdProxy,
		"is the namespace annotated linkerd.io/inject=enabled, and were the pods restarted after?",
		map[string]string{linkerdInject: "disabled"}, linkerdPodThreads)
}

// linkerdPodThreads reads the worker threads the injector gave the proxy.
func linkerdPodThreads(_ *corev1.Pod, ctr *corev1.Container) Threads {
	cores, ok := envValue(ctr, "LINKERD2_PROXY_CORES")
	if !ok {
		return Threads{Mode: "unknown", Source: "linkerd-proxy has no LINKERD2_PROXY_CORES"}
	}
	n, err := strconv.Atoi(cores)
	if err != nil {
		return Threads{Mode: "unknown", Source: "LINKERD2_PROXY_CORES=" + cores}
	}
	if mx, ok := envValue(ctr, "LINKERD2_PROXY_CORES_MAX"); ok {
		return Threads{Mode: "auto", Source: fmt.Sprintf("LINKERD2_PROXY_CORES=%d, LINKERD2_PROXY_CORES_MAX=%s", n, mx)}
	}
	if r, ok := envValue(ctr, "LINKERD2_PROXY_CORES_MAX_RATIO"); ok {
		return Threads{Mode: "auto", Source: fmt.Sprintf("LINKERD2_PROXY_CORES=%d, LINKERD2_PROXY_CORES_MAX_RATIO=%s", n, r)}
	}
	return Threads{N: n, Mode: "fixed", Source: "LINKERD2_PROXY_CORES"}
}

// MTLS reads every meshed pod's proxy metrics (admin port 4191, /metrics)
// through the API server and merges what they show.
func (l *linkerd) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return nil, err
	}
	var all [][]Edge
	for i := range pods {
		p := &pods[i]
		if _, ok := proxyContainer(p, linkerdProxy); !ok {
			continue
		}
		body, err := scrape(ctx, c, p, linkerdAdminPort, "metrics")
		if err != nil {
			return nil, fmt.Errorf("linkerd: %w", err)
		}
		es, err := LinkerdEdges(workloadOf(p), bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("linkerd: pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		all = append(all, es)
	}
	return MergeEdges(all...), nil
}

// LinkerdEdges reads one linkerd-proxy's metrics, self being the workload
// the proxy belongs to ("namespace/name").
//
// Outbound request_total and tcp_open_total series name the destination
// workload (dst_namespace, dst_deployment, ...) and carry tls="true" when the
// proxy spoke mTLS to a verified server identity (server_id). Inbound series
// on application ports without tls="true" show clients that reached the pod
// in plaintext; their source is unknown. Inbound mTLS series are left to the
// client's own outbound series, which name the workload rather than its
// service account.
//
// What is not traffic between workloads is left out (linkerdLocal): the
// proxy's own hops to and from its application (peer="src" outbound,
// peer="dst" inbound, no_tls_reason="loopback"), the admin and control ports
// (4191, 4190: metrics scrapes and the proxy's probes), and the kubelet's
// probes of the application (the policy controller's default "probe" route
// and authorization). A probe is only told apart at HTTP level, so on a port
// with inbound request_total series the plaintext tcp_open_total series
// (which count the probes' connections too) are left to request_total.
func LinkerdEdges(self string, r io.Reader) ([]Edge, error) {
	ss, err := readSeries(r, "request_total", "tcp_open_total")
	if err != nil {
		return nil, err
	}
	httpPorts := map[string]bool{}
	for _, s := range ss {
		if s.name == "request_total" && s.labels["direction"] == "inbound" {
			httpPorts[s.labels["target_port"]] = true
		}
	}
	var obs []observation
	for _, s := range ss {
		l := s.labels
		if s.value <= 0 || linkerdLocal(l) {
			continue
		}
		secured := l["tls"] == "true"
		ev := describe(s, "direction", "peer", "target_port", "tls", "no_tls_reason", "server_id")
		switch l["direction"] {
		case "outbound":
			obs = append(obs, observation{src: self, dst: linkerdDst(l), secured: secured, authoritative: true, evidence: ev})
		case "inbound":
			if secured || s.name == "tcp_open_total" && httpPorts[l["target_port"]] {
				continue
			}
			obs = append(obs, observation{src: "unknown", dst: self, secured: false, authoritative: true, evidence: ev})
		}
	}
	return mergeEdges(obs), nil
}

// linkerdLocal reports whether a series of a linkerd-proxy counts traffic
// that is not between two workloads: the proxy's hop to or from its own
// application over loopback, its admin and control ports, or the kubelet's
// probes (the default "probe" route and authorization of Linkerd's policy
// controller).
func linkerdLocal(l map[string]string) bool {
	switch {
	case l["no_tls_reason"] == "loopback":
		return true
	case l["direction"] == "outbound" && l["peer"] == "src", l["direction"] == "inbound" && l["peer"] == "dst":
		return true
	case l["target_port"] == strconv.Itoa(linkerdAdminPort) || l["target_port"] == strconv.Itoa(linkerdControlPort):
		return true
	case l["route_name"] == "probe" && l["route_kind"] == "default", l["authz_name"] == "probe" && l["authz_kind"] == "default":
		return true
	}
	return false
}

func linkerdDst(l map[string]string) string {
	for _, k := range []string{"dst_deployment", "dst_statefulset", "dst_daemonset", "dst_job", "dst_cronjob", "dst_replicationcontroller", "dst_pod"} {
		if v := l[k]; v != "" && l["dst_namespace"] != "" {
			return l["dst_namespace"] + "/" + v
		}
	}
	if a := l["target_addr"]; a != "" {
		return "addr:" + a
	}
	return "unknown"
}

// linkerdRepo is Linkerd's Helm repository of edge releases, the open
// source releases since 2.15.
const linkerdRepo = "https://helm.linkerd.io/edge"

func (l *linkerd) defaultVersion() string { return "2025.10.1" }

// Charts installs linkerd-crds and linkerd-control-plane. Helm installs
// cannot generate Linkerd's identity, so a run-scoped trust anchor and
// issuer (valid 7 days) are made here and passed as values.
func (l *linkerd) Charts(o InstallOptions) ([]Chart, error) {
	v, err := o.version("linkerd", l.defaultVersion())
	if err != nil {
		return nil, err
	}
	chain, err := pki.NewChain("root.linkerd.cluster.local", "identity.linkerd.cluster.local", 7*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("linkerd: identity certificates: %w", err)
	}
	cp := map[string]any{}
	// The chart's images default to linkerdVersion, which a source tree
	// leaves as the placeholder linkerdVersionValue.
	set(cp, "linkerdVersion", linkerdVersionOf(v))
	set(cp, "identityTrustAnchorsPEM", string(chain.RootPEM))
	set(cp, "identity.issuer.tls.crtPEM", string(chain.IssuerPEM))
	set(cp, "identity.issuer.tls.keyPEM", string(chain.IssuerKeyPEM))
	if r := o.Registry; r != "" {
		set(cp, "controllerImage", r+"/controller")
		set(cp, "proxy.image.name", r+"/proxy")
		set(cp, "proxyInit.image.name", r+"/proxy-init")
		// The policy controller runs from controllerImage: the chart has
		// had no policyController.image since it merged the two images.
		set(cp, "debugContainer.image.name", r+"/debug")
	}
	return []Chart{
		{Release: "linkerd-crds", Namespace: l.ns, Name: "linkerd-crds", Repo: linkerdRepo, Version: v, Values: map[string]any{}},
		{Release: "linkerd-control-plane", Namespace: l.ns, Name: "linkerd-control-plane", Repo: linkerdRepo, Version: v, Values: cp,
			Pins: []string{"linkerdVersion"}},
	}, nil
}

// linkerdVersionOf is the image tag of a Linkerd chart version: an edge
// chart 2025.10.1 runs edge-25.10.1, a stable chart 2.14.10 stable-2.14.10.
func linkerdVersionOf(chartVersion string) string {
	var y, m, p int
	if n, _ := fmt.Sscanf(chartVersion, "%d.%d.%d", &y, &m, &p); n == 3 && y >= 2000 {
		return fmt.Sprintf("edge-%02d.%d.%d", y%100, m, p)
	}
	return "stable-" + chartVersion
}
