package mesh

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/framework/testbed"
)

func init() {
	register(Adapter{Name: "cilium", Rank: 4, New: func(c config) Mesh { return newCilium(c) }})
}

// ciliumConfigKeys are the cilium-config settings that change what a
// benchmark measures.
var ciliumConfigKeys = []string{
	"enable-wireguard", "enable-ipsec", "encrypt-node", "mesh-auth-enabled", "mesh-auth-mutual-enabled",
	"enable-l7-proxy", "external-envoy-proxy", "enable-envoy-config", "kube-proxy-replacement",
	"routing-mode", "tunnel-protocol", "cluster-name",
}

// cilium is Cilium's node-level data plane: an eBPF agent and an Envoy per
// node, with transparent encryption (WireGuard or IPsec) and mutual
// authentication configured cluster-wide in cilium-config. There is no
// per-namespace injection: both arms share the datapath, and what differs
// is only what policies select.
type cilium struct {
	ns string
	// encryption is "ipsec" or "wireguard".
	encryption string
	// words say the settings the notes name.
	words testbed.Words
}

func newCilium(cfg config) *cilium {
	return &cilium{ns: cmp.Or(cfg.namespace, "kube-system"), encryption: cmp.Or(cfg.encryption, "ipsec"), words: cfg.words}
}

// Name is "cilium" (Mesh).
func (ci *cilium) Name() string { return "cilium" }

// Detect finds the cilium and cilium-envoy DaemonSets and reads cilium-config.
func (ci *cilium) Detect(ctx context.Context, c kubernetes.Interface) (Info, error) {
	info := Info{Mesh: "cilium", Namespace: ci.ns, Threads: Threads{Mode: "unknown"}}
	ds, err := c.AppsV1().DaemonSets(ci.ns).Get(ctx, "cilium", metav1.GetOptions{})
	if notFound(err) {
		return info, &NotInstalledError{Mesh: "cilium", Looked: fmt.Sprintf("no DaemonSet %s/cilium", ci.ns)}
	}
	if err != nil {
		return info, fmt.Errorf("cilium: get DaemonSet %s/cilium: %w", ci.ns, err)
	}
	info.Installed = true
	for _, ctr := range ds.Spec.Template.Spec.Containers {
		if ctr.Name == "cilium-agent" {
			info.Version = imageTag(ctr.Image)
			info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: ds.Namespace, Name: ds.Name, Image: ctr.Image})
		}
	}
	cfg, err := ci.config(ctx, c)
	if err != nil {
		return info, err
	}
	info.Config = cfg
	info.Threads = Threads{Mode: "unknown", Source: "Envoy embedded in cilium-agent"}
	if env, err := c.AppsV1().DaemonSets(ci.ns).Get(ctx, "cilium-envoy", metav1.GetOptions{}); err == nil {
		for _, ctr := range env.Spec.Template.Spec.Containers {
			info.Components = append(info.Components, Component{Kind: "DaemonSet", Namespace: env.Namespace, Name: env.Name, Image: ctr.Image})
			info.Threads = envoyConcurrency(ctr.Args)
			break
		}
	} else if !notFound(err) {
		return info, fmt.Errorf("cilium: get DaemonSet %s/cilium-envoy: %w", ci.ns, err)
	}
	return info, nil
}

func (ci *cilium) config(ctx context.Context, c kubernetes.Interface) (map[string]string, error) {
	cm, err := c.CoreV1().ConfigMaps(ci.ns).Get(ctx, "cilium-config", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cilium: get ConfigMap %s/cilium-config: %w", ci.ns, err)
	}
	out := map[string]string{}
	for _, k := range ciliumConfigKeys {
		if v, ok := cm.Data[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// envoyConcurrency reads --concurrency from an Envoy command line; without
// it Envoy runs one worker per hardware thread it sees.
func envoyConcurrency(args []string) Threads {
	for i, a := range args {
		f := strings.Fields(a)
		for j, w := range f {
			val := ""
			switch {
			case strings.HasPrefix(w, "--concurrency="):
				val = strings.TrimPrefix(w, "--concurrency=")
			case w == "--concurrency" && j+1 < len(f):
				val = f[j+1]
			case w == "--concurrency" && i+1 < len(args):
				val = args[i+1]
			}
			if n, err := strconv.Atoi(val); err == nil {
				return Threads{N: n, Mode: "fixed", Source: "cilium-envoy --concurrency"}
			}
		}
	}
	return Threads{Mode: "all-cores", Source: "cilium-envoy has no --concurrency: Envoy runs one worker per hardware thread"}
}

// Enable does nothing: Cilium has no per-namespace injection. Encryption and
// mutual authentication are cluster-wide (cilium-config), and L7 proxying is
// switched on by policies, which this adapter does not write.
func (ci *cilium) Enable(context.Context, kubernetes.Interface, string) error { return nil }

// Roles are the cilium agent and cilium-envoy as node proxies and the
// cilium operator as the control plane; Cilium has no sidecars (Mesh).
func (ci *cilium) Roles() Roles {
	return Roles{
		NodeProxies: []Workload{
			{Namespace: ci.ns, Labels: map[string]string{"k8s-app": "cilium"}},
			{Namespace: ci.ns, Labels: map[string]string{"k8s-app": "cilium-envoy"}},
		},
		ControlPlane: []Workload{{Namespace: ci.ns, Labels: map[string]string{"io.cilium/app": "operator"}}},
	}
}

const ciliumSharedNote = "cilium: the datapath and its WireGuard or IPsec encryption are on for every node: " +
	"a baseline on the same cluster shares them, so meshbench runs it on a second cluster"

// Verify, for the meshed arm, checks that a ready cilium agent runs on every
// node hosting a pod and that cilium-config enables encryption or mutual
// authentication; for the baseline, that no pod runs a proxy.
func (ci *cilium) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		v, err := verifyBaseline(ctx, c, "cilium", namespace)
		v.Notes = append(v.Notes, ciliumSharedNote)
		return v, err
	}
	v := Verification{Mesh: "cilium", Namespace: namespace, Meshed: true, Notes: []string{ciliumSharedNote}}
	cfg, err := ci.config(ctx, c)
	if err != nil {
		return v, err
	}
	var problems []string
	if ci.encryption == "none" {
		v.Notes = append(v.Notes, ci.plainNote())
	} else if !ciliumEncrypts(cfg) && cfg["mesh-auth-enabled"] != "true" {
		problems = append(problems, "cilium-config enables neither enable-wireguard, enable-ipsec nor mesh-auth-enabled: "+
			"the meshed arm would be identical to the baseline")
	}
	agents, err := nodesWith(ctx, c, ci.ns, "k8s-app=cilium")
	if err != nil {
		return v, err
	}
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return v, err
	}
	if len(pods) == 0 {
		problems = append(problems, "no running pods to verify")
	}
	for _, p := range pods {
		pc := PodCheck{Pod: p.Name, Node: p.Spec.NodeName}
		if agents[p.Spec.NodeName] {
			pc.Proxies = []string{"cilium-agent"}
		} else {
			problems = append(problems, fmt.Sprintf("pod %s runs on node %q, which has no ready cilium agent", p.Name, p.Spec.NodeName))
		}
		v.Pods = append(v.Pods, pc)
	}
	if len(problems) > 0 {
		return v, &VerifyError{Mesh: "cilium", Namespace: namespace, Meshed: true, Problems: problems}
	}
	return v, nil
}

// plainNote says that the meshed arm encrypts nothing, by design.
func (ci *cilium) plainNote() string {
	return "cilium: encryption off (" + ci.words.Say(testbed.SettingCiliumEncryption, "none") + "): the meshed arm is Cilium's eBPF datapath " +
		"as the CNI, every hop plain text by design"
}

// PlainByDesign says that the meshed arm encrypts nothing on purpose.
func (ci *cilium) PlainByDesign(info Info) string {
	if ci.encryption == "none" && !ciliumEncrypts(info.Config) {
		return ci.plainNote()
	}
	return ""
}

// KernelEncryption names the transparent encryption cilium-config turns on.
func (ci *cilium) KernelEncryption(info Info) string {
	switch {
	case info.Config["enable-ipsec"] == "true":
		return "IPsec"
	case info.Config["enable-wireguard"] == "true":
		return "WireGuard"
	}
	return ""
}

func ciliumMechanism(cfg map[string]string) string {
	return (&cilium{}).KernelEncryption(Info{Config: cfg})
}

func ciliumEncrypts(cfg map[string]string) bool {
	return cfg["enable-wireguard"] == "true" || cfg["enable-ipsec"] == "true"
}

// MTLS derives the edges between the namespace's workloads from
// cilium-config, since Cilium's encryption is not visible per connection.
func (ci *cilium) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	cfg, err := ci.config(ctx, c)
	if err != nil {
		return nil, err
	}
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return nil, err
	}
	return CiliumEdges(cfg, pods), nil
}

// CiliumEdges returns an edge for every ordered pair of distinct workloads
// among pods. WireGuard and IPsec encrypt pod traffic between nodes, not
// between two pods of one node, so a pair that shares a node is not secured.
// Mutual authentication (mesh-auth-enabled) authenticates, it does not
// encrypt, and is reported as evidence only.
func CiliumEdges(cfg map[string]string, pods []corev1.Pod) []Edge {
	nodes := map[string]map[string]bool{}
	for i := range pods {
		w := workloadOf(&pods[i])
		if nodes[w] == nil {
			nodes[w] = map[string]bool{}
		}
		nodes[w][pods[i].Spec.NodeName] = true
	}
	ws := make([]string, 0, len(nodes))
	for w := range nodes {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	var mech []string
	for _, k := range []string{"enable-wireguard", "enable-ipsec", "encrypt-node", "mesh-auth-enabled"} {
		if v, ok := cfg[k]; ok {
			mech = append(mech, k+"="+v)
		}
	}
	base := "cilium-config " + strings.Join(mech, ", ")
	var out []Edge
	for _, src := range ws {
		for _, dst := range ws {
			if src == dst {
				continue
			}
			e := Edge{Src: src, Dst: dst, Secured: ciliumEncrypts(cfg), Evidence: base, Mechanism: ciliumMechanism(cfg)}
			if !e.Secured {
				e.Evidence += ": no transparent encryption"
			} else if shared := sharedNode(nodes[src], nodes[dst]); shared != "" {
				e.Secured = false
				e.Evidence += ": both run on node " + shared + ", and node-local pod traffic is not encrypted"
			}
			out = append(out, e)
		}
	}
	return out
}

func sharedNode(a, b map[string]bool) string {
	var shared []string
	for n := range a {
		if b[n] {
			shared = append(shared, n)
		}
	}
	sort.Strings(shared)
	if len(shared) == 0 {
		return ""
	}
	return shared[0]
}

// ciliumRepo is Cilium's Helm repository.
const ciliumRepo = "https://helm.cilium.io/"

// CiliumEncryptions are the transparent encryptions the adapter installs:
// "none" leaves Cilium as the CNI only, its eBPF datapath without
// encryption, for kernels that have neither ESP nor WireGuard.
var CiliumEncryptions = []string{"ipsec", "wireguard", "none"}

// ciliumIPsecSecret is the Secret the chart's IPsec key is read from
// (encryption.ipsec.secretName's default).
const ciliumIPsecSecret = "cilium-ipsec-keys"

func (ci *cilium) defaultVersion() string { return "1.19.3" }

// Charts installs Cilium as the cluster's CNI (VXLAN tunnel, kube-proxy
// kept, Kubernetes host-scope IPAM) with transparent encryption between
// nodes, the setting that makes its arm differ from a baseline on a
// cluster without it (Verify refuses a Cilium that encrypts nothing). The
// L7 proxy, Envoy and Hubble are off: the data plane measured is the eBPF
// datapath and the kernel's IPsec or WireGuard. Cilium replaces the
// cluster's CNI: install it on a cluster created without one (kind's
// WithCNI step).
func (ci *cilium) Charts(o InstallOptions) ([]Chart, error) {
	v, err := o.version("cilium", ci.defaultVersion())
	if err != nil {
		return nil, err
	}
	if !slices.Contains(CiliumEncryptions, ci.encryption) {
		return nil, fmt.Errorf("cilium: encryption %q: want one of %s", ci.encryption, strings.Join(CiliumEncryptions, ", "))
	}
	values := map[string]any{}
	if ci.encryption != "none" {
		set(values, "encryption.enabled", true)
		set(values, "encryption.type", ci.encryption)
	}
	for k, val := range map[string]any{
		"ipam.mode": "kubernetes", "routingMode": "tunnel", "tunnelProtocol": "vxlan",
		"kubeProxyReplacement": false, "l7Proxy": false, "envoy.enabled": false,
		"hubble.enabled": false, "hubble.relay.enabled": false, "hubble.ui.enabled": false,
		"operator.replicas": 1, "image.pullPolicy": "IfNotPresent", "operator.image.pullPolicy": "IfNotPresent",
		"image.tag": "v" + v, "operator.image.tag": "v" + v,
	} {
		set(values, k, val)
	}
	for key, caps := range ciliumCapabilities {
		var kept []any // Helm's schema check wants JSON arrays, not []string
		for _, c := range caps {
			if !slices.Contains(o.NoCapabilities, c) {
				kept = append(kept, c)
			}
		}
		if len(kept) < len(caps) {
			set(values, "securityContext.capabilities."+key, kept)
		}
	}
	if r := o.Registry; r != "" {
		for key, image := range map[string]string{"image": "cilium", "operator.image": "operator"} {
			set(values, key+".repository", r+"/"+image)
			set(values, key+".useDigest", false)
		}
	}
	return []Chart{{Release: "cilium", Namespace: ci.ns, Name: "cilium", Repo: ciliumRepo, Version: v, Values: values,
		Pins: []string{"image.tag", "operator.image.tag"}}}, nil
}

// ciliumCapabilities are the chart's capability lists that ask for more
// than SYS_ADMIN, SYS_CHROOT and SYS_PTRACE (values.yaml of 1.19):
// SYS_RESOURCE only raises RLIMIT_MEMLOCK, which kernels from 5.11 on do
// not charge BPF maps to, so it can be left out where it cannot be granted.
var ciliumCapabilities = map[string][]string{
	"ciliumAgent": {"CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE",
		"DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "SYSLOG"},
	"cleanCiliumState": {"NET_ADMIN", "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE"},
}

// Images lists the images the charts run, for loading into a cluster
// that pulls from no registry: the agent and operator-generic.
func (ci *cilium) Images(o InstallOptions) ([]string, error) {
	v, err := o.version("cilium", ci.defaultVersion())
	if err != nil {
		return nil, err
	}
	r := cmp.Or(o.Registry, "quay.io/cilium")
	return []string{r + "/cilium:v" + v, r + "/operator-generic:v" + v}, nil
}

// Prepare makes the IPsec key for the run (a random 160-bit AES-GCM key,
// as Cilium's documentation makes it) unless the Secret exists.
func (ci *cilium) Prepare(ctx context.Context, c kubernetes.Interface, _ InstallOptions) ([]string, error) {
	if ci.encryption != "ipsec" {
		return nil, nil
	}
	_, err := c.CoreV1().Secrets(ci.ns).Get(ctx, ciliumIPsecSecret, metav1.GetOptions{})
	if err == nil {
		return []string{"IPsec key: Secret " + ci.ns + "/" + ciliumIPsecSecret + " exists, kept"}, nil
	}
	if !notFound(err) {
		return nil, fmt.Errorf("get Secret %s/%s: %w", ci.ns, ciliumIPsecSecret, err)
	}
	key := make([]byte, 20)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("IPsec key: %w", err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ciliumIPsecSecret, Namespace: ci.ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "meshbench"}},
		StringData: map[string]string{"keys": fmt.Sprintf("3+ rfc4106(gcm(aes)) %x 128", key)},
	}
	if _, err := c.CoreV1().Secrets(ci.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create Secret %s/%s: %w", ci.ns, ciliumIPsecSecret, err)
	}
	return []string{"IPsec key: made for this run (rfc4106(gcm(aes)), 128-bit ICV) in Secret " + ci.ns + "/" + ciliumIPsecSecret}, nil
}

// ClusterWide says why Cilium's baseline needs another cluster.
func (ci *cilium) ClusterWide() string {
	if ci.encryption == "none" {
		return "cilium: it is the CNI of every node of the cluster"
	}
	return "cilium: transparent encryption (" + ci.encryption + ") is on for every node of the cluster"
}
