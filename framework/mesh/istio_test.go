package mesh

import (
	"errors"
	"github.com/meshbench/meshbench/internal/testcharts"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestIstioDetect(t *testing.T) {
	info, err := newMesh(t, "istio").Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	require.NoError(t, err)
	assert.True(t, info.Installed)
	assert.Equal(t, "1.1.4", info.Version)
	assert.Equal(t, []Component{{Kind: "Deployment", Namespace: "istio-system", Name: "istiod",
		Image: "registry.istio.io/release/pilot:1.1.4"}}, info.Components)
	assert.Equal(t, "cluster.local", info.Config["trustDomain"])
	assert.Equal(t, Threads{N: 2, Mode: "fixed", Source: "pod annotation proxy.istio.io/config concurrency, set by meshbench on every meshed pod"}, info.Threads)
	assert.Equal(t, "auto (mesh config defaultConfig.concurrency unset: pilot-agent sets it to the proxy's CPU limit, "+
		"ISTIO_CPU_LIMIT, which without a limit is the node's core count)", info.Config["defaultConfig.concurrency"])
	assert.Equal(t, "none", info.Config["sidecar.cpuLimit"])

	_, err = newMesh(t, "istio", WithRevision("canary")).Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	assert.EqualError(t, err, "istio is not installed: no Deployment labelled app=istiod in istio-system with istio.io/rev=canary")
}

// With a canary istiod beside the default one, the default injector is
// the default revision's istiod, and the canary is found by its revision.
func TestIstioDetectRevisionsSideBySide(t *testing.T) {
	objs := load(t, "istio/istiod.yaml")
	var canary *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			canary = d.DeepCopy()
		}
	}
	require.NotNil(t, canary)
	canary.Name, canary.Labels["istio.io/rev"] = "istiod-canary", "canary"
	canary.Spec.Template.Spec.Containers[0].Image = "registry.istio.io/release/pilot:1.2.0"
	c := clientset(append(objs, canary)...)

	info, err := newMesh(t, "istio").Detect(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, "1.1.4", info.Version)
	require.Len(t, info.Components, 1, "only the default revision's istiod")
	assert.Equal(t, "istiod", info.Components[0].Name)

	m := newMesh(t, "istio", WithSidecarConcurrency(4))
	rm, ok := m.(Revisioned)
	require.True(t, ok, "istio is Revisioned")
	assert.Equal(t, "", rm.Revision())
	cm := rm.AtRevision("canary")
	assert.Equal(t, "canary", cm.(Revisioned).Revision())
	assert.Equal(t, "", rm.Revision(), "the reference adapter keeps its revision")
	info, err = cm.Detect(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", info.Version)
	assert.Equal(t, "canary", info.Config["revision"])
	assert.Equal(t, 4, info.Threads.N, "the canary adapter keeps the reference's settings")
	assert.Equal(t, []Component{{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-canary",
		Image: "registry.istio.io/release/pilot:1.2.0"}}, info.Components)
	_, ok = newMesh(t, "istio-ambient").(Revisioned)
	assert.False(t, ok, "ambient's ztunnel serves every revision")
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
	t.Run("the revision that injected each sidecar is recorded", func(t *testing.T) {
		v, err := i.Verify(ctx, clientset(labelled, injected), "mb", true)
		require.NoError(t, err)
		assert.Equal(t, "default", v.Pods[0].Revision)
		rev, from := PodRevision(injected)
		assert.Equal(t, "default", rev)
		assert.Equal(t, "annotation sidecar.istio.io/status", from)
	})
	canaryNS := namespace("mb", map[string]string{"istio.io/rev": "canary"}, nil)
	canary := newMesh(t, "istio", WithRevision("canary"))
	t.Run("a sidecar of another revision fails a revisioned arm", func(t *testing.T) {
		v, err := canary.Verify(ctx, clientset(canaryNS, injected), "mb", true)
		assert.EqualError(t, err, `istio: meshed namespace "mb" failed verification: pod traffic-7d9c5-abcde: its sidecar was injected by `+
			`Istio revision default (annotation sidecar.istio.io/status), not by revision canary, the one its namespace is labelled for (istio.io/rev=canary)`)
		assert.Equal(t, "default", v.Pods[0].Revision)
	})
	t.Run("the pod's istio.io/rev label names the revision without the status annotation", func(t *testing.T) {
		p := injected.DeepCopy()
		delete(p.Annotations, "sidecar.istio.io/status")
		p.Labels["istio.io/rev"] = "canary"
		v, err := canary.Verify(ctx, clientset(canaryNS, p), "mb", true)
		require.NoError(t, err)
		assert.Equal(t, "canary", v.Pods[0].Revision)
		delete(p.Labels, "istio.io/rev")
		_, err = canary.Verify(ctx, clientset(canaryNS, p), "mb", true)
		assert.EqualError(t, err, `istio: meshed namespace "mb" failed verification: pod traffic-7d9c5-abcde: its sidecar names no revision `+
			`(no sidecar.istio.io/status annotation, no istio.io/rev label), so it is not known to come from revision canary`)
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

func TestIstioInjectMakesTheSidecarExplicit(t *testing.T) {
	d := loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml")
	tmpl := d.Spec.Template.DeepCopy()
	require.NoError(t, newMesh(t, "istio").(Injector).Inject(tmpl))
	assert.Equal(t, map[string]string{
		"proxy.istio.io/config":        "concurrency: 2\n",
		"sidecar.istio.io/proxyCPU":    "100m",
		"sidecar.istio.io/proxyMemory": "128Mi",
	}, tmpl.Annotations)

	tmpl = d.Spec.Template.DeepCopy()
	m := newMesh(t, "istio", WithSidecarConcurrency(4), WithSidecarCPULimit("4"))
	require.NoError(t, m.(Injector).Inject(tmpl))
	assert.Equal(t, "concurrency: 4\n", tmpl.Annotations["proxy.istio.io/config"])
	assert.Equal(t, "4", tmpl.Annotations["sidecar.istio.io/proxyCPULimit"])
	assert.EqualError(t, newMesh(t, "istio", WithSidecarCPULimit("two")).(Injector).Inject(d.Spec.Template.DeepCopy()),
		`istio: sidecar CPU limit "two": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`)

	// Detect records what every meshed pod gets.
	info, err := m.Detect(ctx, clientset(load(t, "istio/istiod.yaml")...))
	require.NoError(t, err)
	assert.Equal(t, Threads{N: 4, Mode: "fixed", Source: "pod annotation proxy.istio.io/config concurrency, set by meshbench on every meshed pod"}, info.Threads)
	assert.Equal(t, "4", info.Config["sidecar.cpuLimit"])
	assert.Equal(t, "100m", info.Config["sidecar.sidecar.istio.io/proxyCPU"])
}

// TestIstioSidecarAnnotationsDropTheChartLimit renders the "resources"
// block of the real injection template (istiod chart,
// files/injection-template.yaml) with the annotations Inject sets: the
// chart's default resources, with their 2-CPU limit, must be gone.
func TestIstioSidecarAnnotationsDropTheChartLimit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testcharts.IstioDir(t), "istio-control", "istio-discovery", "files", "injection-template.yaml"))
	require.NoError(t, err)
	src := string(b)
	start := strings.Index(src, `{{- define "resources"  }}`)
	require.GreaterOrEqual(t, start, 0, "the injection template has no resources block")
	end := strings.Index(src[start:], "\n{{- end }}\n")
	require.Greater(t, end, 0)
	funcs := template.FuncMap{
		"isset": func(m map[string]string, k string) bool { _, ok := m[k]; return ok },
		"quote": func(s string) string { return strconv.Quote(s) },
		"toYaml": func(v any) string {
			out, err := sigsyaml.Marshal(v)
			require.NoError(t, err)
			return strings.TrimSpace(string(out))
		},
		"omitNil": func(v any) any { return v },
		"indent": func(n int, s string) string {
			return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", n))
		},
	}
	tpl, err := template.New("t").Funcs(funcs).Parse(src[start:start+end] + "\n{{- end }}\n" + `resources:{{ template "resources" . }}`)
	require.NoError(t, err)
	render := func(annotations map[string]string) corev1.ResourceRequirements {
		// The chart's default global.proxy.resources (istiod values.yaml).
		values := map[string]any{"global": map[string]any{"proxy": map[string]any{"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			"limits":   map[string]any{"cpu": "2000m", "memory": "1024Mi"}}}}}
		var out strings.Builder
		require.NoError(t, tpl.Execute(&out, map[string]any{"ObjectMeta": map[string]any{"Annotations": annotations}, "Values": values}))
		var r struct {
			Resources corev1.ResourceRequirements `json:"resources"`
		}
		require.NoError(t, sigsyaml.Unmarshal([]byte(out.String()), &r), out.String())
		return r.Resources
	}
	def := render(nil)
	assert.Equal(t, "2", def.Limits.Cpu().String(), "without annotations the chart's 2-CPU limit applies")

	tmpl := corev1.PodTemplateSpec{}
	require.NoError(t, newMesh(t, "istio").(Injector).Inject(&tmpl))
	got := render(tmpl.Annotations)
	assert.Empty(t, got.Limits, "meshbench's sidecar must have no limit")
	assert.Equal(t, "100m", got.Requests.Cpu().String())
	assert.Equal(t, "128Mi", got.Requests.Memory().String())

	require.NoError(t, newMesh(t, "istio", WithSidecarCPULimit("3")).(Injector).Inject(&tmpl))
	got = render(tmpl.Annotations)
	assert.Equal(t, "3", got.Limits.Cpu().String())
}

func TestIstioVerifyReadsEnvoyConcurrency(t *testing.T) {
	stats, err := os.ReadFile(filepath.Join("testdata", "istio", "envoy-server-stats.txt"))
	require.NoError(t, err)
	pod := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/deployment-injected.yaml"), "traffic-7d9c5-abcde", "mb", "kind-worker")
	c := apiServer(t, []corev1.Pod{*pod}, map[string]string{
		"/api/v1/namespaces/mb/pods/traffic-7d9c5-abcde:15090/proxy/stats/prometheus": string(stats),
	})
	v, err := newMesh(t, "istio").Verify(ctx, c, "mb", true)
	require.NoError(t, err)
	// The recorded pod asks for concurrency 0 (all cores); Envoy reports 2.
	assert.Equal(t, &Threads{N: 2, Mode: "fixed", Source: "Envoy's envoy_server_concurrency (:15090/stats/prometheus)"}, v.Pods[0].Threads)
	// The recorded pod has requests only, as meshbench asks by default.
	assert.Empty(t, v.Notes)

	v, err = newMesh(t, "istio", WithSidecarConcurrency(4), WithSidecarCPULimit("2")).Verify(ctx, c, "mb", true)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"pod traffic-7d9c5-abcde: istio-proxy has CPU limit none, not 2 as meshbench asked with sidecar.istio.io/proxyCPULimit: " +
			"the injection template did not apply the annotations",
		"pod traffic-7d9c5-abcde: Envoy runs 2 workers, not the 4 meshbench set in proxy.istio.io/config"}, v.Notes)
}
