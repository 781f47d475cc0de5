package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var ctx = context.Background()

func newMesh(t *testing.T, name string, opts ...Option) Mesh {
	t.Helper()
	m, err := New(name, opts...)
	require.NoError(t, err)
	return m
}

func TestLinkerdDetect(t *testing.T) {
	c := clientset(append(load(t, "linkerd/linkerd-config.yaml"), load(t, "linkerd/linkerd-destination.yaml")...)...)
	info, err := newMesh(t, "linkerd").Detect(ctx, c)
	require.NoError(t, err)
	assert.True(t, info.Installed)
	assert.Equal(t, "install-control-plane-version", info.Version)
	assert.Equal(t, "linkerd", info.Namespace)
	assert.Equal(t, "cr.l5d.io/linkerd/proxy:install-proxy-version", info.Config["proxy.image"])
	assert.Equal(t, "true", info.Config["proxy.nativeSidecar"])
	assert.Equal(t, "all-unauthenticated", info.Config["proxy.defaultInboundPolicy"])
	assert.Equal(t, Threads{N: 1, Mode: "fixed", Source: "linkerd-config proxy.runtime.workers.minimum"}, info.Threads)
	assert.Equal(t, []Component{{Kind: "Deployment", Namespace: "linkerd", Name: "linkerd-destination",
		Image: "cr.l5d.io/linkerd/controller:install-control-plane-version"}}, info.Components)
}

func TestLinkerdNotInstalled(t *testing.T) {
	info, err := newMesh(t, "linkerd").Detect(ctx, clientset())
	var ni *NotInstalledError
	require.True(t, errors.As(err, &ni))
	assert.False(t, info.Installed)
	assert.EqualError(t, err, "linkerd is not installed: no ConfigMap linkerd/linkerd-config")
}

func TestLinkerdEnable(t *testing.T) {
	c := clientset(namespace("mb-meshed", map[string]string{"team": "perf"}, nil))
	require.NoError(t, newMesh(t, "linkerd").Enable(ctx, c, "mb-meshed"))
	ns, err := c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"linkerd.io/inject": "enabled"}, ns.Annotations)
	assert.Equal(t, map[string]string{"team": "perf"}, ns.Labels)
}

func TestLinkerdVerify(t *testing.T) {
	injected := loadOne[*corev1.Pod](t, "linkerd/pod-injected.yaml")
	plain := loadOne[*corev1.Pod](t, "linkerd/pod-plain.yaml")
	ns := namespace("emojivoto", nil, map[string]string{"linkerd.io/inject": "enabled"})
	l := newMesh(t, "linkerd")

	t.Run("meshed arm with the proxy passes", func(t *testing.T) {
		v, err := l.Verify(ctx, clientset(ns, injected), "emojivoto", true)
		require.NoError(t, err)
		require.Len(t, v.Pods, 1)
		assert.Equal(t, []string{"linkerd-proxy"}, v.Pods[0].Proxies)
		assert.Equal(t, &Threads{N: 1, Mode: "fixed", Source: "LINKERD2_PROXY_CORES"}, v.Pods[0].Threads)
	})
	t.Run("meshed arm without the proxy fails", func(t *testing.T) {
		_, err := l.Verify(ctx, clientset(ns, plain), "emojivoto", true)
		var ve *VerifyError
		require.True(t, errors.As(err, &ve))
		assert.EqualError(t, err, `linkerd: meshed namespace "emojivoto" failed verification: pod vote-bot has no "linkerd-proxy" container: `+
			`injection did not happen (is the namespace annotated linkerd.io/inject=enabled, and were the pods restarted after?)`)
	})
	t.Run("baseline with the proxy fails", func(t *testing.T) {
		_, err := l.Verify(ctx, clientset(namespace("emojivoto", nil, nil), injected), "emojivoto", false)
		assert.EqualError(t, err, `linkerd: baseline namespace "emojivoto" failed verification: `+
			`pod vote-bot has proxy container "linkerd-proxy"; the baseline must run without a mesh`)
	})
	t.Run("baseline in an annotated namespace fails", func(t *testing.T) {
		_, err := l.Verify(ctx, clientset(ns, plain), "emojivoto", false)
		assert.EqualError(t, err, `linkerd: baseline namespace "emojivoto" failed verification: `+
			`the namespace has annotation linkerd.io/inject=enabled, so new pods would be meshed`)
	})
	t.Run("baseline without proxies passes", func(t *testing.T) {
		v, err := l.Verify(ctx, clientset(namespace("emojivoto", nil, nil), plain), "emojivoto", false)
		require.NoError(t, err)
		assert.Empty(t, v.Pods[0].Proxies)
	})
	t.Run("an empty namespace proves nothing", func(t *testing.T) {
		_, err := l.Verify(ctx, clientset(ns), "emojivoto", true)
		assert.ErrorContains(t, err, "no running pods to verify")
	})
}

func TestLinkerdEdges(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "linkerd", "proxy-metrics.txt"))
	require.NoError(t, err)
	defer f.Close()
	edges, err := LinkerdEdges("linkerd-opaque-ports-test/slow-cooker-opaque-pod", f)
	require.NoError(t, err)
	// The inbound series are on the admin port (4191: probes and scrapes)
	// and the outbound peer="src" one is the app's own hop to its proxy.
	assert.Equal(t, []Edge{{
		Src:     "linkerd-opaque-ports-test/slow-cooker-opaque-pod",
		Dst:     "linkerd-opaque-ports-test/opaque-pod",
		Secured: true,
		Evidence: `tcp_open_total{direction="outbound",peer="dst",target_port="8080",tls="true",` +
			`server_id="default.linkerd-opaque-ports-test.serviceaccount.identity.linkerd.cluster.local"} 1`,
	}}, edges)
}

func TestLinkerdEdgesPlaintextInbound(t *testing.T) {
	// The recorded line of an inbound admin-port scrape, moved to an
	// application port: a client outside the mesh reaching the pod.
	in := `tcp_open_total{direction="inbound",peer="src",target_addr="0.0.0.0:8080",target_ip="0.0.0.0",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote",srv_kind="default",srv_name="all-unauthenticated"} 30` + "\n"
	edges, err := LinkerdEdges("mb/backend", strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []Edge{{Src: "unknown", Dst: "mb/backend", Secured: false,
		Evidence: `tcp_open_total{direction="inbound",peer="src",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote"} 30`}}, edges)
}

func TestLinkerdEdgesLeaveOutLoopbackAndProbes(t *testing.T) {
	// The inbound proxy's own connection to its application
	// (peer="dst", no_tls_reason="loopback"), as a Linkerd proxy reported it.
	f, err := os.Open(filepath.Join("testdata", "linkerd", "proxy-metrics-loopback.txt"))
	require.NoError(t, err)
	defer f.Close()
	edges, err := LinkerdEdges("mb/backend", f)
	require.NoError(t, err)
	// What is left is the plaintext inbound series of that old proxy, which
	// had no target_port: it cannot be told apart from a client outside the
	// mesh, so it stays, and nothing else does.
	assert.Equal(t, []Edge{{Src: "unknown", Dst: "mb/backend",
		Evidence: `tcp_open_total{direction="inbound",peer="src",tls="no_identity",no_tls_reason="no_tls_from_remote"} 44`}}, edges)

	// The recorded admin-port request_total line moved to the application
	// port and routed as the policy controller routes kubelet probes: the
	// probes' requests and their connections on that port are left out,
	// while a plaintext request from elsewhere still shows.
	probe := `request_total{direction="inbound",target_addr="0.0.0.0:8080",target_ip="0.0.0.0",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote",srv_kind="default",srv_name="all-unauthenticated",route_kind="default",route_name="probe",authz_kind="default",authz_name="probe"} 30` + "\n"
	conns := `tcp_open_total{direction="inbound",peer="src",target_addr="0.0.0.0:8080",target_ip="0.0.0.0",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote",srv_kind="default",srv_name="all-unauthenticated"} 30` + "\n"
	loop := `tcp_open_total{direction="inbound",peer="dst",target_addr="10.42.0.7:8080",target_ip="10.42.0.7",target_port="8080",tls="no_identity",no_tls_reason="loopback"} 2` + "\n"
	edges, err = LinkerdEdges("mb/backend", strings.NewReader(probe+conns+loop))
	require.NoError(t, err)
	assert.Empty(t, edges)
	stray := `request_total{direction="inbound",target_addr="0.0.0.0:8080",target_ip="0.0.0.0",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote",srv_kind="default",srv_name="all-unauthenticated",route_kind="default",route_name="default",authz_kind="default",authz_name="all-unauthenticated"} 3` + "\n"
	edges, err = LinkerdEdges("mb/backend", strings.NewReader(probe+conns+loop+stray))
	require.NoError(t, err)
	assert.Equal(t, []Edge{{Src: "unknown", Dst: "mb/backend",
		Evidence: `request_total{direction="inbound",target_port="8080",tls="no_identity",no_tls_reason="no_tls_from_remote"} 3`}}, edges)
}

// apiServer serves a pod list and the pods' proxy endpoints, standing in for
// the API server.
func apiServer(t *testing.T, pods []corev1.Pod, proxied map[string]string) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := proxied[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(body))
			return
		}
		for _, p := range pods {
			if r.URL.Path == "/api/v1/namespaces/"+p.Namespace+"/pods" {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return c
}

func TestLinkerdMTLSThroughPodProxy(t *testing.T) {
	metrics, err := os.ReadFile(filepath.Join("testdata", "linkerd", "proxy-metrics.txt"))
	require.NoError(t, err)
	pod := loadOne[*corev1.Pod](t, "linkerd/pod-injected.yaml")
	c := apiServer(t, []corev1.Pod{*pod}, map[string]string{
		"/api/v1/namespaces/emojivoto/pods/vote-bot:4191/proxy/metrics": string(metrics),
	})
	edges, err := newMesh(t, "linkerd").(MTLSChecker).MTLS(ctx, c, "emojivoto")
	require.NoError(t, err)
	require.Len(t, edges, 1)
	assert.Equal(t, "emojivoto/vote-bot", edges[0].Src)
	assert.Equal(t, "linkerd-opaque-ports-test/opaque-pod", edges[0].Dst)
	assert.True(t, edges[0].Secured)
}
