package mesh

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

func init() {
	register(Adapter{Name: "sidecar", Rank: 5, New: func(c config) Mesh { return newSidecar(c) },
		Proxies: []string{defaultSidecarName},
		Marks:   []InjectionMark{{Key: sidecarLabel, Value: "enabled"}}})
}

// sidecarLabel marks a namespace whose pod templates the harness injects the
// bring-your-own proxy into.
const sidecarLabel = "meshbench.io/sidecar"

// defaultSidecarName is the bring-your-own sidecar's container name when
// the run names none.
const defaultSidecarName = "mb-sidecar"

// sidecar is a bring-your-own proxy: the harness adds a proxy container
// (default name mb-sidecar) from a given image and arguments to the meshed
// namespace's pod templates. It is always "installed".
//
// The kube target wires it itself (fixtures/manifests.Sidecar): nginx with
// an inbound mTLS listener that verifies the caller's certificate against
// the run's CA, plain outbound listeners on 127.0.0.1 that call the peers
// over mTLS, and a status port whose /peers log has one line per inbound
// request: the subject of the client certificate nginx verified. MTLS reads
// that log from every pod through the API server's pod proxy, unless the
// harness supplies other evidence with WithMTLSEvidence.
type sidecar struct {
	name, image string
	args        []string
	evidence    EvidenceFunc
}

func newSidecar(cfg config) *sidecar {
	name := cfg.sidecarName
	if name == "" {
		name = defaultSidecarName
	}
	return &sidecar{name: name, image: cfg.sidecarImage, args: cfg.sidecarArgs, evidence: cfg.evidence}
}

// Name is "sidecar", whatever the proxy container is called (Mesh).
func (s *sidecar) Name() string { return "sidecar" }

// Detect always finds the sidecar installed: its version is the image's
// tag, its config the container name and image (Mesh).
func (s *sidecar) Detect(context.Context, kubernetes.Interface) (Info, error) {
	return Info{
		Mesh:      "sidecar",
		Installed: true,
		Version:   imageTag(s.image),
		Config:    map[string]string{"container": s.name, "image": s.image},
		Threads:   Threads{Mode: "unknown", Source: "set by the proxy's own configuration"},
	}, nil
}

// Enable labels the namespace meshbench.io/sidecar=enabled.
func (s *sidecar) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	return setNamespaceMeta(ctx, c, namespace, map[string]*string{sidecarLabel: ptr("enabled")}, nil)
}

// Roles are the proxy container as the sidecar; there is no control
// plane (Mesh).
func (s *sidecar) Roles() Roles { return Roles{Sidecars: []string{s.name}} }

// Verify, for the meshed arm, checks that every pod runs the proxy
// container, ready; for the baseline, that no pod runs it or any mesh's
// data plane (Mesh).
func (s *sidecar) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "sidecar", namespace, s.name)
	}
	return verifySidecars(ctx, c, "sidecar", namespace, s.name,
		"the harness injects it into the templates of a namespace labelled "+sidecarLabel+"=enabled; were they redeployed?", nil, nil)
}

// Inject adds the proxy container to a pod template; a template that
// already has it is left alone.
func (s *sidecar) Inject(t *corev1.PodTemplateSpec) error {
	for _, ctr := range t.Spec.Containers {
		if ctr.Name == s.name {
			return nil
		}
	}
	if s.image == "" {
		return errors.New("sidecar: no proxy image (use WithSidecar)")
	}
	t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: s.name, Image: s.image, Args: s.args})
	return nil
}

// Proxy returns the proxy container's name, image ("" when not set: the
// harness picks its nginx image) and arguments, for a harness that wires the
// proxy into its workloads itself.
func (s *sidecar) Proxy() (name, image string, args []string) { return s.name, s.image, s.args }

// Wired reports whether the harness wires the proxy itself (nginx, its
// config, certificates and Services, with MTLS reading the proxies' logs of
// verified peers): true unless the mTLS evidence comes from WithMTLSEvidence,
// which means the user's proxy brings its own wiring and telemetry.
func (s *sidecar) Wired() bool { return s.evidence == nil }

// SidecarProxy is the bring-your-own sidecar adapter as a harness that
// wires the proxy itself sees it.
type SidecarProxy interface {
	Mesh
	Proxy() (name, image string, args []string)
	Wired() bool
}

var _ SidecarProxy = (*sidecar)(nil)

// The sidecar's status port and log of verified peers
// (fixtures/manifests.SidecarStatusPort and PeersPath), and the pod label
// naming its workload.
const (
	sidecarStatusPort = "15020"
	sidecarPeersPath  = "/peers"
	componentLabel    = "app.kubernetes.io/component"
)

// MTLS returns, per caller → callee pair of namespace, the requests whose
// client certificate the callee's sidecar verified, from each sidecar's log
// of verified peers (or the evidence the harness supplies). Requests are
// cumulative since the pods started.
func (s *sidecar) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	ev := s.evidence
	if ev == nil {
		ev = s.peerLogs
	}
	es, err := ev(ctx, c, namespace)
	if err != nil {
		return nil, fmt.Errorf("sidecar: mTLS evidence for %s: %w", namespace, err)
	}
	if s.evidence == nil {
		return sumPeers(es), nil
	}
	return MergeEdges(es), nil
}

// sumPeers adds up the verified-peer counts of every pod per caller →
// callee pair, keeping the verified peer (MergeEdges keeps only verdicts).
func sumPeers(es []Edge) []Edge {
	idx := map[[2]string]int{}
	var out []Edge
	for _, e := range es {
		k := [2]string{e.Src, e.Dst}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, e)
			continue
		}
		out[i].Requests += e.Requests
		out[i].Secured = out[i].Secured && e.Secured
		if out[i].Evidence != e.Evidence {
			out[i].Evidence += "; " + e.Evidence
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Src != out[j].Src {
			return out[i].Src < out[j].Src
		}
		return out[i].Dst < out[j].Dst
	})
	return out
}

// peerLogs reads the /peers log of every inbound sidecar of namespace
// through the API server's pod proxy and counts its lines per verified
// client.
func (s *sidecar) peerLogs(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return nil, err
	}
	var out []Edge
	for i := range pods {
		p := &pods[i]
		ctr, ok := proxyContainer(p, s.name)
		if !ok || !hasPort(ctr, 8443) {
			continue // no inbound listener: a loadgen's sidecar
		}
		dst := p.Labels[componentLabel]
		if dst == "" {
			dst = p.Name
		}
		body, err := c.CoreV1().Pods(namespace).ProxyGet("http", p.Name, sidecarStatusPort, sidecarPeersPath, nil).DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the verified peers of %s/%s (port %s%s): %w", namespace, p.Name, sidecarStatusPort, sidecarPeersPath, err)
		}
		for peer, n := range CountPeers(string(body)) {
			out = append(out, Edge{
				Src: namespace + "/" + peer, Dst: namespace + "/" + dst, Peer: peer, Secured: true, Requests: n,
				Evidence: fmt.Sprintf("%s of %s verified the client certificate CN=%s (ssl_verify_client on, run CA)", s.name, p.Name, peer),
			})
		}
	}
	return out, nil
}

func hasPort(c *corev1.Container, port int32) bool {
	for _, p := range c.Ports {
		if p.ContainerPort == port {
			return true
		}
	}
	return false
}

// CountPeers counts the lines of a sidecar's log of verified peers by the
// common name of each line's subject DN ("CN=loadgen,O=meshbench", as nginx's
// $ssl_client_s_dn writes it). A line without a verified certificate ("-"
// or empty) counts under "".
func CountPeers(log string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		out[commonName(l)]++
	}
	return out
}

// commonName returns the CN of an RFC 2253 (or OpenSSL one-line) DN.
func commonName(dn string) string {
	for _, part := range strings.FieldsFunc(dn, func(r rune) bool { return r == ',' || r == '/' }) {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "CN") {
			return v
		}
	}
	return ""
}
