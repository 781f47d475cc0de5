package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/meshinstall"
	"github.com/meshbench/meshbench/framework/testbed/kind"
)

// TestMeshInstallOnCluster checks the Helm installer on a real cluster. It
// runs only with MESHBENCH_KUBE_E2E set: to "kind" (a one-node kind cluster
// is created and deleted, MESHBENCH_NGINX_IMAGE is loaded into it) or to a
// kubeconfig (the image must be on the nodes already). It installs a
// stand-in mesh chart and uninstalls it; installs one whose image cannot
// be had and expects a fast, explained failure; and, when
// MESHBENCH_ISTIO_CHARTS names Istio's charts (make e2e downloads them
// from the Go module proxy: they are in the istio.io/istio module), runs the
// target with -mesh=istio -mesh-install, which must fail fast on istiod's
// image (no registry is reachable here) and leave no CRD, webhook or
// namespace behind.
func TestMeshInstallOnCluster(t *testing.T) {
	where := os.Getenv("MESHBENCH_KUBE_E2E")
	if where == "" {
		t.Skip("set MESHBENCH_KUBE_E2E to a kubeconfig, or to kind, to run against a cluster")
	}
	image := os.Getenv("MESHBENCH_NGINX_IMAGE")
	require.NotEmpty(t, image, "MESHBENCH_NGINX_IMAGE: an nginx image present on the nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// One node is enough to install into.
	conf := filepath.Join(t.TempDir(), "kind-config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  disableDefaultCNI: true\nnodes:\n  - role: control-plane\n"), 0o644))
	cfg := E2ECluster(ctx, t, where, conf, "meshbench-install", image)
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	run := strings.TrimPrefix(envconf.RandomName("x", 8), "x-")

	installer := func() *meshinstall.Helm {
		return meshinstall.NewHelm(cfg, c, meshinstall.HelmOptions{ChartDir: filepath.Join("..", "..", "meshinstall", "testdata", "charts"),
			Timeout: 3 * time.Minute, Grace: 30 * time.Second, Logf: t.Logf})
	}
	chart := func(ns, image string) mesh.Chart {
		return mesh.Chart{Release: "mbtest", Namespace: ns, Name: "mbtest-mesh", Version: "0.1.0", Repo: "https://charts.invalid",
			Values: map[string]any{"image": image}}
	}
	gone := func(t *testing.T, ns string) {
		t.Helper()
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "namespace %s left behind (%v)", ns, err)
		_, err = c.RbacV1().ClusterRoles().Get(ctx, "mbtest-mesh-"+ns, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "cluster role of %s left behind (%v)", ns, err)
	}

	t.Run("installs, rolls out and uninstalls", func(t *testing.T) {
		ns := "mbtest-ok-" + run
		h := installer()
		require.NoError(t, h.Install(ctx, []mesh.Chart{chart(ns, image)}))
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "mbtest-control-plane", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(1), d.Status.AvailableReplicas)
		_, err = c.CoreV1().ConfigMaps(ns).Get(ctx, "mbtest-mesh-config", metav1.GetOptions{})
		assert.NoError(t, err)
		require.Len(t, h.Installed(), 1)
		assert.Equal(t, "mbtest-mesh 0.1.0", h.Installed()[0].Loaded)
		assert.Equal(t, []string{ns}, h.Namespaces())
		require.NoError(t, h.Uninstall(ctx))
		gone(t, ns)
		assert.Empty(t, h.Installed())
	})

	t.Run("an image that cannot be had fails fast and is uninstalled", func(t *testing.T) {
		ns := "mbtest-bad-" + run
		h := installer()
		start := time.Now()
		err := h.Install(ctx, []mesh.Chart{chart(ns, "meshbench.invalid/absent:never")})
		took := time.Since(start)
		var pe *PodError
		require.ErrorAs(t, err, &pe, "%v", err)
		assert.Equal(t, "ErrImageNeverPull", pe.Reason)
		assert.Equal(t, "control-plane", pe.Container)
		assert.Contains(t, err.Error(), "helm install "+ns+"/mbtest (mbtest-mesh 0.1.0")
		assert.Less(t, took, 90*time.Second, "the watcher must not wait for the rollout timeout")
		t.Logf("failed after %v: %v", took.Round(time.Second), err)
		require.NoError(t, h.Uninstall(ctx))
		gone(t, ns)
	})

	t.Run("istio from its charts, through the target", func(t *testing.T) {
		dir := os.Getenv("MESHBENCH_ISTIO_CHARTS")
		if dir == "" {
			t.Skip("set MESHBENCH_ISTIO_CHARTS to Istio's charts: `go mod download -json istio.io/istio@<version>`, then <Dir>/manifests/charts (make e2e does it)")
		}
		m, err := mesh.New("istio")
		require.NoError(t, err)
		dyn, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		_, err = crds.Get(ctx, "peerauthentications.security.istio.io", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "Istio's CRDs are already on this cluster: the test needs one without Istio")

		start := time.Now()
		var detected time.Duration // when the clean-up began: the failure was seen
		logf := func(format string, args ...any) {
			if detected == 0 && strings.Contains(format, "uninstalling") {
				detected = time.Since(start)
			}
			t.Logf(format, args...)
		}
		// .invalid never resolves: the pull fails at once, and nothing is
		// asked of a registry outside the run.
		_, err = New(ctx, cfg, Options{Mesh: m, InstallMesh: true, ChartDir: dir, Logf: logf,
			Install: mesh.InstallOptions{Registry: "meshbench.invalid/istio"}})
		took := time.Since(start)
		require.Error(t, err)
		t.Logf("failed after %v, cleaned up after %v: %v", detected.Round(time.Second), took.Round(time.Second), err)
		var pe *PodError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, []string{"ErrImagePull", "ImagePullBackOff"}, pe.Reason)
		assert.Contains(t, err.Error(), "install istio: helm install istio-system/istiod")
		assert.Contains(t, err.Error(), "meshbench.invalid/istio/pilot")
		assert.NotZero(t, detected, "no uninstall was logged")
		assert.Less(t, detected, 2*time.Minute, "the watcher must see the image pull fail, not wait for the rollout timeout")

		// New's clean-up uninstalled both releases: base's CRDs and webhook
		// went with it, and the namespace the install created.
		_, err = crds.Get(ctx, "peerauthentications.security.istio.io", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "Istio CRD left behind (%v)", err)
		whs, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, w := range whs.Items {
			assert.NotContains(t, w.Name, "istio", "webhook left behind")
		}
		_, err = c.CoreV1().Namespaces().Get(ctx, "istio-system", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "istio-system left behind (%v)", err)
	})
}

// E2ECluster returns the cluster an end-to-end test runs against: with
// where "kind", a kind cluster made from kindConfig (name prefix prefix),
// with images loaded, deleted when the test ends; otherwise the cluster of
// the kubeconfig where, untouched. Exported for the kube_test package.
func E2ECluster(ctx context.Context, t *testing.T, where, kindConfig, prefix string, images ...string) *rest.Config {
	t.Helper()
	if where != "kind" {
		cfg, err := clientcmd.BuildConfigFromFlags("", where)
		require.NoError(t, err, "MESHBENCH_KUBE_E2E=%s", where)
		return cfg
	}
	for _, img := range images {
		require.NotEmpty(t, img, "MESHBENCH_KUBE_E2E=kind needs local images (MESHBENCH_NGINX_IMAGE, MESHBENCH_LOADGEN_IMAGE)")
	}
	cl, err := kind.Up(ctx, envconf.RandomName(prefix, 24), kindConfig, kind.WithLogger(t), kind.WithReuse(false))
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := cl.Delete(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("delete kind cluster: %v", err)
		}
	})
	require.NoError(t, cl.LoadImages(ctx, images...))
	cfg := cl.RESTConfig()
	require.NotNil(t, cfg)
	return cfg
}
