package kube

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/meshinstall"
	"github.com/meshbench/meshbench/framework/testbed/kind"
	"github.com/meshbench/meshbench/internal/testcharts"
)

// proxylessE2E is what the live istio-proxyless test works with.
type proxylessE2E struct {
	cfg *rest.Config
	c   kubernetes.Interface
	m   mesh.Mesh
	ns  string
	// n is the version as istio.sh takes it (130 or 131), module its
	// pinned module version, tag the images' tag, rev the revision.
	n, module, tag, rev string
	took                map[string]time.Duration
}

// TestIstioProxylessE2E installs a real Istio (pilot-discovery and
// pilot-agent built offline by hack/offline/istio.sh, no Envoy) on a
// one-node kind cluster the way a user would (Helm, the module's charts,
// a revision), and checks that the chart's own webhook injects a pod with
// the grpc-agent template whose agent gets its certificate from istiod's
// CA. It runs only with MESHBENCH_ISTIO_E2E=1 (root, Docker, the offline
// node image and meshbench/mbloadgen:dev; istio.sh builds its images when
// missing). MESHBENCH_ISTIO_VERSION picks the pin, 131 (default) or 130:
// its images, its module's charts, revision mb<n>. Not part of make e2e:
//
//	MESHBENCH_ISTIO_E2E=1 go test -count=1 -timeout 40m -run TestIstioProxylessE2E -v ./framework/testbed/kube
func TestIstioProxylessE2E(t *testing.T) {
	if os.Getenv("MESHBENCH_ISTIO_E2E") == "" {
		t.Skip("set MESHBENCH_ISTIO_E2E=1 to install Istio proxyless on a kind cluster (needs root and Docker)")
	}
	e := &proxylessE2E{n: cmp.Or(os.Getenv("MESHBENCH_ISTIO_VERSION"), "131"), took: map[string]time.Duration{}}
	e.module = testcharts.IstioPin(t, e.n)
	e.tag, e.rev = "1."+e.n[1:]+"-dev."+e.module[len(e.module)-12:], "mb"+e.n
	charts := testcharts.IstioChartsOf(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	cl := e.cluster(ctx, t)
	e.step(t, "istio.sh load", func() {
		cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "..", "hack", "offline", "istio.sh"), e.n, "load", cl.Name())
		out, err := cmd.CombinedOutput()
		t.Logf("istio.sh:\n%s", out)
		require.NoError(t, err)
	})
	e.step(t, "load mbloadgen", func() { require.NoError(t, cl.LoadImages(ctx, "meshbench/mbloadgen:dev")) })
	var err error
	e.m, err = mesh.New("istio-proxyless", mesh.WithRevision(e.rev))
	require.NoError(t, err)
	e.step(t, "install base and istiod", func() { e.install(ctx, t, charts) })
	e.step(t, "pod ready", func() { e.meshedPod(ctx, t) })
	e.checkPod(ctx, t)
	e.refusesEnvoy(ctx, t)
	for _, s := range []string{"istio.sh load", "load mbloadgen", "install base and istiod", "pod ready"} {
		t.Logf("wall time: %s: %v", s, e.took[s].Round(time.Second))
	}
}

// step runs f and records its wall time under what.
func (e *proxylessE2E) step(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	e.took[what] = time.Since(start)
	t.Logf("%s: %v", what, e.took[what].Round(time.Second))
}

// cluster makes a one-node kind cluster, deleted when the test ends.
func (e *proxylessE2E) cluster(ctx context.Context, t *testing.T) kind.Cluster {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "kind-config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  disableDefaultCNI: true\nnodes:\n  - role: control-plane\n"), 0o644))
	var cl kind.Cluster
	e.step(t, "kind cluster", func() {
		var err error
		cl, err = kind.Up(ctx, envconf.RandomName("mb-istio", 16), conf, kind.WithLogger(t), kind.WithReuse(false))
		require.NoError(t, err)
	})
	t.Cleanup(func() {
		if err := cl.Delete(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("delete kind cluster %s: %v", cl.Name(), err)
		}
	})
	e.cfg = cl.RESTConfig()
	c, err := kubernetes.NewForConfig(e.cfg)
	require.NoError(t, err)
	e.c = c
	return cl
}

// install installs the adapter's charts as the kube target does (Prepare,
// then Helm), and checks what Detect then reports.
func (e *proxylessE2E) install(ctx context.Context, t *testing.T, charts string) {
	t.Helper()
	_, err := e.m.Detect(ctx, e.c)
	var ni *mesh.NotInstalledError
	require.ErrorAs(t, err, &ni)
	opts := mesh.InstallOptions{Version: e.tag}
	cs, err := e.m.(mesh.Installer).Charts(opts)
	require.NoError(t, err)
	require.NoError(t, meshinstall.Prepare(ctx, e.c, e.m, opts, t.Logf))
	h := meshinstall.NewHelm(e.cfg, e.c, meshinstall.HelmOptions{ChartDir: charts, Timeout: 5 * time.Minute, Grace: 2 * time.Minute, Logf: t.Logf})
	t.Cleanup(func() { assert.NoError(t, h.Uninstall(context.Background())) })
	require.NoError(t, h.Install(ctx, cs))
	info, err := e.m.Detect(ctx, e.c)
	require.NoError(t, err)
	t.Logf("detected: %+v", info)
	assert.Equal(t, e.tag, info.Version)
	assert.Equal(t, []mesh.Component{{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-" + e.rev,
		Image: "meshbench/pilot:" + e.tag}}, info.Components)
	// The build istio.sh stamped: the module version, not "unknown".
	assert.Equal(t, e.module, info.Config["istiod.istio_build"])
	// Bad input: a revision that is not installed.
	_, err = e.m.(mesh.Revisioned).AtRevision("absent").Detect(ctx, e.c)
	require.ErrorAs(t, err, &ni)
	assert.Contains(t, err.Error(), `revision "absent" is not installed`)
	// Bad input: Istio CRDs already on the cluster (here, this install's)
	// stop another installation before it applies anything.
	err = meshinstall.Prepare(ctx, e.c, e.m, mesh.InstallOptions{}, t.Logf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Istio CRDs of another installation are on the cluster (")
	assert.Contains(t, err.Error(), "peerauthentications.security.istio.io (version 1.0.0, release istio-base)")
}

// meshedPod creates a namespace enabled for the revision and a Deployment
// of mbloadgen injected by the adapter, and waits until its pod is ready.
func (e *proxylessE2E) meshedPod(ctx context.Context, t *testing.T) {
	t.Helper()
	e.ns = envconf.RandomName("mb-proxyless", 20)
	_, err := e.c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.m.Enable(ctx, e.c, e.ns))
	t.Cleanup(func() { assert.NoError(t, e.m.(mesh.Cleaner).Cleanup(context.Background(), e.c)) })
	// istiod's validating webhook admitted the STRICT policies.
	for _, path := range []string{"/apis/security.istio.io/v1/namespaces/" + e.ns + "/peerauthentications/meshbench-strict",
		"/apis/networking.istio.io/v1/namespaces/" + e.ns + "/destinationrules/meshbench-istio-mutual"} {
		assert.NoError(t, e.c.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).Error(), path)
	}
	labels := map[string]string{"app": "backend"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "meshbench/mbloadgen:dev", ImagePullPolicy: corev1.PullNever, Args: []string{"-listen", ":8080"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	require.NoError(t, e.m.(mesh.Injector).Inject(&tmpl))
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: e.ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	_, err = e.c.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := e.c.AppsV1().Deployments(e.ns).Get(ctx, "backend", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 1, nil
	})
	if err != nil {
		pods, _ := e.c.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s: %+v", p.Name, p.Status)
		}
	}
	require.NoError(t, err, "the meshed pod did not become ready")
}

// checkPod checks the injected pod: the grpc-agent template of the
// revision, a ready pilot-agent without Envoy holding a certificate of the
// pod's SPIFFE identity from istiod's CA, and the xDS bootstrap for the app.
func (e *proxylessE2E) checkPod(ctx context.Context, t *testing.T) {
	t.Helper()
	pods, err := e.c.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=backend"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	p := &pods.Items[0]
	assert.Equal(t, "grpc-agent", p.Annotations["inject.istio.io/templates"])
	rev, _ := mesh.PodRevision(p)
	assert.Equal(t, e.rev, rev)
	var proxy, app *corev1.Container
	for i := range p.Spec.Containers {
		switch p.Spec.Containers[i].Name {
		case "istio-proxy":
			proxy = &p.Spec.Containers[i]
		case "app":
			app = &p.Spec.Containers[i]
		}
	}
	require.NotNil(t, proxy, "no istio-proxy container: %v", p.Spec.Containers)
	require.NotNil(t, app)
	assert.Equal(t, "istio-proxy", p.Spec.Containers[0].Name, "holdApplicationUntilProxyStarts puts the agent first")
	assert.Equal(t, "meshbench/proxyv2-agent:"+e.tag, proxy.Image)
	assert.Contains(t, proxy.Env, corev1.EnvVar{Name: "DISABLE_ENVOY", Value: "true"})
	assert.Contains(t, app.Env, corev1.EnvVar{Name: "GRPC_XDS_BOOTSTRAP", Value: "/etc/istio/proxy/grpc-bootstrap.json"})
	for _, s := range p.Status.ContainerStatuses {
		assert.True(t, s.Ready, "container %s not ready", s.Name)
	}
	var boot struct {
		XDSServers []struct {
			ServerURI string `json:"server_uri"`
		} `json:"xds_servers"`
		CertificateProviders map[string]any `json:"certificate_providers"`
	}
	require.NoError(t, json.Unmarshal(e.exec(ctx, t, p, "cat", "/etc/istio/proxy/grpc-bootstrap.json"), &boot))
	require.Len(t, boot.XDSServers, 1)
	assert.Equal(t, "unix:///etc/istio/proxy/XDS", boot.XDSServers[0].ServerURI)
	assert.Contains(t, boot.CertificateProviders, "default")
	block, _ := pem.Decode(e.exec(ctx, t, p, "cat", "/var/lib/istio/data/cert-chain.pem"))
	require.NotNil(t, block, "no certificate from istiod's CA")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.Len(t, cert.URIs, 1)
	assert.Equal(t, "spiffe://cluster.local/ns/"+e.ns+"/sa/default", cert.URIs[0].String())
	v, err := e.m.Verify(ctx, e.c, e.ns, true)
	require.NoError(t, err)
	t.Logf("verified: %+v", v)
}

// exec runs cmd in the pod's istio-proxy container (pilot-agent's image
// has a shell and cat; mbloadgen's has neither), which shares the app's
// istio-xds and istio-data volumes.
func (e *proxylessE2E) exec(ctx context.Context, t *testing.T, p *corev1.Pod, cmd ...string) []byte {
	t.Helper()
	req := e.c.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "istio-proxy", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", req.URL())
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	require.NoError(t, ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}), "%s: %s", strings.Join(cmd, " "), errOut.String())
	return out.Bytes()
}

// refusesEnvoy creates a pod the injector gives the Envoy sidecar template
// and checks that Verify refuses it by name (Envoy is not in the agent
// image: the pod never runs, which does not matter to the refusal).
func (e *proxylessE2E) refusesEnvoy(ctx context.Context, t *testing.T) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "envoy", Namespace: e.ns, Annotations: map[string]string{"inject.istio.io/templates": "sidecar"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "meshbench/mbloadgen:dev", ImagePullPolicy: corev1.PullNever}}}}
	_, err := e.c.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.m.Verify(ctx, e.c, e.ns, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod envoy: its istio-proxy runs Envoy (no DISABLE_ENVOY=true: injected from template \"sidecar\", not \"grpc-agent\")")
	require.NoError(t, e.c.CoreV1().Pods(e.ns).Delete(ctx, "envoy", metav1.DeleteOptions{}))
}
