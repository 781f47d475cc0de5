package mesh

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/framework/testbed"
)

// plan is a chart list without values, for exact comparison.
func plan(cs []Chart) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Namespace+"/"+c.Release+"="+c.Name+"@"+c.Version+" "+c.Repo)
	}
	return out
}

func charts(t *testing.T, m Mesh, o InstallOptions) []Chart {
	t.Helper()
	inst, ok := m.(Installer)
	require.True(t, ok, "%s is not an Installer", m.Name())
	cs, err := inst.Charts(o)
	require.NoError(t, err)
	return cs
}

func TestWhoInstalls(t *testing.T) {
	for _, n := range Names() {
		_, ok := newMesh(t, n).(Installer)
		want := n != "none" && n != "sidecar"
		assert.Equal(t, want, ok, n)
		assert.Equal(t, want, DefaultVersion(newMesh(t, n)) != "", n)
	}
}

func TestIstioCharts(t *testing.T) {
	cs := charts(t, newMesh(t, "istio"), InstallOptions{})
	assert.Equal(t, []string{
		"istio-system/istio-base=base@1.28.0 https://istio-release.storage.googleapis.com/charts",
		"istio-system/istiod=istiod@1.28.0 https://istio-release.storage.googleapis.com/charts",
	}, plan(cs))
	assert.Equal(t, []string{"defaultRevision=default"}, FlattenValues(cs[0].Values))
	assert.Equal(t, []string{"global.hub=docker.io/istio", "global.tag=1.28.0"}, FlattenValues(cs[1].Values))
	assert.Empty(t, cs[0].Pins, "base runs no images")
	assert.Equal(t, []string{"global.hub", "global.tag"}, cs[1].Pins)

	m, err := New("istio", WithRevision("canary"), WithNamespace("mesh"))
	require.NoError(t, err)
	cs = charts(t, m, InstallOptions{Version: "v1.27.3", Registry: "registry.local/istio"})
	assert.Equal(t, []string{
		"mesh/istio-base=base@1.27.3 https://istio-release.storage.googleapis.com/charts",
		"mesh/istiod-canary=istiod@1.27.3 https://istio-release.storage.googleapis.com/charts",
	}, plan(cs))
	assert.Equal(t, []string{"defaultRevision=canary", "global.hub=registry.local/istio"}, FlattenValues(cs[0].Values))
	assert.Equal(t, []string{"global.hub=registry.local/istio", "global.tag=1.27.3", "revision=canary"}, FlattenValues(cs[1].Values))
}

func TestAmbientCharts(t *testing.T) {
	cs := charts(t, newMesh(t, "istio-ambient"), InstallOptions{Registry: "r.local"})
	assert.Equal(t, []string{
		"istio-system/istio-base=base@1.28.0 https://istio-release.storage.googleapis.com/charts",
		"istio-system/istiod=istiod@1.28.0 https://istio-release.storage.googleapis.com/charts",
		"istio-system/istio-cni=cni@1.28.0 https://istio-release.storage.googleapis.com/charts",
		"istio-system/ztunnel=ztunnel@1.28.0 https://istio-release.storage.googleapis.com/charts",
	}, plan(cs))
	assert.Equal(t, []string{"defaultRevision=default", "global.hub=r.local", "profile=ambient"}, FlattenValues(cs[0].Values))
	assert.Equal(t, []string{"global.hub=r.local", "global.tag=1.28.0", "profile=ambient"}, FlattenValues(cs[1].Values))
	assert.Equal(t, []string{"global.hub=r.local", "global.tag=1.28.0", "profile=ambient"}, FlattenValues(cs[2].Values))
	assert.Equal(t, []string{"hub=r.local", "profile=ambient", "tag=1.28.0"}, FlattenValues(cs[3].Values))
	assert.Equal(t, []string{"hub", "tag"}, cs[3].Pins)
}

func TestLinkerdChartsCarryAValidIdentity(t *testing.T) {
	cs := charts(t, newMesh(t, "linkerd"), InstallOptions{Version: "2025.11.2"})
	assert.Equal(t, []string{
		"linkerd/linkerd-crds=linkerd-crds@2025.11.2 https://helm.linkerd.io/edge",
		"linkerd/linkerd-control-plane=linkerd-control-plane@2025.11.2 https://helm.linkerd.io/edge",
	}, plan(cs))
	v := cs[1].Values
	root := parseCert(t, v["identityTrustAnchorsPEM"].(string))
	tls := v["identity"].(map[string]any)["issuer"].(map[string]any)["tls"].(map[string]any)
	issuer := parseCert(t, tls["crtPEM"].(string))
	assert.Equal(t, "identity.linkerd.cluster.local", issuer.Subject.CommonName)
	assert.True(t, issuer.IsCA)
	pool := x509.NewCertPool()
	pool.AddCert(root)
	_, err := issuer.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	require.NoError(t, err, "the issuer must chain to the trust anchor")
	b, _ := pem.Decode([]byte(tls["keyPEM"].(string)))
	require.NotNil(t, b)
	assert.Equal(t, "EC PRIVATE KEY", b.Type)
	key, err := x509.ParseECPrivateKey(b.Bytes)
	require.NoError(t, err)
	assert.True(t, key.PublicKey.Equal(issuer.PublicKey.(*ecdsa.PublicKey)), "the key must be the issuer's")
	// The values log shows certificates by their length, never their bytes.
	for _, kv := range FlattenValues(v) {
		assert.NotContains(t, kv, "BEGIN")
	}

	assert.Equal(t, "edge-25.11.2", v["linkerdVersion"])
	assert.Equal(t, []string{"linkerdVersion"}, cs[1].Pins)

	cs = charts(t, newMesh(t, "linkerd"), InstallOptions{Registry: "r.local/l5d"})
	var images []string
	for _, kv := range FlattenValues(cs[1].Values) {
		if strings.Contains(kv, "r.local") || strings.HasPrefix(kv, "linkerdVersion=") {
			images = append(images, kv)
		}
	}
	// The policy controller runs from controllerImage (edge-25.10.1's chart
	// has no policyController.image).
	assert.Equal(t, []string{"controllerImage=r.local/l5d/controller", "debugContainer.image.name=r.local/l5d/debug",
		"linkerdVersion=edge-25.10.1", "proxy.image.name=r.local/l5d/proxy", "proxyInit.image.name=r.local/l5d/proxy-init"}, images)
}

func TestLinkerdVersionOf(t *testing.T) {
	assert.Equal(t, "edge-25.10.1", linkerdVersionOf("2025.10.1"))
	assert.Equal(t, "edge-26.1.12", linkerdVersionOf("2026.1.12"))
	assert.Equal(t, "stable-2.14.10", linkerdVersionOf("2.14.10"))
}

func TestDevCoordinate(t *testing.T) {
	for _, v := range []string{"latest", "linkerdVersionValue", "gcr.io/istio-testing", "registry.istio.io/testing"} {
		assert.True(t, DevCoordinate(v), v)
	}
	for _, v := range []string{"1.28.0", "docker.io/istio", "edge-25.10.1", "cr.l5d.io/linkerd/controller"} {
		assert.False(t, DevCoordinate(v), v)
	}
}

func TestCiliumCharts(t *testing.T) {
	cs := charts(t, newMesh(t, "cilium"), InstallOptions{Registry: "r.local/cilium"})
	assert.Equal(t, []string{"kube-system/cilium=cilium@1.19.3 https://helm.cilium.io/"}, plan(cs))
	assert.Equal(t, []string{
		"encryption.enabled=true", "encryption.type=ipsec", "envoy.enabled=false",
		"hubble.enabled=false", "hubble.relay.enabled=false", "hubble.ui.enabled=false",
		"image.pullPolicy=IfNotPresent", "image.repository=r.local/cilium/cilium", "image.tag=v1.19.3", "image.useDigest=false",
		"ipam.mode=kubernetes", "kubeProxyReplacement=false", "l7Proxy=false",
		"operator.image.pullPolicy=IfNotPresent", "operator.image.repository=r.local/cilium/operator",
		"operator.image.tag=v1.19.3", "operator.image.useDigest=false", "operator.replicas=1",
		"routingMode=tunnel", "tunnelProtocol=vxlan",
	}, FlattenValues(cs[0].Values))
	assert.Equal(t, []string{"image.tag", "operator.image.tag"}, cs[0].Pins)
	// What the chart installs is what Verify accepts as an encrypting Cilium.
	assert.True(t, ciliumEncrypts(map[string]string{"enable-ipsec": "true"}))

	wg, err := New("cilium", WithEncryption("wireguard"))
	require.NoError(t, err)
	cs = charts(t, wg, InstallOptions{})
	assert.Contains(t, FlattenValues(cs[0].Values), "encryption.type=wireguard")
	bad, err := New("cilium", WithEncryption("tls"))
	require.NoError(t, err)
	_, err = bad.(Installer).Charts(InstallOptions{})
	assert.EqualError(t, err, `cilium: encryption "tls": want one of ipsec, wireguard, none`)

	// Encryption off: Cilium is the CNI only, and says its hops are plain.
	plain, err := New("cilium", WithEncryption("none"))
	require.NoError(t, err)
	cs = charts(t, plain, InstallOptions{})
	assert.NotContains(t, cs[0].Values, "encryption")
	assert.Equal(t, "cilium: it is the CNI of every node of the cluster", plain.(ClusterWide).ClusterWide())
	const note = "cilium: encryption off (%s): the meshed arm is Cilium's eBPF datapath as the CNI, every hop plain text by design"
	assert.Equal(t, fmt.Sprintf(note, "CiliumEncryption=none"), PlainByDesign(plain, Info{Config: map[string]string{"enable-ipsec": "false"}}))
	worded, err := New("cilium", WithEncryption("none"), WithWords(func(s testbed.Setting) string { return "<" + s.Name + ":" + s.Value + ">" }))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(note, "<CiliumEncryption:none>"), PlainByDesign(worded, Info{}))
	assert.Empty(t, PlainByDesign(plain, Info{Config: map[string]string{"enable-ipsec": "true"}}), "a cluster that encrypts is not plain")
	assert.Empty(t, PlainByDesign(newMesh(t, "cilium"), Info{}), "ipsec asked for: a plain cluster is a failed proof, not a design")
	notes, err := plain.(Preparer).Prepare(context.Background(), fake.NewClientset(), InstallOptions{})
	require.NoError(t, err)
	assert.Empty(t, notes, "no IPsec key without IPsec")
}

func TestCiliumImages(t *testing.T) {
	imgs, err := newMesh(t, "cilium").(interface {
		Images(InstallOptions) ([]string, error)
	}).Images(InstallOptions{Registry: "meshbench"})
	require.NoError(t, err)
	assert.Equal(t, []string{"meshbench/cilium:v1.19.3", "meshbench/operator-generic:v1.19.3"}, imgs)
}

func TestCiliumPrepareMakesOneIPsecKey(t *testing.T) {
	c := fake.NewClientset()
	p := newMesh(t, "cilium").(Preparer)
	notes, err := p.Prepare(context.Background(), c, InstallOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"IPsec key: made for this run (rfc4106(gcm(aes)), 128-bit ICV) in Secret kube-system/cilium-ipsec-keys"}, notes)
	sec, err := c.CoreV1().Secrets("kube-system").Get(context.Background(), "cilium-ipsec-keys", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^3\+ rfc4106\(gcm\(aes\)\) [0-9a-f]{40} 128$`, sec.StringData["keys"])
	notes, err = p.Prepare(context.Background(), c, InstallOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"IPsec key: Secret kube-system/cilium-ipsec-keys exists, kept"}, notes)
}

func TestInstallVersionIsChecked(t *testing.T) {
	for _, n := range []string{"istio", "istio-ambient", "istio-proxyless", "linkerd", "cilium"} {
		_, err := newMesh(t, n).(Installer).Charts(InstallOptions{Version: "latest"})
		require.Error(t, err, n)
		assert.Contains(t, err.Error(), n+`: install version "latest" is not a chart version (want e.g. `+DefaultVersion(newMesh(t, n))+")")
	}
}

func TestFlattenValues(t *testing.T) {
	v := map[string]any{}
	set(v, "b.c", 1)
	set(v, "a", "x")
	set(v, "b.d.e", true)
	set(v, "k", string(make([]byte, 65)))
	assert.Equal(t, []string{"a=x", "b.c=1", "b.d.e=true", "k=<65 bytes>"}, FlattenValues(v))
}

func parseCert(t *testing.T, s string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	require.NotNil(t, b, "no PEM block")
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// Where the nodes cannot grant CAP_SYS_RESOURCE, the agent does not ask.
func TestCiliumLeavesOutCapabilitiesTheNodesLack(t *testing.T) {
	cs := charts(t, newMesh(t, "cilium"), InstallOptions{NoCapabilities: []string{"SYS_RESOURCE"}})
	caps := cs[0].Values["securityContext"].(map[string]any)["capabilities"]
	assert.Equal(t, map[string]any{
		"ciliumAgent": []any{"CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_MODULE", "SYS_ADMIN",
			"DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "SYSLOG"},
		"cleanCiliumState": []any{"NET_ADMIN", "SYS_MODULE", "SYS_ADMIN"},
	}, caps)
	cs = charts(t, newMesh(t, "cilium"), InstallOptions{})
	assert.NotContains(t, cs[0].Values, "securityContext", "the chart's own lists where the nodes grant everything")
}
