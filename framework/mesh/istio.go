package mesh

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func init() {
	register(Adapter{Name: "istio", Rank: 2, New: func(c config) Mesh { return newIstio(c) },
		Proxies: []string{istioProxy},
		Marks:   []InjectionMark{{Key: "istio-injection", Value: "enabled"}, {Key: "istio.io/rev"}}})
}

// Istio names.
const (
	istioProxy          = "istio-proxy"
	istioInjection      = "istio-injection"
	istioRev            = "istio.io/rev"
	istioProxyConfig    = "proxy.istio.io/config"
	istioSidecarInject  = "sidecar.istio.io/inject"
	istioStatus         = "sidecar.istio.io/status"
	istioEnvoyStatsPort = 15090
)

// Istio's per-pod sidecar resource annotations. When any is set, the
// injection template takes the proxy's resources from the annotations
// alone, dropping the chart's global.proxy.resources (and its 2-CPU limit).
const (
	istioProxyCPU      = "sidecar.istio.io/proxyCPU"
	istioProxyMemory   = "sidecar.istio.io/proxyMemory"
	istioProxyCPULimit = "sidecar.istio.io/proxyCPULimit"
)

// Istio sidecar defaults meshbench sets on every meshed pod: the chart's
// requests, no limit, and 2 Envoy workers (what a default install runs,
// since pilot-agent sizes Envoy from the chart's 2-CPU limit).
const (
	istioDefaultConcurrency = 2
	istioSidecarCPU         = "100m"
	istioSidecarMemory      = "128Mi"
)

type istio struct {
	ns, rev string
	// concurrency is Envoy's worker threads on every meshed pod (0: one
	// per core of the node); cpuLimit the sidecar's CPU limit, "" for none.
	concurrency int
	cpuLimit    string
}

func newIstio(cfg config) *istio {
	i := &istio{ns: cmp.Or(cfg.namespace, "istio-system"), rev: cfg.revision, concurrency: istioDefaultConcurrency, cpuLimit: cfg.sidecarCPULimit}
	if cfg.sidecarConcurrency != nil {
		i.concurrency = *cfg.sidecarConcurrency
	}
	return i
}

// Name is "istio" (Mesh).
func (i *istio) Name() string { return "istio" }

// Revisioned is a mesh whose control plane runs in revisions side by side
// (Istio's istio.io/rev), each injecting the namespaces labelled for it:
// the way to run two versions' data planes in one cluster at once.
type Revisioned interface {
	Mesh
	// Revision is the revision that injects the adapter's namespaces; ""
	// is the default injector (istio-injection=enabled).
	Revision() string
	// AtRevision is the same adapter, with its settings, for revision rev.
	AtRevision(rev string) Mesh
}

// Revision implements Revisioned.
func (i *istio) Revision() string { return i.rev }

// AtRevision implements Revisioned.
func (i *istio) AtRevision(rev string) Mesh {
	j := *i
	j.rev = rev
	return &j
}

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
	meshDefault := istioThreads(mc.DefaultConfig.Concurrency, "mesh config defaultConfig.concurrency")
	info.Config["defaultConfig.concurrency"] = meshDefault.String()
	n := i.concurrency
	info.Threads = istioThreads(&n, "pod annotation "+istioProxyConfig+" concurrency, set by meshbench on every meshed pod")
	for k, v := range i.sidecarAnnotations() {
		info.Config["sidecar."+k] = v
	}
	info.Config["sidecar.cpuLimit"] = cmp.Or(i.cpuLimit, "none")
	return info, nil
}

// sidecarAnnotations are the annotations Inject puts on a meshed pod.
func (i *istio) sidecarAnnotations() map[string]string {
	a := map[string]string{
		istioProxyConfig: fmt.Sprintf("concurrency: %d\n", i.concurrency),
		istioProxyCPU:    istioSidecarCPU,
		istioProxyMemory: istioSidecarMemory,
	}
	if i.cpuLimit != "" {
		a[istioProxyCPULimit] = i.cpuLimit
	}
	return a
}

// Inject makes the sidecar's threads and resources explicit on a meshed
// pod template: Envoy's concurrency in proxy.istio.io/config (pilot-agent
// otherwise derives it from the CPU limit, ISTIO_CPU_LIMIT, which without a
// limit is the node's core count), and the proxy's requests and CPU limit
// (none unless WithSidecarCPULimit) in the sidecar.istio.io/proxy*
// annotations, which replace the chart's default resources (a 2-CPU limit
// that would throttle Envoy).
func (i *istio) Inject(t *corev1.PodTemplateSpec) error {
	if i.cpuLimit != "" {
		if _, err := resource.ParseQuantity(i.cpuLimit); err != nil {
			return fmt.Errorf("istio: sidecar CPU limit %q: %w", i.cpuLimit, err)
		}
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	for k, v := range i.sidecarAnnotations() {
		t.Annotations[k] = v
	}
	return nil
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
	for _, d := range defaultRevision(deps.Items, rev) {
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 { // discovery is the first container
			comps = append(comps, Component{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Image: cs[0].Image})
			if version == "" {
				version = imageTag(cs[0].Image)
			}
		}
	}
	return comps, version, nil
}

// defaultRevision keeps, when no revision was asked for (rev ""), the
// istiods of the default revision (istio.io/rev unset or "default") if
// there are any beside revisioned ones: a canary istiod installed beside
// the default one is not the default injector.
func defaultRevision(deps []appsv1.Deployment, rev string) []appsv1.Deployment {
	if rev != "" {
		return deps
	}
	var def []appsv1.Deployment
	for _, d := range deps {
		if r := d.Labels[istioRev]; r == "" || r == "default" {
			def = append(def, d)
		}
	}
	if len(def) == 0 {
		return deps
	}
	return def
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
// unset lets pilot-agent set it to the proxy's CPU limit (ISTIO_CPU_LIMIT,
// from the downward API, which without a limit gives the node's cores; see
// pilot/cmd/pilot-agent/config), 0 means one worker per core of the node.
func istioThreads(concurrency *int, source string) Threads {
	switch {
	case concurrency == nil:
		return Threads{Mode: "auto", Source: source + " unset: pilot-agent sets it to the proxy's CPU limit, ISTIO_CPU_LIMIT, which without a limit is the node's core count"}
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

// Roles are the istio-proxy sidecar and istiod as the control plane
// (Mesh): with a revision, that revision's istiod only, so that in a
// canary each arm's control plane is the istiod that injected it; without
// one, every istiod.
func (i *istio) Roles() Roles {
	return Roles{
		Sidecars:     []string{istioProxy},
		ControlPlane: []Workload{istiodOf(i.ns, i.rev)},
	}
}

// istiodOf is the istiod pods of revision rev in namespace ns, every
// revision's when rev is "".
func istiodOf(ns, rev string) Workload {
	labels := map[string]string{"app": "istiod"}
	if rev != "" {
		labels[istioRev] = rev
	}
	return Workload{Namespace: ns, Labels: labels}
}

// Verify, for the meshed arm, checks that every pod runs a ready
// istio-proxy, is not opted out and was injected by the adapter's
// revision, noting where a sidecar differs from what Inject asked; for
// the baseline, that no pod runs a mesh's data plane (Mesh).
func (i *istio) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "istio", namespace)
	}
	hint := "is the namespace labelled istio-injection=enabled, and were the pods restarted after?"
	if i.rev != "" {
		hint = "is the namespace labelled istio.io/rev=" + i.rev + ", and were the pods restarted after?"
	}
	v, err := verifySidecars(ctx, c, "istio", namespace, istioProxy, hint,
		map[string]string{istioSidecarInject: "false"}, istioPodThreads)
	pods, lerr := livePods(ctx, c, namespace, "")
	if lerr != nil {
		return v, errors.Join(err, lerr)
	}
	v.Notes = append(v.Notes, i.checkSidecars(ctx, c, pods, v.Pods)...)
	return v, withProblems(err, &v, i.checkRevisions(pods, v.Pods))
}

// checkRevisions records in checks the revision that injected each
// meshed pod's sidecar and, when the adapter has a revision, returns a
// problem for every sidecar another revision (or an unknown one) injected.
func (i *istio) checkRevisions(pods []corev1.Pod, checks []PodCheck) []string {
	var problems []string
	for k := range pods {
		p := &pods[k]
		if _, ok := proxyContainer(p, istioProxy); !ok {
			continue
		}
		got, from := PodRevision(p)
		for j := range checks {
			if checks[j].Pod == p.Name {
				checks[j].Revision = got
			}
		}
		switch {
		case i.rev == "" || got == i.rev:
		case got == "":
			problems = append(problems, fmt.Sprintf("pod %s: its sidecar names no revision (no %s annotation, no %s label), so it is not known to come from revision %s", p.Name, istioStatus, istioRev, i.rev))
		default:
			problems = append(problems, fmt.Sprintf("pod %s: its sidecar was injected by Istio revision %s (%s), not by revision %s, the one its namespace is labelled for (%s=%s)",
				p.Name, got, from, i.rev, istioRev, i.rev))
		}
	}
	return problems
}

// PodRevision is the Istio revision whose injector made pod p's sidecar,
// and where it was read: the revision in the sidecar.istio.io/status
// annotation the injector writes, else the pod's istio.io/rev label (which
// the injection template sets too); "" when the pod says neither.
func PodRevision(p *corev1.Pod) (rev, from string) {
	var st struct {
		Revision string `json:"revision"`
	}
	if a, ok := p.Annotations[istioStatus]; ok && json.Unmarshal([]byte(a), &st) == nil && st.Revision != "" {
		return st.Revision, "annotation " + istioStatus
	}
	if r := p.Labels[istioRev]; r != "" {
		return r, "label " + istioRev
	}
	return "", ""
}

// checkSidecars compares each meshed pod's sidecar with the settings
// Inject asked for, and replaces the configured threads in checks with the
// concurrency Envoy really runs (its server.concurrency gauge). What does
// not match is returned as notes.
func (i *istio) checkSidecars(ctx context.Context, c kubernetes.Interface, pods []corev1.Pod, checks []PodCheck) []string {
	var notes []string
	for k := range pods {
		p := &pods[k]
		ctr, ok := proxyContainer(p, istioProxy)
		if !ok {
			continue
		}
		if got, want := ctr.Resources.Limits.Cpu().String(), cmp.Or(i.cpuLimit, "0"); !quantityEqual(got, want) {
			how := istioProxyCPULimit
			if i.cpuLimit == "" {
				how = istioProxyCPU + " without " + istioProxyCPULimit
			}
			notes = append(notes, fmt.Sprintf("pod %s: istio-proxy has CPU limit %s, not %s as meshbench asked with %s: "+
				"the injection template did not apply the annotations", p.Name, noneIfZero(got), cmp.Or(i.cpuLimit, "none"), how))
		}
		n, err := envoyConcurrencyOf(ctx, c, p)
		if err != nil {
			notes = append(notes, fmt.Sprintf("pod %s: Envoy's concurrency not read: %v", p.Name, err))
			continue
		}
		if n != i.concurrency && i.concurrency != 0 {
			notes = append(notes, fmt.Sprintf("pod %s: Envoy runs %d workers, not the %d meshbench set in %s", p.Name, n, i.concurrency, istioProxyConfig))
		}
		for j := range checks {
			if checks[j].Pod == p.Name {
				checks[j].Threads = &Threads{N: n, Mode: "fixed", Source: "Envoy's envoy_server_concurrency (:15090/stats/prometheus)"}
			}
		}
	}
	return notes
}

func noneIfZero(q string) string {
	if q == "0" {
		return "none"
	}
	return q
}

func quantityEqual(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && qa.Cmp(qb) == 0
}

// envoyConcurrencyOf reads the worker threads of a pod's Envoy from its
// stats (the server.concurrency gauge, which Istio's bootstrap keeps: its
// stats inclusion list has the "server" prefix).
func envoyConcurrencyOf(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) (int, error) {
	body, err := scrape(ctx, c, p, istioEnvoyStatsPort, "stats/prometheus")
	if err != nil {
		return 0, err
	}
	return EnvoyConcurrency(bytes.NewReader(body))
}

// EnvoyConcurrency reads Envoy's worker threads, the envoy_server_concurrency
// gauge, from its Prometheus stats.
func EnvoyConcurrency(r io.Reader) (int, error) {
	ss, err := readSeries(r, "envoy_server_concurrency")
	if err != nil {
		return 0, err
	}
	if len(ss) == 0 {
		return 0, errors.New("no envoy_server_concurrency in Envoy's stats")
	}
	return int(ss[0].value), nil
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

// istioHub is where Istio's releases publish their images.
const istioHub = "docker.io/istio"

// istioCharts returns base and istiod, then the extra releases (ambient's
// cni and ztunnel, as {release, chart} pairs), all of one version, with the
// profile (when set). Every chart that runs images gets its hub (the
// registry, else Istio's) and tag (the version) set and pinned, so that
// charts read from a source tree (hub registry.istio.io/testing, tag
// latest) run the release's images too.
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
		c := Chart{Release: release, Namespace: ns, Name: name, Repo: istioRepo, Version: v, Values: values}
		hub, tag := "global.hub", "global.tag"
		if name == "ztunnel" {
			hub, tag = "hub", "tag" // the ztunnel chart reads its hub and tag at the top level
		}
		switch {
		case name == "base": // no images; the registry only for its global values, as before
			if o.Registry != "" {
				set(values, hub, o.Registry)
			}
		default:
			set(values, hub, cmp.Or(o.Registry, istioHub))
			set(values, tag, v)
			c.Pins = []string{hub, tag}
		}
		return c
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
