package mesh

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	// The recorded ztunnel sets no ZTUNNEL_WORKER_THREADS: it runs its
	// default 2 workers, whatever its CPU limit (200m).
	assert.Equal(t, Threads{N: 2, Mode: "fixed", Source: "ztunnel's default (ZTUNNEL_WORKER_THREADS and PROXY_CONFIG concurrency unset)"}, info.Threads)
	assert.Equal(t, "istio-system", info.Config["ztunnel.namespace"])

	_, err = newMesh(t, "istio-ambient").Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	assert.EqualError(t, err, "istio-ambient is not installed: no DaemonSet ztunnel in istio-system or kube-system")
}

func TestAmbientDetectInKubeSystem(t *testing.T) {
	// GKE runs ztunnel and istio-cni in kube-system.
	ds := loadOne[*appsv1.DaemonSet](t, "ambient/ztunnel-daemonset.yaml")
	ds.Namespace = "kube-system"
	cni := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "istio-cni-node", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "install-cni", Image: "cni:1.28.0"}}}}}}
	a := newMesh(t, "istio-ambient")
	info, err := a.Detect(ctx, clientset(ds, cni))
	require.NoError(t, err)
	assert.Equal(t, []Component{
		{Kind: "DaemonSet", Namespace: "kube-system", Name: "ztunnel", Image: "registry.istio.io/testing/ztunnel:latest-distroless"},
		{Kind: "DaemonSet", Namespace: "kube-system", Name: "istio-cni-node", Image: "cni:1.28.0"},
	}, info.Components)
	assert.Equal(t, "kube-system", info.Config["ztunnel.namespace"])
	assert.Equal(t, "kube-system", info.Config["istio-cni.namespace"])
	r := a.Roles()
	assert.Equal(t, []Workload{{Namespace: "kube-system", Labels: map[string]string{"app": "ztunnel"}}}, r.NodeProxies)
	assert.Equal(t, Workload{Namespace: "kube-system", Labels: map[string]string{"k8s-app": "istio-cni-node"}}, r.ControlPlane[1])

	// Verify looks for the ztunnels where Detect found them.
	app := loadOne[*corev1.Pod](t, "ambient/pod-ambient.yaml")
	app.Spec.NodeName = "kind-worker"
	zt := podFrom(t, ds, "ztunnel-x7k2p", "", "kind-worker")
	_, err = a.Verify(ctx, clientset(namespace("test-ambient", map[string]string{"istio.io/dataplane-mode": "ambient"}, nil), zt, app), "test-ambient", true)
	require.NoError(t, err)
}

func TestZtunnelThreads(t *testing.T) {
	ds := loadOne[*appsv1.DaemonSet](t, "ambient/ztunnel-daemonset.yaml")
	base := ds.Spec.Template.Spec.Containers[0] // limits.cpu 200m, ZTUNNEL_CPU_LIMIT from limits.cpu
	with := func(limit string, env ...corev1.EnvVar) *corev1.Container {
		c := base.DeepCopy()
		c.Env = append(c.Env, env...)
		if limit == "" {
			delete(c.Resources.Limits, corev1.ResourceCPU)
		} else {
			c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(limit)
		}
		return c
	}
	env := func(k, v string) corev1.EnvVar { return corev1.EnvVar{Name: k, Value: v} }
	for _, tc := range []struct {
		name string
		ctr  *corev1.Container
		want Threads
	}{
		{"fixed", with("200m", env("ZTUNNEL_WORKER_THREADS", "4")), Threads{N: 4, Mode: "fixed", Source: "ztunnel ZTUNNEL_WORKER_THREADS"}},
		// ztunnel's own test: 30% of 16 CPUs is 5 threads (rounded up).
		{"percent of the limit", with("16", env("ZTUNNEL_WORKER_THREADS", "30%")),
			Threads{N: 5, Mode: "fixed", Source: "ZTUNNEL_WORKER_THREADS=30% of ZTUNNEL_CPU_LIMIT=16 (limits.cpu 16 rounded up)"}},
		{"percent of a sub-core limit", with("200m", env("ZTUNNEL_WORKER_THREADS", "10%")),
			Threads{N: 1, Mode: "fixed", Source: "ZTUNNEL_WORKER_THREADS=10% of ZTUNNEL_CPU_LIMIT=1 (limits.cpu 200m rounded up)"}},
		{"percent without a limit", with("", env("ZTUNNEL_WORKER_THREADS", "50%")),
			Threads{Mode: "auto", Source: "ZTUNNEL_WORKER_THREADS=50% of ZTUNNEL_CPU_LIMIT, which without a CPU limit is the node's core count"}},
		{"bad percent", with("2", env("ZTUNNEL_WORKER_THREADS", "150%")),
			Threads{Mode: "unknown", Source: "ZTUNNEL_WORKER_THREADS=150% is not a percentage between 0 and 100"}},
		{"proxy config", with("2", env("PROXY_CONFIG", "concurrency: 3\n")), Threads{N: 3, Mode: "fixed", Source: "ztunnel PROXY_CONFIG concurrency"}},
		{"a larger limit alone changes nothing", with("8"), Threads{N: 2, Mode: "fixed",
			Source: "ztunnel's default (ZTUNNEL_WORKER_THREADS and PROXY_CONFIG concurrency unset)"}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ztunnelThreads(tc.ctr)) })
	}
}

func TestAmbientEnable(t *testing.T) {
	c := clientset(namespace("mb-meshed", nil, nil))
	require.NoError(t, newMesh(t, "istio-ambient").Enable(ctx, c, "mb-meshed"))
	ns, _ := c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	assert.Equal(t, map[string]string{"istio.io/dataplane-mode": "ambient"}, ns.Labels)
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
