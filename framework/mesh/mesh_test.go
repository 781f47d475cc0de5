package mesh

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestNew(t *testing.T) {
	for _, n := range Names() {
		m, err := New(n)
		require.NoError(t, err)
		assert.Equal(t, n, m.Name())
	}
	_, err := New("consul")
	assert.EqualError(t, err, `unknown mesh "consul" (known: none, linkerd, istio, istio-ambient, istio-proxyless, cilium, sidecar)`)
}

func TestRequirements(t *testing.T) {
	has := func(name string) (mtls, inject bool) {
		m := newMesh(t, name)
		_, mtls = m.(MTLSChecker)
		_, inject = m.(Injector)
		return
	}
	for _, n := range []string{"linkerd", "istio", "istio-ambient", "istio-proxyless", "cilium", "sidecar"} {
		mtls, _ := has(n)
		assert.True(t, mtls, n)
	}
	mtls, inject := has("none")
	assert.False(t, mtls)
	assert.False(t, inject)
	_, inject = has("sidecar")
	assert.True(t, inject)
}

func TestRolesSelectRecordedPods(t *testing.T) {
	ztunnel := podFrom(t, loadOne[*appsv1.DaemonSet](t, "ambient/ztunnel-daemonset.yaml"), "ztunnel-x7k2p", "", "kind-worker")
	istiod := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/istiod.yaml"), "istiod-6b7c8-aaaaa", "", "kind-worker")
	r := newMesh(t, "istio-ambient").Roles()
	assert.True(t, r.NodeProxies[0].Matches(ztunnel, "istio-proxy"))
	assert.False(t, r.NodeProxies[0].Matches(istiod, "discovery"))
	assert.True(t, r.ControlPlane[0].Matches(istiod, "discovery"))

	linkerdPod := loadOne[*corev1.Pod](t, "linkerd/pod-injected.yaml")
	lr := newMesh(t, "linkerd").Roles()
	assert.Equal(t, []string{"linkerd-proxy"}, lr.Sidecars)
	// Workload pods carry linkerd.io/control-plane-ns too; only pods in the
	// control-plane namespace are control plane.
	assert.False(t, lr.ControlPlane[0].Matches(linkerdPod, "linkerd-proxy"))

	cr := newMesh(t, "cilium").Roles()
	agent := podFrom(t, loadOne[*appsv1.DaemonSet](t, "cilium/cilium-1.19.3.yaml"), "cilium-4xq8z", "", "n1")
	assert.True(t, cr.NodeProxies[0].Matches(agent, "cilium-agent"))
}

func TestNone(t *testing.T) {
	plain := loadOne[*corev1.Pod](t, "linkerd/pod-plain.yaml")
	injected := loadOne[*corev1.Pod](t, "linkerd/pod-injected.yaml")
	n := newMesh(t, "none")
	c := clientset(namespace("emojivoto", nil, nil), plain)
	require.NoError(t, n.Enable(ctx, c, "emojivoto"))
	v, err := n.Verify(ctx, c, "emojivoto", true)
	require.NoError(t, err)
	assert.Equal(t, []string{"mesh none: the meshed arm is a second baseline (an A/A run)"}, v.Notes)

	_, err = n.Verify(ctx, clientset(namespace("emojivoto", nil, nil), injected), "emojivoto", true)
	var ve *VerifyError
	require.True(t, errors.As(err, &ve))
	assert.True(t, ve.Meshed)
	assert.Contains(t, err.Error(), `pod vote-bot has proxy container "linkerd-proxy"`)
}

func TestSidecar(t *testing.T) {
	s := newMesh(t, "sidecar", WithSidecar("", "ghcr.io/meshbench/proxy:0.3.1", "--mtls"))
	info, err := s.Detect(ctx, clientset())
	require.NoError(t, err)
	assert.Equal(t, Info{Mesh: "sidecar", Installed: true, Version: "0.3.1",
		Config:  map[string]string{"container": "mb-sidecar", "image": "ghcr.io/meshbench/proxy:0.3.1"},
		Threads: Threads{Mode: "unknown", Source: "set by the proxy's own configuration"}}, info)

	c := clientset(namespace("mb", nil, nil))
	require.NoError(t, s.Enable(ctx, c, "mb"))
	ns, _ := c.CoreV1().Namespaces().Get(ctx, "mb", metav1.GetOptions{})
	assert.Equal(t, map[string]string{"meshbench.io/sidecar": "enabled"}, ns.Labels)

	d := loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml")
	require.NoError(t, s.(Injector).Inject(&d.Spec.Template))
	require.NoError(t, s.(Injector).Inject(&d.Spec.Template)) // idempotent
	require.Len(t, d.Spec.Template.Spec.Containers, 2)
	assert.Equal(t, corev1.Container{Name: "mb-sidecar", Image: "ghcr.io/meshbench/proxy:0.3.1", Args: []string{"--mtls"}},
		d.Spec.Template.Spec.Containers[1])

	meshedPod := podFrom(t, d, "hello-5d6f7-fghij", "mb", "kind-worker")
	_, err = s.Verify(ctx, clientset(ns, meshedPod), "mb", true)
	require.NoError(t, err)
	_, err = s.Verify(ctx, clientset(namespace("mb", nil, nil), meshedPod), "mb", false)
	assert.ErrorContains(t, err, `pod hello-5d6f7-fghij has proxy container "mb-sidecar"`)

	// Without WithMTLSEvidence the harness wires the proxy and MTLS reads
	// the inbound sidecars' logs of verified peers: there are none here.
	assert.True(t, s.(SidecarProxy).Wired())
	edges, err := s.(MTLSChecker).MTLS(ctx, c, "mb")
	require.NoError(t, err)
	assert.Empty(t, edges)
	withEvidence := newMesh(t, "sidecar", WithMTLSEvidence(func(context.Context, kubernetes.Interface, string) ([]Edge, error) {
		return []Edge{{Src: "mb/frontend", Dst: "mb/backend", Secured: true, Evidence: "peer certificate CN=backend"}}, nil
	}))
	assert.False(t, withEvidence.(SidecarProxy).Wired(), "the user's proxy brings its own wiring")
	edges, err = withEvidence.(MTLSChecker).MTLS(ctx, c, "mb")
	require.NoError(t, err)
	assert.Equal(t, []Edge{{Src: "mb/frontend", Dst: "mb/backend", Secured: true, Evidence: "peer certificate CN=backend"}}, edges)

	plain := loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml")
	assert.EqualError(t, newMesh(t, "sidecar").(Injector).Inject(&plain.Spec.Template), "sidecar: no proxy image (use WithSidecar)")
	assert.NoError(t, newMesh(t, "sidecar").(Injector).Inject(&d.Spec.Template), "a template the harness wired already has the proxy")
}

func TestCountPeers(t *testing.T) {
	// nginx's $ssl_client_s_dn, one line per verified request.
	log := "CN=loadgen,O=meshbench\nCN=loadgen,O=meshbench\nCN=frontend,O=meshbench\n-\n\n"
	assert.Equal(t, map[string]int64{"loadgen": 2, "frontend": 1, "": 1}, CountPeers(log))
	assert.Equal(t, "backend", commonName("/O=meshbench/CN=backend"))
	assert.Equal(t, []Edge{{Src: "mb/loadgen", Dst: "mb/backend", Peer: "loadgen", Secured: true, Requests: 5, Evidence: "a; b"}},
		sumPeers([]Edge{{Src: "mb/loadgen", Dst: "mb/backend", Peer: "loadgen", Secured: true, Requests: 2, Evidence: "a"},
			{Src: "mb/loadgen", Dst: "mb/backend", Peer: "loadgen", Secured: true, Requests: 3, Evidence: "b"}}))
}

func TestMergeEdges(t *testing.T) {
	got := MergeEdges(
		[]Edge{{Src: "a/x", Dst: "a/y", Secured: true, Evidence: "e1"}},
		[]Edge{{Src: "a/x", Dst: "a/y", Secured: false, Evidence: "e2"}, {Src: "a/y", Dst: "a/z", Secured: true, Evidence: "e3"}},
	)
	assert.Equal(t, []Edge{
		{Src: "a/x", Dst: "a/y", Secured: false, Evidence: "e1; e2"},
		{Src: "a/y", Dst: "a/z", Secured: true, Evidence: "e3"},
	}, got)
}

func TestRestart(t *testing.T) {
	d := loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml")
	d.Namespace = "mb"
	c := clientset(d)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, Restart(ctx, c, "mb", at))
	got, err := c.AppsV1().Deployments("mb").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2026-05-01T12:00:00Z", got.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"])
}

func TestImageTag(t *testing.T) {
	for in, want := range map[string]string{
		"quay.io/cilium/cilium:v1.19.3@sha256:2e61680593cddca8b6c055f6d4c849d87a26a1c91c7e3b8b56c7fb76ab7b7b10": "v1.19.3",
		"docker.io/istio/ztunnel:1.30.1-distroless":                                                             "1.30.1",
		"localhost:5000/proxy":                "",
		"cr.l5d.io/linkerd/proxy:edge-25.4.1": "edge-25.4.1",
	} {
		assert.Equal(t, want, imageTag(in), in)
	}
}
