package meshinstall

import (
	"github.com/meshbench/meshbench/internal/testcharts"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/meshbench/meshbench/framework/mesh"
)

func loadChart(t *testing.T, dir, name string) (*chart.Chart, string) {
	t.Helper()
	path, err := findChart(dir, name, "", nil)
	require.NoError(t, err)
	c, err := loader.Load(path)
	require.NoError(t, err)
	return c, path
}

// renderManifests renders a chart with values as Helm would install it (no
// cluster), by template file.
func renderManifests(t *testing.T, c *chart.Chart, ch mesh.Chart) map[string]string {
	t.Helper()
	vals, err := chartutil.ToRenderValues(c, ch.Values, chartutil.ReleaseOptions{Name: ch.Release, Namespace: ch.Namespace, IsInstall: true},
		chartutil.DefaultCapabilities)
	require.NoError(t, err)
	files, err := engine.Render(c, vals)
	require.NoError(t, err)
	return files
}

// renderImages renders a chart with values as Helm would install it (no
// cluster) and returns the images of its workloads' containers, sorted,
// with duplicates.
func renderImages(t *testing.T, c *chart.Chart, ch mesh.Chart) []string {
	t.Helper()
	var images []string
	for name, body := range renderManifests(t, c, ch) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(body), 4096)
		for {
			var obj struct {
				Kind string `json:"kind"`
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			if err := d.Decode(&obj); err != nil {
				break
			}
			if obj.Kind != "Deployment" && obj.Kind != "DaemonSet" {
				continue
			}
			ps := obj.Spec.Template.Spec
			for _, ctr := range append(ps.InitContainers, ps.Containers...) {
				images = append(images, ctr.Image)
			}
		}
	}
	sort.Strings(images)
	return images
}

func TestIstioSourceTreeChartsRunTheReleaseImages(t *testing.T) {
	dir := testcharts.IstioDir(t)
	m, err := mesh.New("istio-ambient")
	require.NoError(t, err)
	charts, err := m.(mesh.Installer).Charts(mesh.InstallOptions{Registry: "r.local/istio"})
	require.NoError(t, err)
	want := map[string][]string{
		"istiod":  {"r.local/istio/pilot:1.28.0-distroless"},
		"cni":     {"r.local/istio/install-cni:1.28.0-distroless"},
		"ztunnel": {"r.local/istio/ztunnel:1.28.0-distroless"},
	}
	for _, ch := range charts[1:] {
		c, path := loadChart(t, dir, ch.Name)
		note, err := pinChart(ch, c, path, nil)
		require.NoError(t, err, ch.Name)
		assert.Contains(t, note, path+" is a source tree (", ch.Name)
		assert.Contains(t, note, "chart version 1.0.0): its images are set to the release's: ", ch.Name)
		assert.Equal(t, want[ch.Name], renderImages(t, c, ch), ch.Name)
	}
	// Without the pins, the same charts would run development images.
	c, _ := loadChart(t, dir, "ztunnel")
	bare := charts[3]
	bare.Values = map[string]any{"profile": "ambient"}
	assert.Equal(t, []string{"registry.istio.io/testing/ztunnel:latest-distroless"}, renderImages(t, c, bare))
}

func TestPinChartRefuses(t *testing.T) {
	dir := testcharts.IstioDir(t)
	m, err := mesh.New("istio")
	require.NoError(t, err)
	charts, err := m.(mesh.Installer).Charts(mesh.InstallOptions{})
	require.NoError(t, err)
	istiod := charts[1]

	c, path := loadChart(t, dir, "istiod")
	note, err := pinChart(istiod, c, path, nil)
	require.NoError(t, err)
	assert.Equal(t, path+" is a source tree (global.hub=registry.istio.io/testing, global.tag=latest, chart version 1.0.0): "+
		"its images are set to the release's: global.hub=docker.io/istio, global.tag=1.28.0", note)

	// A chart that has no tag to set cannot be pinned.
	defaults := c.Values["_internal_defaults_do_not_set"].(map[string]any)["global"].(map[string]any)
	delete(defaults, "tag")
	_, err = pinChart(istiod, c, path, nil)
	assert.EqualError(t, err, "chart istiod 1.0.0 from "+path+" has no value global.tag, so meshbench cannot set the images it runs "+
		"(global.tag=1.28.0): use the released chart istiod 1.28.0 (helm pull istiod --repo https://istio-release.storage.googleapis.com/charts --version 1.28.0)")

	// A released chart of another version would run its own templates
	// with this version's images.
	defaults["tag"] = "1.27.3"
	defaults["hub"] = "docker.io/istio"
	c.Metadata.Version = "1.27.3"
	_, err = pinChart(istiod, c, path, nil)
	assert.EqualError(t, err, path+" holds istiod 1.27.3, not version 1.28.0: its templates would run the images of 1.28.0; "+
		"pass MeshVersion=1.27.3, or point MeshCharts at the 1.28.0 charts")

	// The chart asked for is fine, from a directory or a repository.
	c.Metadata.Version = "1.28.0"
	note, err = pinChart(istiod, c, path, nil)
	require.NoError(t, err)
	assert.Empty(t, note)
}

// TestLinkerdSourceTreeChartRunsTheReleaseImages renders Linkerd's
// control-plane chart from a linkerd/linkerd2 source tree
// ($MESHBENCH_LINKERD_CHARTS: its charts/ folder; Linkerd is not served by
// the Go module proxy) with the adapter's values and a registry: every
// image, the policy controller's included, must come from the registry and
// run the release's version.
func TestLinkerdSourceTreeChartRunsTheReleaseImages(t *testing.T) {
	dir := os.Getenv("MESHBENCH_LINKERD_CHARTS")
	if dir == "" {
		t.Skip("set MESHBENCH_LINKERD_CHARTS to the charts/ folder of a linkerd/linkerd2 checkout (e.g. git archive edge-25.10.1 charts)")
	}
	m, err := mesh.New("linkerd")
	require.NoError(t, err)
	charts, err := m.(mesh.Installer).Charts(mesh.InstallOptions{Registry: "r.local/l5d"})
	require.NoError(t, err)
	cp := charts[1]
	c, err := loader.Load(filepath.Join(dir, "linkerd-control-plane"))
	require.NoError(t, err)
	if len(c.Dependencies()) == 0 { // what `helm dependency build` adds
		partials, err := loader.Load(filepath.Join(dir, "partials"))
		require.NoError(t, err)
		c.AddDependency(partials)
	}
	note, err := pinChart(cp, c, dir, nil)
	require.NoError(t, err)
	assert.Equal(t, dir+" is a source tree (linkerdVersion=linkerdVersionValue, chart version 0.0.0-undefined): "+
		"its images are set to the release's: linkerdVersion=edge-25.10.1", note)
	// Every image value meshbench sets is one the chart reads (the policy
	// controller's own image key is gone: it runs controllerImage).
	for _, kv := range mesh.FlattenValues(cp.Values) {
		if path, _, _ := strings.Cut(kv, "="); strings.Contains(kv, "r.local") {
			_, ok := chartDefault(c.Values, path)
			assert.True(t, ok, "linkerd-control-plane has no value %s", path)
		}
	}
	images := renderImages(t, c, cp)
	require.NotEmpty(t, images)
	for _, img := range images {
		assert.True(t, strings.HasPrefix(img, "r.local/l5d/"), img)
		assert.NotContains(t, img, "linkerdVersionValue")
	}
	assert.Contains(t, images, "r.local/l5d/controller:edge-25.10.1")
	assert.Contains(t, images, "r.local/l5d/proxy:edge-25.10.1")
}

// TestCiliumChartTakesTheValues renders the Cilium chart as its Go module
// holds it (github.com/cilium/cilium@v1.19.3, install/kubernetes/cilium;
// skipped when that module is not in the module cache) with the adapter's
// values and a registry: every image must come from the registry, and the
// agent's configuration must turn WireGuard on, as Verify requires.
func TestCiliumChartTakesTheValues(t *testing.T) {
	m, err := mesh.New("cilium")
	require.NoError(t, err)
	version := mesh.DefaultVersion(m)
	dir := filepath.Join(testcharts.ModCache(t), "github.com", "cilium", "cilium@v"+version, "install", "kubernetes", "cilium")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Cilium's chart is not in the module cache (go mod download -json github.com/cilium/cilium@v%s): %v", version, err)
	}
	charts, err := m.(mesh.Installer).Charts(mesh.InstallOptions{Registry: "r.local/cilium"})
	require.NoError(t, err)
	c, err := loader.Load(dir)
	require.NoError(t, err)
	_, err = pinChart(charts[0], c, dir, nil)
	require.NoError(t, err)
	for _, kv := range mesh.FlattenValues(charts[0].Values) {
		path, _, _ := strings.Cut(kv, "=")
		_, ok := chartDefault(c.Values, path)
		assert.True(t, ok, "the cilium chart has no value %s", path)
	}
	images := map[string]bool{}
	for _, img := range renderImages(t, c, charts[0]) {
		images[img] = true
	}
	// Envoy is off: the agent and operator-generic are all it runs, the
	// two images hack/offline/cilium.sh builds.
	assert.Equal(t, map[string]bool{
		"r.local/cilium/cilium:v" + version:           true,
		"r.local/cilium/operator-generic:v" + version: true,
	}, images)
	imgs, err := m.(interface {
		Images(mesh.InstallOptions) ([]string, error)
	}).Images(mesh.InstallOptions{Registry: "r.local/cilium"})
	require.NoError(t, err)
	assert.ElementsMatch(t, imgs, []string{"r.local/cilium/cilium:v" + version, "r.local/cilium/operator-generic:v" + version})
	config := renderManifests(t, c, charts[0])["cilium/templates/cilium-configmap.yaml"]
	for _, want := range []string{`enable-ipsec: "true"`, `enable-l7-proxy: "false"`, `kube-proxy-replacement: "false"`,
		`enable-hubble: "false"`, `routing-mode: "tunnel"`, `tunnel-protocol: "vxlan"`} {
		assert.Contains(t, config, want)
	}
}

// istio-proxyless installs the module's own charts with the offline
// images: istiod runs meshbench/pilot and injects the grpc-agent's
// istio-proxy from meshbench/proxyv2-agent, both at the version's tag
// without a variant suffix, pulled only when absent.
func TestIstioProxylessChartsRunTheOfflineImages(t *testing.T) {
	dir := testcharts.IstioDir(t)
	m, err := mesh.New("istio-proxyless", mesh.WithRevision("mb131"))
	require.NoError(t, err)
	charts, err := m.(mesh.Installer).Charts(mesh.InstallOptions{})
	require.NoError(t, err)
	c, path := loadChart(t, dir, "istiod")
	note, err := pinChart(charts[1], c, path, nil)
	require.NoError(t, err)
	assert.Contains(t, note, path+" is a source tree (")
	assert.Equal(t, []string{"meshbench/pilot:" + mesh.ProxylessDefaultVersion}, renderImages(t, c, charts[1]))
	files := renderManifests(t, c, charts[1])
	injector := files["istiod/templates/istiod-injector-configmap.yaml"]
	require.NotEmpty(t, injector, "no injector ConfigMap among %d files", len(files))
	assert.Contains(t, injector, `"image": "meshbench/proxyv2-agent:`+mesh.ProxylessDefaultVersion+`"`)
	assert.Contains(t, injector, `"imagePullPolicy": "IfNotPresent"`)
	assert.Contains(t, injector, `"revision": "mb131"`)
	assert.Contains(t, injector, "grpc-agent:")
}
