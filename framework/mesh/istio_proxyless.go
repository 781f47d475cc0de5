package mesh

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/framework/testbed"
)

func init() {
	register(Adapter{Name: proxylessName, Rank: 3, New: func(c config) Mesh { return newProxyless(c) },
		Proxies: []string{istioProxy},
		Marks:   []InjectionMark{{Key: istioInjection, Value: "enabled"}, {Key: istioRev}}})
}

// Istio proxyless gRPC names.
const (
	proxylessName = "istio-proxyless"
	// istioInjectTemplates picks the injection templates of a pod; the
	// grpc-agent template runs pilot-agent without Envoy (DISABLE_ENVOY)
	// beside the app, whose gRPC reads GRPC_XDS_BOOTSTRAP.
	istioInjectTemplates = "inject.istio.io/templates"
	grpcAgentTemplate    = "grpc-agent"
	// istioTLSModeLabel makes istiod send the pod's endpoints to clients as
	// mTLS endpoints; the grpc-agent template leaves it to the user.
	istioTLSModeLabel = "security.istio.io/tlsMode"
	// proxylessHoldConfig is the pod's ProxyConfig: the injector puts
	// istio-proxy first, and its postStart (pilot-agent wait) holds the app
	// until the agent is ready.
	proxylessHoldConfig = `{"holdApplicationUntilProxyStarts": true}`
	// The backend's endpoint of what its gRPC server's TLS saw.
	proxylessPeersPort = 8080
	proxylessPeersPath = "meshbench/peers"
	// istiod's monitoring port, where istio_build names its build.
	istiodMonitoringPort = 15014
	// managedBy labels the policies the adapter applies.
	managedByLabel = "app.kubernetes.io/managed-by"
)

// ProxylessDefaultVersion is the version the adapter installs by default:
// the tag of the images hack/offline/istio.sh builds from the
// ISTIO_VERSION_131 pin (`istio.sh 131 tags`).
const ProxylessDefaultVersion = "1.31-dev.eed52ebb66ad"

// ProxylessPublishedVersion is the version the adapter installs on a
// cluster that pulls its own images (InstallOptions.Published, a remote
// cluster): Istio's release, whose pilot and proxyv2 images Istio
// publishes (docker.io/istio), as the istio adapter's default.
const ProxylessPublishedVersion = "1.28.0"

// proxylessHub is where the offline images are: meshbench/pilot and
// meshbench/proxyv2-agent, loaded into kind by istio.sh.
const proxylessHub = "meshbench"

// proxylessAgentImage is the agent image's name under the hub: pilot-agent
// without Envoy.
const proxylessAgentImage = "proxyv2-agent"

// devTag matches the tags istio.sh gives its images (1.31-dev.<commit>).
var devTag = regexp.MustCompile(`^1\.[0-9]+-dev\.[0-9a-f]{12}$`)

type proxyless struct {
	ns, rev string
	// words say the settings its errors advise.
	words testbed.Words
	// applied are the policies Enable applied, which Cleanup removes.
	applied []appliedObject
}

// appliedObject is one object the adapter created: its collection's API
// path and its name.
type appliedObject struct{ path, name string }

func (o appliedObject) String() string { return o.path + "/" + o.name }

func newProxyless(cfg config) *proxyless {
	return &proxyless{ns: cmp.Or(cfg.namespace, "istio-system"), rev: cfg.revision, words: cfg.words}
}

// Name is "istio-proxyless" (Mesh).
func (p *proxyless) Name() string { return proxylessName }

// DialScheme is "xds": the meshed loadgen dials xds:///service:port (InApp).
func (p *proxyless) DialScheme() string { return "xds" }

// Revision implements Revisioned.
func (p *proxyless) Revision() string { return p.rev }

// AtRevision implements Revisioned; the copy has applied nothing.
func (p *proxyless) AtRevision(rev string) Mesh {
	return &proxyless{ns: p.ns, rev: rev, words: p.words}
}

func (p *proxyless) defaultVersion() string { return ProxylessDefaultVersion }

// Detect finds istiod of the adapter's revision, reads its mesh config
// and the build its istio_build metric names (through the API server's pod
// proxy; a clientset without a REST client leaves it out).
func (p *proxyless) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: proxylessName, Namespace: p.ns, Threads: Threads{Mode: "unknown",
		Source: "proxyless gRPC runs no proxy: the app's own gRPC carries the traffic, on the app's threads"}}
	comps, version, err := istiod(ctx, c, p.ns, p.rev)
	if err != nil {
		return info, err
	}
	if len(comps) == 0 {
		return info, &NotInstalledError{Mesh: proxylessName,
			Looked: fmt.Sprintf("no Deployment labelled app=istiod in %s%s (revision %q is not installed)", p.ns, revNote(p.rev), cmp.Or(p.rev, "default"))}
	}
	info.Installed, info.Version, info.Components = true, version, comps
	mc, err := istioMesh(ctx, c, p.ns, p.rev)
	if err != nil {
		return info, err
	}
	info.Config = map[string]string{
		"revision":           p.rev,
		"trustDomain":        cmp.Or(mc.TrustDomain, "cluster.local"),
		"dataplane":          "proxyless gRPC: the app's xDS client and server, with pilot-agent (no Envoy) beside it; not Envoy",
		"injectTemplate":     grpcAgentTemplate,
		istioProxyConfig:     proxylessHoldConfig,
		"mtls":               "STRICT PeerAuthentication and an ISTIO_MUTUAL DestinationRule, applied by meshbench in the meshed namespace",
		"istiod.istio_build": p.buildOf(ctx, c),
	}
	return info, nil
}

// buildOf reads the tag of istiod's istio_build metric (the version stamp
// istio.sh sets), or says why it is unread.
func (p *proxyless) buildOf(ctx context.Context, c kubernetes.Interface) string {
	sel := "app=istiod"
	if p.rev != "" {
		sel += "," + istioRev + "=" + p.rev
	}
	pods, err := livePods(ctx, c, p.ns, sel)
	if err != nil {
		return "unread: " + err.Error()
	}
	if len(pods) == 0 {
		return "unread: no istiod pod labelled " + sel + " in " + p.ns
	}
	body, err := scrape(ctx, c, &pods[0], istiodMonitoringPort, "metrics")
	if err != nil {
		return "unread: " + err.Error()
	}
	ss, err := readSeries(bytes.NewReader(body), "istio_build")
	if err != nil {
		return "unread: " + err.Error()
	}
	for _, s := range ss {
		if s.labels["component"] == "pilot" {
			return s.labels["tag"]
		}
	}
	return "unread: no istio_build{component=\"pilot\"} in istiod's metrics"
}

// Inject asks the injector for the grpc-agent template, with the app held
// until pilot-agent is ready (its certificate and the xDS bootstrap are
// there), and labels the pod an mTLS endpoint (Injector).
func (p *proxyless) Inject(t *corev1.PodTemplateSpec) error {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Annotations[istioInjectTemplates] = grpcAgentTemplate
	t.Annotations[istioProxyConfig] = proxylessHoldConfig
	t.Labels[istioTLSModeLabel] = "istio"
	return nil
}

// Enable refuses a revision that is not installed, labels the namespace
// for the adapter's revision (as istio does), and applies STRICT mTLS in
// it: a PeerAuthentication and an ISTIO_MUTUAL DestinationRule for its
// services, which Cleanup removes.
func (p *proxyless) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	comps, _, err := istiod(ctx, c, p.ns, p.rev)
	if err != nil {
		return err
	}
	if len(comps) == 0 {
		return fmt.Errorf("%s: revision %q is not installed (no Deployment labelled app=istiod in %s%s): namespace %s would be injected by nothing",
			proxylessName, cmp.Or(p.rev, "default"), p.ns, revNote(p.rev), namespace)
	}
	if err := (&istio{rev: p.rev}).Enable(ctx, c, namespace); err != nil {
		return fmt.Errorf("%s: %w", proxylessName, err)
	}
	rc, err := restOf(c)
	if err != nil {
		return fmt.Errorf("%s: applying the mTLS policies: %w", proxylessName, err)
	}
	for _, o := range proxylessPolicies(namespace) {
		if err := p.apply(ctx, rc, namespace, o); err != nil {
			return err
		}
	}
	return nil
}

// policy is one Istio object the adapter applies in a namespace.
type policy struct {
	// APIVersion is the object's group/version; Resource its collection
	// (the plural), Kind and Name its kind and name.
	APIVersion, Resource, Kind, Name string
	// Spec is the object's spec.
	Spec map[string]any
}

// path is the API path of the policy's collection in namespace.
func (o policy) path(namespace string) string {
	return "/apis/" + o.APIVersion + "/namespaces/" + namespace + "/" + o.Resource
}

// proxylessPolicies are the objects that make a namespace STRICT mTLS for
// proxyless gRPC: servers accept only mTLS, clients dial every service of
// the namespace with Istio's certificates.
func proxylessPolicies(namespace string) []policy {
	return []policy{{
		APIVersion: "security.istio.io/v1", Resource: "peerauthentications", Kind: "PeerAuthentication", Name: "meshbench-strict",
		Spec: map[string]any{"mtls": map[string]string{"mode": "STRICT"}},
	}, {
		APIVersion: "networking.istio.io/v1", Resource: "destinationrules", Kind: "DestinationRule", Name: "meshbench-istio-mutual",
		Spec: map[string]any{"host": "*." + namespace + ".svc.cluster.local", "exportTo": []string{"."},
			"trafficPolicy": map[string]any{"tls": map[string]string{"mode": "ISTIO_MUTUAL"}}},
	}}
}

// apply creates the policy o in namespace, labelled as meshbench's, and
// remembers it; one of that name already there, not applied by this
// adapter, is refused and left alone.
func (p *proxyless) apply(ctx context.Context, rc rest.Interface, namespace string, o policy) error {
	a := appliedObject{path: o.path(namespace), name: o.Name}
	if slices.Contains(p.applied, a) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "spec": o.Spec,
		"metadata": map[string]any{"name": o.Name, "namespace": namespace, "labels": map[string]string{managedByLabel: "meshbench"}}})
	if err != nil {
		return fmt.Errorf("%s: %s %s/%s: %w", proxylessName, o.Kind, namespace, o.Name, err)
	}
	err = rc.Post().AbsPath(a.path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s: %s %s/%s exists and was not applied by this run: meshbench neither replaces nor removes it; delete it or use another namespace",
			proxylessName, o.Kind, namespace, o.Name)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: apply %s %s/%s: the cluster does not serve %s (are Istio's CRDs, the base chart, installed?): %w",
			proxylessName, o.Kind, namespace, o.Name, o.APIVersion, err)
	case err != nil:
		return fmt.Errorf("%s: apply %s %s/%s: %w", proxylessName, o.Kind, namespace, o.Name, err)
	}
	p.applied = append(p.applied, a)
	return nil
}

// Cleanup removes the policies Enable applied, and nothing else (Cleaner).
func (p *proxyless) Cleanup(ctx context.Context, c kubernetes.Interface) error {
	if len(p.applied) == 0 {
		return nil
	}
	rc, err := restOf(c)
	if err != nil {
		return fmt.Errorf("%s: %w", proxylessName, err)
	}
	var left []appliedObject
	var errs []error
	for _, a := range p.applied {
		if err := rc.Delete().AbsPath(a.path, a.name).Do(ctx).Error(); err != nil && !apierrors.IsNotFound(err) {
			left = append(left, a)
			errs = append(errs, fmt.Errorf("%s: delete %s: %w", proxylessName, a, err))
		}
	}
	p.applied = left
	return errors.Join(errs...)
}

// Roles are the istio-proxy container (pilot-agent, without Envoy) as the
// sidecar and the revision's istiod as the control plane (Mesh). The app's
// xDS client and server are the app's own CPU.
func (p *proxyless) Roles() Roles {
	return Roles{
		Sidecars:     []string{istioProxy},
		ControlPlane: []Workload{istiodOf(p.ns, p.rev)},
	}
}

// Verify, for the meshed arm, checks that every pod runs a ready
// istio-proxy injected by the adapter's revision from the grpc-agent
// template (pilot-agent without Envoy) and that its app containers have
// the xDS bootstrap; a pod whose istio-proxy runs Envoy is refused. For
// the baseline, that no pod runs a mesh's data plane (Mesh).
func (p *proxyless) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, proxylessName, namespace)
	}
	hint := "is the namespace labelled " + istioInjection + "=enabled, and were the pods restarted after?"
	if p.rev != "" {
		hint = "is the namespace labelled " + istioRev + "=" + p.rev + ", and were the pods restarted after?"
	}
	v, err := verifySidecars(ctx, c, proxylessName, namespace, istioProxy, hint, map[string]string{istioSidecarInject: "false"}, nil)
	pods, lerr := livePods(ctx, c, namespace, "")
	if lerr != nil {
		return v, errors.Join(err, lerr)
	}
	mc, merr := istioMesh(ctx, c, p.ns, p.rev)
	if merr != nil {
		return v, errors.Join(err, merr)
	}
	var problems []string
	for k := range pods {
		problems = append(problems, proxylessPodProblems(&pods[k])...)
		problems = append(problems, proxylessIdentityProblem(&pods[k], cmp.Or(mc.TrustDomain, "cluster.local"))...)
		if n := proxylessHoldNote(&pods[k]); n != "" {
			v.Notes = append(v.Notes, n)
		}
	}
	problems = append(problems, (&istio{rev: p.rev}).checkRevisions(pods, v.Pods)...)
	return v, withProblems(err, &v, problems)
}

// proxylessPodProblems checks that an injected pod's istio-proxy is the
// grpc-agent template's: pilot-agent with DISABLE_ENVOY, the xDS generator
// grpc, and GRPC_XDS_BOOTSTRAP in every app container.
func proxylessPodProblems(p *corev1.Pod) []string {
	ctr, ok := proxyContainer(p, istioProxy)
	if !ok {
		return nil // verifySidecars names it
	}
	var problems []string
	if v, _ := envValue(ctr, "DISABLE_ENVOY"); v != "true" {
		problems = append(problems, fmt.Sprintf("pod %s: its istio-proxy runs Envoy (no DISABLE_ENVOY=true: injected from template %q, not %q); "+
			"%s measures pilot-agent without Envoy beside the app's own xDS gRPC, so the pod is refused",
			p.Name, cmp.Or(p.Annotations[istioInjectTemplates], "sidecar"), grpcAgentTemplate, proxylessName))
	} else if g, _ := envValue(ctr, "ISTIO_META_GENERATOR"); g != "grpc" {
		problems = append(problems, fmt.Sprintf("pod %s: its istio-proxy asks istiod for xDS generator %q, not grpc", p.Name, g))
	}
	if t := p.Annotations[istioInjectTemplates]; t != grpcAgentTemplate {
		problems = append(problems, fmt.Sprintf("pod %s: annotation %s is %q, not %q", p.Name, istioInjectTemplates, t, grpcAgentTemplate))
	}
	for i := range p.Spec.Containers {
		app := &p.Spec.Containers[i]
		if app.Name == istioProxy {
			continue
		}
		if _, ok := envValue(app, "GRPC_XDS_BOOTSTRAP"); !ok {
			problems = append(problems, fmt.Sprintf("pod %s: container %s has no GRPC_XDS_BOOTSTRAP: its gRPC cannot reach istiod", p.Name, app.Name))
		}
	}
	return problems
}

// proxylessIdentityProblem says when an injected pod's pilot-agent is not
// ready: it has no certificate from istiod's CA, so the pod has no SPIFFE
// identity for its gRPC to present or verify.
func proxylessIdentityProblem(p *corev1.Pod, trustDomain string) []string {
	if _, ok := proxyContainer(p, istioProxy); !ok {
		return nil
	}
	if st, ok := containerStatus(p, istioProxy); !ok || st.Ready {
		return nil // no status: a pod as recorded, not as running
	}
	return []string{fmt.Sprintf("pod %s: no SPIFFE identity: pilot-agent is not ready, so it holds no certificate for spiffe://%s/ns/%s/sa/%s from istiod's CA",
		p.Name, trustDomain, p.Namespace, cmp.Or(p.Spec.ServiceAccountName, "default"))}
}

// proxylessHoldNote says when the injector did not put istio-proxy first
// (holdApplicationUntilProxyStarts): the app may then start before its
// certificate and bootstrap exist.
func proxylessHoldNote(p *corev1.Pod) string {
	if _, ok := proxyContainer(p, istioProxy); !ok {
		return ""
	}
	for _, ic := range p.Spec.InitContainers {
		if ic.Name == istioProxy {
			return "" // a native sidecar starts before the app
		}
	}
	if len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Name != istioProxy {
		return fmt.Sprintf("pod %s: istio-proxy is not its first container: holdApplicationUntilProxyStarts did not apply (%s %s)",
			p.Name, istioProxyConfig, proxylessHoldConfig)
	}
	return ""
}

// ProxylessPeers is what a backend's gRPC server's TLS saw, served on
// :8080/meshbench/peers: whether it serves with xDS credentials, and each
// peer's identity (the SPIFFE URI of its certificate), whether it was
// mTLS, the TLS version and the calls it made.
type ProxylessPeers struct {
	XDS   bool            `json:"xds"`
	Peers []ProxylessPeer `json:"peers"`
}

// ProxylessPeer is one caller as the server's TLS connection saw it.
type ProxylessPeer struct {
	Identity   string `json:"identity"`
	MTLS       bool   `json:"mtls"`
	TLSVersion string `json:"tlsVersion"`
	Calls      int64  `json:"calls"`
}

// MTLS reads every meshed pod's /meshbench/peers (port 8080) through the
// API server's pod proxy, and names each caller by the workload whose pods
// run as its identity's service account. A pod that serves no peers
// document (a 404, or a body that is not one: a loadgen's echo handler) is
// skipped. See ProxylessEdges (MTLSChecker).
func (p *proxyless) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	mc, err := istioMesh(ctx, c, p.ns, p.rev)
	if err != nil {
		return nil, err
	}
	seen, err := peersOf(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("%s: no meshed pod of %s serves :%d/%s: no gRPC server's view of its peers to prove mTLS with",
			proxylessName, namespace, proxylessPeersPort, proxylessPeersPath)
	}
	td := cmp.Or(mc.TrustDomain, "cluster.local")
	callers, err := callerWorkloads(ctx, c, td, seen)
	if err != nil {
		return nil, err
	}
	return ProxylessEdges(td, seen, callers)
}

// peersOf reads /meshbench/peers of every meshed pod of namespace that
// serves it.
func peersOf(ctx context.Context, c kubernetes.Interface, namespace string) (map[*corev1.Pod]ProxylessPeers, error) {
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return nil, err
	}
	seen := map[*corev1.Pod]ProxylessPeers{}
	for k := range pods {
		pod := &pods[k]
		if _, ok := proxyContainer(pod, istioProxy); !ok {
			continue
		}
		body, err := scrape(ctx, c, pod, proxylessPeersPort, proxylessPeersPath)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", proxylessName, err)
		}
		var doc struct {
			XDS   *bool           `json:"xds"`
			Peers []ProxylessPeer `json:"peers"`
		}
		if json.Unmarshal(body, &doc) != nil || doc.XDS == nil {
			continue // not a peers document: the pod serves no gRPC
		}
		seen[pod] = ProxylessPeers{XDS: *doc.XDS, Peers: doc.Peers}
	}
	return seen, nil
}

// callerWorkloads maps each caller identity's "namespace/service-account"
// to the one workload whose live pods run as that service account, when
// there is exactly one.
func callerWorkloads(ctx context.Context, c kubernetes.Interface, trustDomain string, seen map[*corev1.Pod]ProxylessPeers) (map[string]string, error) {
	out := map[string]string{}
	listed := map[string][]corev1.Pod{}
	for _, pp := range seen {
		for _, peer := range pp.Peers {
			sa, ok := spiffeSource(trustDomain, peer.Identity)
			if _, done := out[sa]; !ok || done {
				continue
			}
			ns, name, _ := strings.Cut(sa, "/")
			if _, ok := listed[ns]; !ok {
				pods, err := livePods(ctx, c, ns, "")
				if err != nil {
					return nil, fmt.Errorf("%s: naming the callers: %w", proxylessName, err)
				}
				listed[ns] = pods
			}
			workloads := map[string]bool{}
			for k := range listed[ns] {
				if cmp.Or(listed[ns][k].Spec.ServiceAccountName, "default") == name {
					workloads[workloadOf(&listed[ns][k])] = true
				}
			}
			out[sa] = sa
			if len(workloads) == 1 {
				for w := range workloads {
					out[sa] = w
				}
			}
		}
	}
	return out, nil
}

// ProxylessEdges turns what each server pod's TLS saw into edges, one per
// (caller, server workload): Src is the caller's workload from callers
// (keyed by the identity's "namespace/service-account", which it is when
// callers has no entry), Dst the server's workload, Peer the identity. An
// edge is Secured only when every peer behind it was mTLS with an
// identity of trustDomain. A server with peers that does not serve with
// xDS credentials, or a peer without an identity, is an error naming the
// pod: a meshed edge must show who called it.
func ProxylessEdges(trustDomain string, seen map[*corev1.Pod]ProxylessPeers, callers map[string]string) ([]Edge, error) {
	by := map[[2]string]*Edge{}
	var errs []error
	for pod, pp := range seen {
		where := fmt.Sprintf("pod %s/%s :%d/%s", pod.Namespace, pod.Name, proxylessPeersPort, proxylessPeersPath)
		if !pp.XDS && len(pp.Peers) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s: the gRPC server serves without xDS credentials (xds false): plain gRPC in the meshed arm", proxylessName, where))
			continue
		}
		dst := workloadOf(pod)
		for _, peer := range pp.Peers {
			if peer.Identity == "" {
				errs = append(errs, fmt.Errorf("%s: %s: a peer without a SPIFFE identity (mtls=%t, %d calls): a meshed edge must show its caller's identity",
					proxylessName, where, peer.MTLS, peer.Calls))
				continue
			}
			ev := fmt.Sprintf("%s: peer %q mtls=%t %s calls=%d", where, peer.Identity, peer.MTLS, cmp.Or(peer.TLSVersion, "no TLS"), peer.Calls)
			sa, ok := spiffeSource(trustDomain, peer.Identity)
			if !ok {
				ev += fmt.Sprintf(" (not a SPIFFE identity of trust domain %s)", trustDomain)
			}
			src := cmp.Or(callers[sa], sa)
			e := by[[2]string{src, dst}]
			if e == nil {
				e = &Edge{Src: src, Dst: dst, Peer: peer.Identity, Secured: true}
				by[[2]string{src, dst}] = e
			}
			e.Secured = e.Secured && ok && peer.MTLS
			e.Requests += peer.Calls
			e.Evidence = strings.TrimPrefix(e.Evidence+"; "+ev, "; ")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]Edge, 0, len(by))
	for _, e := range by {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Src+" "+out[i].Dst < out[j].Src+" "+out[j].Dst })
	return out, nil
}

// spiffeSource names the caller of a SPIFFE identity
// spiffe://<trustDomain>/ns/<ns>/sa/<sa> as "<ns>/<sa>", and says whether
// the identity is one of trustDomain; otherwise the source is "unknown".
func spiffeSource(trustDomain, id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "spiffe://"+trustDomain+"/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 4 || parts[0] != "ns" || parts[2] != "sa" || parts[1] == "" || parts[3] == "" {
		return "unknown", false
	}
	return parts[1] + "/" + parts[3], true
}

// Charts installs Istio from the chart of its source tree (base, and
// istiod of the adapter's revision) with the offline images: pilot from
// <registry>/pilot and the grpc-agent's istio-proxy from
// <registry>/proxyv2-agent, both at the version's tag (default:
// ProxylessDefaultVersion; registry default meshbench, the images
// hack/offline/istio.sh loads into kind), pulled only when not present.
// On a cluster that pulls its own images (o.Published) it installs
// Istio's release instead (publishedCharts).
func (p *proxyless) Charts(o InstallOptions) ([]Chart, error) {
	if o.Published && !devTag.MatchString(o.Version) {
		return p.publishedCharts(o)
	}
	v := cmp.Or(o.Version, ProxylessDefaultVersion)
	if !devTag.MatchString(v) && !chartVersion.MatchString(v) {
		return nil, fmt.Errorf("%s: install version %q is not a chart version (want e.g. %s)", proxylessName, v, ProxylessDefaultVersion)
	}
	if o.Published && o.Registry == "" {
		return nil, fmt.Errorf("%s: install version %q is an offline build (hack/offline/istio.sh), which no public registry has: "+
			"push its meshbench/pilot and meshbench/proxyv2-agent images to a registry the cluster pulls from and name it with %s, "+
			"or install a release (default %s)", proxylessName, v, p.words.Say(testbed.SettingMeshRegistry, ""), ProxylessPublishedVersion)
	}
	v = strings.TrimPrefix(v, "v")
	hub := cmp.Or(o.Registry, proxylessHub)
	cs, err := istioCharts(proxylessName, p.ns, p.rev, v, InstallOptions{Registry: hub}, "")
	if err != nil {
		return nil, err
	}
	// Whole references (with a "/"): the charts then add no variant suffix
	// (global.variant, "distroless" by default, names no image built here).
	istiod := cs[1].Values
	set(istiod, "image", hub+"/pilot:"+v)
	set(istiod, "global.proxy.image", hub+"/"+proxylessAgentImage+":"+v)
	set(istiod, "global.imagePullPolicy", "IfNotPresent")
	return cs, nil
}

// publishedCharts installs an Istio release (default
// ProxylessPublishedVersion) from Istio's Helm repository, with the images
// Istio publishes for it (docker.io/istio, or the registry that mirrors
// them): istiod's pilot, and proxyv2 for the grpc-agent template's
// istio-proxy, which holds Envoy but runs pilot-agent alone
// (DISABLE_ENVOY), as on kind.
func (p *proxyless) publishedCharts(o InstallOptions) ([]Chart, error) {
	return istioCharts(proxylessName, p.ns, p.rev, ProxylessPublishedVersion, o, "")
}

// Images are the images Charts installs (Imager): istiod's and the
// injected agent's, which on kind the run loads from the local Docker.
func (p *proxyless) Images(o InstallOptions) ([]string, error) {
	cs, err := p.Charts(o)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, k := range []string{"image", "global.proxy.image"} {
		if ref, ok := valueAt(cs[1].Values, k).(string); ok {
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// Preparer: Istio CRDs already on the cluster belong to another
// installation, of whatever version: installing base over them would
// adopt or replace them, and uninstalling would remove them. Refused,
// naming them.
func (p *proxyless) Prepare(ctx context.Context, c kubernetes.Interface, o InstallOptions) ([]string, error) {
	rc, err := restOf(c)
	if err != nil {
		return nil, fmt.Errorf("%s: checking for Istio CRDs: %w", proxylessName, err)
	}
	raw, err := rc.Get().AbsPath(crdPath).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("%s: list CRDs: %w", proxylessName, err)
	}
	found, err := istioCRDs(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: list CRDs: %w", proxylessName, err)
	}
	if len(found) > 0 {
		return nil, fmt.Errorf("%s: Istio CRDs of another installation are on the cluster (%s): installing Istio %s's base would take them over; "+
			"meshbench neither replaces nor removes what it did not install: uninstall that Istio, or run against it without installing",
			proxylessName, strings.Join(found, ", "), cmp.Or(o.Version, ProxylessDefaultVersion))
	}
	return nil, nil
}

// istioCRDs names the *.istio.io CRDs of a CRD list, each with the version
// and release its labels and annotations give.
func istioCRDs(raw []byte) ([]string, error) {
	var l struct {
		Items []struct {
			Metadata struct {
				Name        string            `json:"name"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		m := it.Metadata
		if !strings.HasSuffix(m.Name, ".istio.io") {
			continue
		}
		out = append(out, fmt.Sprintf("%s (version %s, release %s)", m.Name,
			cmp.Or(m.Labels["app.kubernetes.io/version"], m.Labels["helm.sh/chart"], "unlabelled"),
			cmp.Or(m.Annotations["meta.helm.sh/release-name"], "none")))
	}
	sort.Strings(out)
	return out, nil
}

// Interface checks.
var (
	_ InApp       = (*proxyless)(nil)
	_ Revisioned  = (*proxyless)(nil)
	_ Injector    = (*proxyless)(nil)
	_ MTLSChecker = (*proxyless)(nil)
	_ Installer   = (*proxyless)(nil)
	_ Preparer    = (*proxyless)(nil)
	_ Cleaner     = (*proxyless)(nil)
)
