package mesh

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIstioDetect(t *testing.T) {
	info, err := newMesh(t, "istio").Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	require.NoError(t, err)
	assert.True(t, info.Installed)
	assert.Equal(t, "1.1.4", info.Version)
	assert.Equal(t, []Component{{Kind: "Deployment", Namespace: "istio-system", Name: "istiod",
		Image: "registry.istio.io/release/pilot:1.1.4"}}, info.Components)
	assert.Equal(t, "cluster.local", info.Config["trustDomain"])
	assert.Equal(t, Threads{Mode: "auto", Source: "mesh config defaultConfig.concurrency unset: " +
		"pilot-agent derives it from the proxy's CPU request/limit"}, info.Threads)

	_, err = newMesh(t, "istio", WithRevision("canary")).Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	assert.EqualError(t, err, "istio is not installed: no Deployment labelled app=istiod in istio-system with istio.io/rev=canary")
}

func TestIstioEnable(t *testing.T) {
	c := clientset(namespace("mb-meshed", nil, nil))
	require.NoError(t, newMesh(t, "istio").Enable(ctx, c, "mb-meshed"))
	ns, _ := c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	assert.Equal(t, map[string]string{"istio-injection": "enabled"}, ns.Labels)

	// A revision replaces the default injector's label, which would win.
	require.NoError(t, newMesh(t, "istio", WithRevision("1-22")).Enable(ctx, c, "mb-meshed"))
	ns, _ = c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	assert.Equal(t, map[string]string{"istio.io/rev": "1-22"}, ns.Labels)
}

func TestIstioVerify(t *testing.T) {
	injected := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/deployment-injected.yaml"), "traffic-7d9c5-abcde", "mb", "kind-worker")
	plain := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml"), "hello-5d6f7-fghij", "mb", "kind-worker")
	labelled := namespace("mb", map[string]string{"istio-injection": "enabled"}, nil)
	i := newMesh(t, "istio")

	t.Run("meshed arm with the native sidecar passes", func(t *testing.T) {
		v, err := i.Verify(ctx, clientset(labelled, injected), "mb", true)
		require.NoError(t, err)
		assert.Equal(t, []string{"istio-proxy"}, v.Pods[0].Proxies)
		// The recorded template sets concurrency 0 in proxy.istio.io/config.
		assert.Equal(t, &Threads{Mode: "all-cores", Source: "pod annotation proxy.istio.io/config concurrency=0: " +
			"one Envoy worker per core of the node"}, v.Pods[0].Threads)
	})
	t.Run("meshed arm without sidecars fails", func(t *testing.T) {
		_, err := i.Verify(ctx, clientset(labelled, plain), "mb", true)
		assert.EqualError(t, err, `istio: meshed namespace "mb" failed verification: pod hello-5d6f7-fghij has no "istio-proxy" container: `+
			`injection did not happen (is the namespace labelled istio-injection=enabled, and were the pods restarted after?)`)
	})
	t.Run("baseline with a sidecar fails", func(t *testing.T) {
		_, err := i.Verify(ctx, clientset(namespace("mb", nil, nil), plain, injected), "mb", false)
		var ve *VerifyError
		require.True(t, errors.As(err, &ve))
		assert.Equal(t, []string{`pod traffic-7d9c5-abcde has proxy container "istio-proxy"; the baseline must run without a mesh`}, ve.Problems)
	})
	t.Run("an opted-out pod fails the meshed arm", func(t *testing.T) {
		out := injected.DeepCopy()
		out.Annotations["sidecar.istio.io/inject"] = "false"
		_, err := i.Verify(ctx, clientset(labelled, out), "mb", true)
		assert.ErrorContains(t, err, "pod traffic-7d9c5-abcde opts out of injection with sidecar.istio.io/inject=false")
	})
	t.Run("a proxy that is not ready fails the meshed arm", func(t *testing.T) {
		nr := injected.DeepCopy()
		nr.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "istio-proxy", Ready: false}}
		_, err := i.Verify(ctx, clientset(labelled, nr), "mb", true)
		assert.ErrorContains(t, err, `pod traffic-7d9c5-abcde: proxy "istio-proxy" is not ready`)
	})
}

func TestIstioEdges(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "istio", "sidecar-stats.txt"))
	require.NoError(t, err)
	defer f.Close()
	edges, err := IstioEdges(f)
	require.NoError(t, err)
	assert.Equal(t, []Edge{
		{Src: "istio-system/istio-ingressgateway", Dst: "istioinaction/webapp", Secured: true,
			Evidence: `istio_requests_total{reporter="destination",connection_security_policy="mutual_tls"} 310`},
		{Src: "istioinaction/webapp", Dst: "istioinaction/catalog", Secured: false,
			Evidence: `unverified: only client-side telemetry (istio_requests_total{reporter="source",connection_security_policy="unknown"} 310), ` +
				`which cannot see mTLS; read the destination's proxy`},
	}, edges)
}
