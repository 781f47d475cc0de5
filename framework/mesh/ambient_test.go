package mesh

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAmbientDetect(t *testing.T) {
	objs := append(load(t, "ambient/ztunnel-daemonset.yaml"), load(t, "istio/istiod.yaml")...)
	info, err := newMesh(t, "istio-ambient").Detect(ctx, clientset(objs...))
	require.NoError(t, err)
	assert.True(t, info.Installed)
	assert.Equal(t, "latest", info.Version) // registry.istio.io/testing/ztunnel:latest-distroless
	assert.Equal(t, []Component{
		{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel", Image: "registry.istio.io/testing/ztunnel:latest-distroless"},
		{Kind: "Deployment", Namespace: "istio-system", Name: "istiod", Image: "registry.istio.io/release/pilot:1.1.4"},
	}, info.Components)
	assert.Equal(t, "200m", info.Config["ztunnel.limits.cpu"])
	assert.Equal(t, Threads{Mode: "auto", Source: "ztunnel ZTUNNEL_WORKER_THREADS unset: ztunnel's default of 2 workers, " +
		"bounded by ZTUNNEL_CPU_LIMIT (limits.cpu=200m)"}, info.Threads)

	_, err = newMesh(t, "istio-ambient").Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	assert.EqualError(t, err, "istio-ambient is not installed: no DaemonSet istio-system/ztunnel")
}

func TestAmbientEnable(t *testing.T) {
	c := clientset(namespace("mb-meshed", nil, nil))
	require.NoError(t, newMesh(t, "istio-ambient", WithWaypoint("waypoint")).Enable(ctx, c, "mb-meshed"))
	ns, _ := c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	assert.Equal(t, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}, ns.Labels)
}

func TestAmbientVerify(t *testing.T) {
	ztunnelDS := loadOne[*appsv1.DaemonSet](t, "ambient/ztunnel-daemonset.yaml")
	ztunnel := podFrom(t, ztunnelDS, "ztunnel-x7k2p", "", "kind-worker")
	app := loadOne[*corev1.Pod](t, "ambient/pod-ambient.yaml")
	app.Spec.NodeName = "kind-worker" // the recorded pod was never scheduled
	ambientNS := namespace("test-ambient", map[string]string{"istio.io/dataplane-mode": "ambient"}, nil)
	a := newMesh(t, "istio-ambient")

	t.Run("captured pods on nodes with ztunnel pass", func(t *testing.T) {
		v, err := a.Verify(ctx, clientset(ambientNS, ztunnel, app), "test-ambient", true)
		require.NoError(t, err)
		assert.Equal(t, []PodCheck{{Pod: "sleep-55bf89f8c9-wzfrh", Node: "kind-worker", Proxies: []string{"ztunnel"}}}, v.Pods)
	})
	t.Run("a node without ztunnel fails", func(t *testing.T) {
		elsewhere := ztunnel.DeepCopy()
		elsewhere.Spec.NodeName = "kind-worker2"
		_, err := a.Verify(ctx, clientset(ambientNS, elsewhere, app), "test-ambient", true)
		assert.EqualError(t, err, `istio-ambient: meshed namespace "test-ambient" failed verification: `+
			`pod sleep-55bf89f8c9-wzfrh runs on node kind-worker, which has no ready ztunnel`)
	})
	t.Run("an uncaptured pod in an unlabelled namespace fails", func(t *testing.T) {
		raw := app.DeepCopy()
		delete(raw.Annotations, "ambient.istio.io/redirection")
		_, err := a.Verify(ctx, clientset(namespace("test-ambient", nil, nil), ztunnel, raw), "test-ambient", true)
		assert.EqualError(t, err, `istio-ambient: meshed namespace "test-ambient" failed verification: `+
			`the namespace is not labelled istio.io/dataplane-mode=ambient; `+
			`pod sleep-55bf89f8c9-wzfrh is not captured by ztunnel (no ambient.istio.io/redirection=enabled annotation): `+
			`is istio-cni running on its node, and was the pod started after the namespace was labelled?`)
	})
	t.Run("a missing waypoint fails", func(t *testing.T) {
		_, err := newMesh(t, "istio-ambient", WithWaypoint("waypoint")).Verify(ctx, clientset(ambientNS, ztunnel, app), "test-ambient", true)
		assert.ErrorContains(t, err, `the namespace is not labelled istio.io/use-waypoint=waypoint (got ""); `+
			`no ready waypoint pod gateway.networking.k8s.io/gateway-name=waypoint in the namespace`)
	})
	t.Run("a captured pod fails the baseline", func(t *testing.T) {
		_, err := a.Verify(ctx, clientset(namespace("test-ambient", nil, nil), app), "test-ambient", false)
		assert.EqualError(t, err, `istio-ambient: baseline namespace "test-ambient" failed verification: `+
			`pod sleep-55bf89f8c9-wzfrh is captured by ztunnel (ambient.istio.io/redirection=enabled); the baseline must run without a mesh`)
	})
}

func TestZtunnelEdges(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "ambient", "ztunnel-metrics.txt"))
	require.NoError(t, err)
	defer f.Close()
	edges, err := ZtunnelEdges(f)
	require.NoError(t, err)
	assert.Equal(t, []Edge{{Src: "default/sleep", Dst: "default/helloworld-v2-same-node", Secured: true,
		Evidence: `istio_tcp_sent_bytes_total{reporter="source",connection_security_policy="mutual_tls"} 225`}}, edges)
}
