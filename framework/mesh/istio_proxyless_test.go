package mesh

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/framework/testbed"
)

// proxylessIstiod is istiod of revision rev, as the istiod chart makes it
// with the offline pilot image.
func proxylessIstiod(rev string) *appsv1.Deployment {
	labels := map[string]string{"app": "istiod", istioRev: rev}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "istiod-" + rev, Namespace: "istio-system", Labels: labels},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "discovery", Image: "meshbench/pilot:" + ProxylessDefaultVersion}}}}},
	}
}

// grpcAgentPod is a pod as the grpc-agent template injects it (istio-proxy
// first, held: pilot-agent without Envoy), in namespace mb.
func grpcAgentPod(name, rev string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mb", Labels: map[string]string{"app": "backend", istioRev: rev},
			Annotations: map[string]string{istioInjectTemplates: grpcAgentTemplate, istioProxyConfig: proxylessHoldConfig,
				istioStatus: `{"initContainers":null,"containers":["istio-proxy","app"],"revision":"` + rev + `"}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: istioProxy, Image: "meshbench/proxyv2-agent:" + ProxylessDefaultVersion, Args: []string{"proxy", "sidecar"},
				Env: []corev1.EnvVar{{Name: "ISTIO_META_GENERATOR", Value: "grpc"}, {Name: "DISABLE_ENVOY", Value: "true"}}},
			{Name: "app", Image: "meshbench/mbloadgen:dev",
				Env: []corev1.EnvVar{{Name: "GRPC_XDS_BOOTSTRAP", Value: "/etc/istio/proxy/grpc-bootstrap.json"}}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: istioProxy, Ready: true}, {Name: "app", Ready: true}}},
	}
}

func TestProxylessIsItsOwnMesh(t *testing.T) {
	m := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	assert.Equal(t, "xds", m.(InApp).DialScheme())
	assert.Equal(t, "mb131", m.(Revisioned).Revision())
	assert.Equal(t, "canary", m.(Revisioned).AtRevision("canary").(Revisioned).Revision())
	assert.Equal(t, Roles{Sidecars: []string{"istio-proxy"},
		ControlPlane: []Workload{{Namespace: "istio-system", Labels: map[string]string{"app": "istiod", "istio.io/rev": "mb131"}}}}, m.Roles())
}

func TestProxylessInject(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{}
	require.NoError(t, newMesh(t, "istio-proxyless").(Injector).Inject(&tmpl))
	assert.Equal(t, map[string]string{"inject.istio.io/templates": "grpc-agent",
		"proxy.istio.io/config": `{"holdApplicationUntilProxyStarts": true}`}, tmpl.Annotations)
	assert.Equal(t, map[string]string{"security.istio.io/tlsMode": "istio"}, tmpl.Labels)
}

func TestProxylessCharts(t *testing.T) {
	cs := charts(t, newMesh(t, "istio-proxyless", WithRevision("mb131")), InstallOptions{})
	assert.Equal(t, []string{
		"istio-system/istio-base=base@1.31-dev.eed52ebb66ad https://istio-release.storage.googleapis.com/charts",
		"istio-system/istiod-mb131=istiod@1.31-dev.eed52ebb66ad https://istio-release.storage.googleapis.com/charts",
	}, plan(cs))
	assert.Equal(t, []string{"defaultRevision=mb131", "global.hub=meshbench"}, FlattenValues(cs[0].Values))
	assert.Equal(t, []string{"global.hub=meshbench", "global.imagePullPolicy=IfNotPresent",
		"global.proxy.image=meshbench/proxyv2-agent:1.31-dev.eed52ebb66ad", "global.tag=1.31-dev.eed52ebb66ad",
		"image=meshbench/pilot:1.31-dev.eed52ebb66ad", "revision=mb131"},
		FlattenValues(cs[1].Values))
	assert.Equal(t, []string{"global.hub", "global.tag"}, cs[1].Pins)

	cs = charts(t, newMesh(t, "istio-proxyless"), InstallOptions{Version: "1.30-dev.9739e10eb9d7", Registry: "r.local/mb"})
	assert.Equal(t, []string{"global.hub=r.local/mb", "global.imagePullPolicy=IfNotPresent",
		"global.proxy.image=r.local/mb/proxyv2-agent:1.30-dev.9739e10eb9d7", "global.tag=1.30-dev.9739e10eb9d7",
		"image=r.local/mb/pilot:1.30-dev.9739e10eb9d7"}, FlattenValues(cs[1].Values))
	assert.Equal(t, "istiod", cs[1].Release)
}

// On a cluster that pulls its own images (a remote one) the adapter
// installs Istio's release with the images Istio publishes, or their
// mirror; an offline build only from a registry that holds it.
func TestProxylessChartsOnARemoteCluster(t *testing.T) {
	m := newMesh(t, "istio-proxyless", WithRevision("mb"))
	cs := charts(t, m, InstallOptions{Published: true})
	assert.Equal(t, []string{
		"istio-system/istio-base=base@1.28.0 https://istio-release.storage.googleapis.com/charts",
		"istio-system/istiod-mb=istiod@1.28.0 https://istio-release.storage.googleapis.com/charts",
	}, plan(cs))
	assert.Equal(t, []string{"global.hub=docker.io/istio", "global.tag=1.28.0", "revision=mb"}, FlattenValues(cs[1].Values))
	refs, err := m.(Imager).Images(InstallOptions{Published: true})
	require.NoError(t, err)
	assert.Empty(t, refs, "published images are pulled by the cluster, not loaded into it")

	cs = charts(t, m, InstallOptions{Published: true, Version: "1.29.1", Registry: "mirror.corp/istio"})
	assert.Equal(t, []string{"global.hub=mirror.corp/istio", "global.tag=1.29.1", "revision=mb"}, FlattenValues(cs[1].Values))

	cs = charts(t, m, InstallOptions{Published: true, Version: "1.30-dev.9739e10eb9d7", Registry: "mirror.corp/mb"})
	assert.Contains(t, FlattenValues(cs[1].Values), "global.proxy.image=mirror.corp/mb/proxyv2-agent:1.30-dev.9739e10eb9d7")
	_, err = m.(Installer).Charts(InstallOptions{Published: true, Version: "1.30-dev.9739e10eb9d7"})
	assert.EqualError(t, err, `istio-proxyless: install version "1.30-dev.9739e10eb9d7" is an offline build (hack/offline/istio.sh), which no public registry has: `+
		`push its meshbench/pilot and meshbench/proxyv2-agent images to a registry the cluster pulls from and name it with MeshRegistry, or install a release (default 1.28.0)`)
	_, err = newMesh(t, "istio-proxyless", WithWords(func(s testbed.Setting) string { return "--" + s.Name })).(Installer).Charts(InstallOptions{Published: true, Version: "1.30-dev.9739e10eb9d7"})
	assert.ErrorContains(t, err, "name it with --MeshRegistry, or install a release", "the setting in the caller's words")
	_, err = m.(Installer).Charts(InstallOptions{Published: true, Version: "latest"})
	assert.EqualError(t, err, `istio-proxyless: install version "latest" is not a chart version (want e.g. 1.28.0)`)
}

func TestProxylessDetect(t *testing.T) {
	c := clientset(proxylessIstiod("mb131"))
	info, err := newMesh(t, "istio-proxyless", WithRevision("mb131")).Detect(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, ProxylessDefaultVersion, info.Version)
	assert.Equal(t, "cluster.local", info.Config["trustDomain"])
	assert.Equal(t, "proxyless gRPC: the app's xDS client and server, with pilot-agent (no Envoy) beside it; not Envoy", info.Config["dataplane"])
	assert.Equal(t, "unread: no istiod pod labelled app=istiod,istio.io/rev=mb131 in istio-system", info.Config["istiod.istio_build"])

	_, err = newMesh(t, "istio-proxyless", WithRevision("mb130")).Detect(ctx, c)
	assert.EqualError(t, err, `istio-proxyless is not installed: no Deployment labelled app=istiod in istio-system with istio.io/rev=mb130 (revision "mb130" is not installed)`)
	// A revision that is not installed is refused before the namespace is touched.
	err = newMesh(t, "istio-proxyless", WithRevision("mb130")).Enable(ctx, clientset(proxylessIstiod("mb131"), namespace("mb", nil, nil)), "mb")
	assert.EqualError(t, err, `istio-proxyless: revision "mb130" is not installed (no Deployment labelled app=istiod in istio-system with istio.io/rev=mb130): namespace mb would be injected by nothing`)
}

func TestProxylessVerify(t *testing.T) {
	m := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	good := grpcAgentPod("backend-1", "mb131")
	v, err := m.Verify(ctx, clientset(namespace("mb", map[string]string{istioRev: "mb131"}, nil), good), "mb", true)
	require.NoError(t, err)
	assert.Equal(t, []PodCheck{{Pod: "backend-1", Proxies: []string{"istio-proxy"}, Revision: "mb131"}}, v.Pods)
	assert.Empty(t, v.Notes)

	// A pod the Envoy sidecar template injected is refused, by name.
	envoy := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/deployment-injected.yaml"), "traffic-7d9c5-abcde", "mb", "kind-worker")
	_, err = newMesh(t, "istio-proxyless").Verify(ctx, clientset(namespace("mb", nil, nil), envoy), "mb", true)
	assert.EqualError(t, err, `istio-proxyless: meshed namespace "mb" failed verification: `+
		`pod traffic-7d9c5-abcde: its istio-proxy runs Envoy (no DISABLE_ENVOY=true: injected from template "sidecar", not "grpc-agent"); `+
		`istio-proxyless measures pilot-agent without Envoy beside the app's own xDS gRPC, so the pod is refused; `+
		`pod traffic-7d9c5-abcde: annotation inject.istio.io/templates is "", not "grpc-agent"; `+
		`pod traffic-7d9c5-abcde: container traffic has no GRPC_XDS_BOOTSTRAP: its gRPC cannot reach istiod`)

	// Another revision's pod, and one whose agent is not ready (no certificate: no identity).
	other := grpcAgentPod("backend-2", "mb130")
	other.Status.ContainerStatuses[0].Ready = false
	_, err = m.Verify(ctx, clientset(namespace("mb", nil, nil), other), "mb", true)
	assert.EqualError(t, err, `istio-proxyless: meshed namespace "mb" failed verification: pod backend-2: proxy "istio-proxy" is not ready; `+
		`pod backend-2: no SPIFFE identity: pilot-agent is not ready, so it holds no certificate for spiffe://cluster.local/ns/mb/sa/default from istiod's CA; `+
		`pod backend-2: its sidecar was injected by Istio revision mb130 (annotation sidecar.istio.io/status), not by revision mb131, the one its namespace is labelled for (istio.io/rev=mb131)`)

	// The baseline has no istio-proxy.
	_, err = m.Verify(ctx, clientset(namespace("mb", nil, nil), grpcAgentPod("backend-1", "mb131")), "mb", false)
	assert.EqualError(t, err, `istio-proxyless: baseline namespace "mb" failed verification: pod backend-1 has proxy container "istio-proxy"; the baseline must run without a mesh`)
	plain := grpcAgentPod("backend-3", "")
	plain.Namespace, plain.Spec.Containers = "base", plain.Spec.Containers[1:]
	_, err = m.Verify(ctx, clientset(namespace("base", nil, nil), plain), "base", false)
	assert.NoError(t, err)
}

// peersJSON is a backend's /meshbench/peers as the loadgen's calls left it.
const peersJSON = `{"xds": true, "peers": [
 {"identity": "spiffe://cluster.local/ns/mb/sa/loadgen", "mtls": true, "tlsVersion": "TLS 1.3", "calls": 1200},
 {"identity": "spiffe://other.example/ns/mb/sa/loadgen", "mtls": true, "tlsVersion": "TLS 1.3", "calls": 3}]}`

func TestProxylessMTLSThroughPodProxy(t *testing.T) {
	backend, loadgen, other := grpcAgentPod("backend-1", "mb131"), grpcAgentPod("loadgen-1", "mb131"), grpcAgentPod("client-1", "mb131")
	loadgen.Spec.ServiceAccountName = "loadgen"
	c := apiServer(t, []corev1.Pod{*backend, *loadgen, *other}, map[string]string{
		"/api/v1/namespaces/mb/pods/backend-1:8080/proxy/meshbench/peers": peersJSON,
		// A loadgen answers with fortio's echo, or with no peers: not a server.
		"/api/v1/namespaces/mb/pods/loadgen-1:8080/proxy/meshbench/peers": "GET /meshbench/peers HTTP/1.1\n",
		"/api/v1/namespaces/mb/pods/client-1:8080/proxy/meshbench/peers":  `{"xds": false, "peers": []}`,
	})
	edges, err := newMesh(t, "istio-proxyless", WithRevision("mb131")).(MTLSChecker).MTLS(ctx, c, "mb")
	require.NoError(t, err)
	assert.Equal(t, []Edge{
		{Src: "mb/loadgen-1", Dst: "mb/backend-1", Peer: "spiffe://cluster.local/ns/mb/sa/loadgen", Secured: true, Requests: 1200,
			Evidence: `pod mb/backend-1 :8080/meshbench/peers: peer "spiffe://cluster.local/ns/mb/sa/loadgen" mtls=true TLS 1.3 calls=1200`},
		{Src: "unknown", Dst: "mb/backend-1", Peer: "spiffe://other.example/ns/mb/sa/loadgen", Requests: 3,
			Evidence: `pod mb/backend-1 :8080/meshbench/peers: peer "spiffe://other.example/ns/mb/sa/loadgen" mtls=true TLS 1.3 calls=3 (not a SPIFFE identity of trust domain cluster.local)`},
	}, edges)

	_, err = newMesh(t, "istio-proxyless").(MTLSChecker).MTLS(ctx, apiServer(t, []corev1.Pod{*loadgen}, nil), "mb")
	assert.EqualError(t, err, "istio-proxyless: no meshed pod of mb serves :8080/meshbench/peers: no gRPC server's view of its peers to prove mTLS with")
}

func TestProxylessEdgesRefuseWhatIsNotMeshed(t *testing.T) {
	backend := grpcAgentPod("backend-1", "mb131")
	var pp ProxylessPeers
	require.NoError(t, json.Unmarshal([]byte(`{"xds": true, "peers": [{"identity": "", "mtls": false, "calls": 7}]}`), &pp))
	_, err := ProxylessEdges("cluster.local", map[*corev1.Pod]ProxylessPeers{backend: pp}, nil)
	assert.EqualError(t, err, "istio-proxyless: pod mb/backend-1 :8080/meshbench/peers: a peer without a SPIFFE identity (mtls=false, 7 calls): a meshed edge must show its caller's identity")

	plain := ProxylessPeers{XDS: false, Peers: []ProxylessPeer{{Identity: "", Calls: 4}}}
	_, err = ProxylessEdges("cluster.local", map[*corev1.Pod]ProxylessPeers{backend: plain}, nil)
	assert.EqualError(t, err, "istio-proxyless: pod mb/backend-1 :8080/meshbench/peers: the gRPC server serves without xDS credentials (xds false): plain gRPC in the meshed arm")

	// Plain TLS from a SPIFFE identity is not secured; without a workload
	// for it, the caller is named by its service account.
	edges, err := ProxylessEdges("cluster.local", map[*corev1.Pod]ProxylessPeers{backend: {XDS: true,
		Peers: []ProxylessPeer{{Identity: "spiffe://cluster.local/ns/mb/sa/lg", Calls: 1}, {Identity: "spiffe://cluster.local/ns/mb/sa/lg", MTLS: true, Calls: 2}}}}, nil)
	require.NoError(t, err)
	require.Len(t, edges, 1)
	assert.Equal(t, "mb/lg", edges[0].Src)
	assert.False(t, edges[0].Secured)
	assert.Equal(t, int64(3), edges[0].Requests)
}

// policyAPI stands in for the API server: istiod's Deployments, the
// namespace's patch, the policies' collections and the CRD list.
type policyAPI struct {
	mu       sync.Mutex
	objects  map[string][]byte // path/name → body
	deleted  []string
	patched  []string // path: body of each merge patch
	crds     string
	istiodOf string // the revision of the istiod it lists
}

func (f *policyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body, _ := io.ReadAll(r.Body)
	status := func(code int, reason string) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: metav1.StatusReason(reason)})
	}
	switch {
	case r.URL.Path == "/apis/apps/v1/namespaces/istio-system/deployments":
		json.NewEncoder(w).Encode(appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{Kind: "DeploymentList", APIVersion: "apps/v1"},
			Items: []appsv1.Deployment{*proxylessIstiod(f.istiodOf)}})
	case r.URL.Path == "/api/v1/namespaces/mb" && r.Method == http.MethodPatch:
		json.NewEncoder(w).Encode(corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "mb"}})
	case r.URL.Path == crdPath:
		w.Write([]byte(f.crds))
	case r.Method == http.MethodPost:
		var obj struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		json.Unmarshal(body, &obj)
		key := r.URL.Path + "/" + obj.Metadata.Name
		if _, ok := f.objects[key]; ok {
			status(http.StatusConflict, "AlreadyExists")
			return
		}
		f.objects[key] = body
		w.Write(body)
	case r.Method == http.MethodPatch:
		if _, ok := f.objects[r.URL.Path]; !ok {
			status(http.StatusNotFound, "NotFound")
			return
		}
		f.patched = append(f.patched, r.URL.Path+": "+r.Header.Get("Content-Type")+" "+string(body))
		w.Write(f.objects[r.URL.Path])
	case r.Method == http.MethodDelete:
		delete(f.objects, r.URL.Path)
		f.deleted = append(f.deleted, r.URL.Path)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	default:
		status(http.StatusNotFound, "NotFound")
	}
}

const (
	paPath = "/apis/security.istio.io/v1/namespaces/mb/peerauthentications/meshbench-strict"
	drPath = "/apis/networking.istio.io/v1/namespaces/mb/destinationrules/meshbench-istio-mutual"
)

func TestProxylessEnableAppliesStrictMTLSAndRemovesOnlyThat(t *testing.T) {
	other := "/apis/security.istio.io/v1/namespaces/mb/peerauthentications/theirs"
	f := &policyAPI{objects: map[string][]byte{other: []byte("{}")}, istiodOf: "mb131"}
	c := fakeAPIClient(t, f)
	m := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	require.NoError(t, m.Enable(ctx, c, "mb"))
	assert.JSONEq(t, `{"apiVersion":"security.istio.io/v1","kind":"PeerAuthentication",
		"metadata":{"name":"meshbench-strict","namespace":"mb","labels":{"app.kubernetes.io/managed-by":"meshbench"}},
		"spec":{"mtls":{"mode":"STRICT"}}}`, string(f.objects[paPath]))
	assert.JSONEq(t, `{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule",
		"metadata":{"name":"meshbench-istio-mutual","namespace":"mb","labels":{"app.kubernetes.io/managed-by":"meshbench"}},
		"spec":{"host":"*.mb.svc.cluster.local","exportTo":["."],"trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}}`, string(f.objects[drPath]))
	require.NoError(t, m.Enable(ctx, c, "mb"), "enabling twice applies nothing twice")

	require.NoError(t, m.(Cleaner).Cleanup(ctx, c))
	assert.Equal(t, []string{paPath, drPath}, f.deleted)
	assert.Equal(t, map[string][]byte{other: []byte("{}")}, f.objects)

	// A policy of that name it did not apply is refused and kept.
	f2 := &policyAPI{objects: map[string][]byte{paPath: []byte("{}")}, istiodOf: "mb131"}
	c2 := fakeAPIClient(t, f2)
	m2 := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	assert.EqualError(t, m2.Enable(ctx, c2, "mb"), "istio-proxyless: PeerAuthentication mb/meshbench-strict exists and was not applied by this run: "+
		"meshbench neither replaces nor removes it; delete it or use another namespace")
	require.NoError(t, m2.(Cleaner).Cleanup(ctx, c2))
	assert.Empty(t, f2.deleted)
}

func TestProxylessRefusesIstioCRDsOfAnotherInstallation(t *testing.T) {
	f := &policyAPI{objects: map[string][]byte{}, crds: `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","items":[
		{"metadata":{"name":"gateways.gateway.networking.k8s.io"}},
		{"metadata":{"name":"peerauthentications.security.istio.io","labels":{"app.kubernetes.io/version":"1.28.0"},"annotations":{"meta.helm.sh/release-name":"istio-base"}}},
		{"metadata":{"name":"destinationrules.networking.istio.io"}}]}`}
	_, err := newMesh(t, "istio-proxyless").(Preparer).Prepare(ctx, fakeAPIClient(t, f), InstallOptions{})
	assert.EqualError(t, err, "istio-proxyless: Istio CRDs of another installation are on the cluster "+
		"(destinationrules.networking.istio.io (version unlabelled, release none), peerauthentications.security.istio.io (version 1.28.0, release istio-base)): "+
		"installing Istio 1.31-dev.eed52ebb66ad's base would take them over; meshbench neither replaces nor removes what it did not install: "+
		"uninstall that Istio, or run against it without installing")

	f.crds = `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","items":[{"metadata":{"name":"gateways.gateway.networking.k8s.io"}}]}`
	notes, err := newMesh(t, "istio-proxyless").(Preparer).Prepare(ctx, fakeAPIClient(t, f), InstallOptions{})
	require.NoError(t, err)
	assert.Empty(t, notes)
}

func TestProxylessImagesAreWhatItsChartsInstall(t *testing.T) {
	m, err := New("istio-proxyless", WithRevision("mb131"))
	require.NoError(t, err)
	im, ok := m.(Imager)
	require.True(t, ok, "istio-proxyless names its images for kind to load")
	refs, err := im.Images(InstallOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"meshbench/pilot:" + ProxylessDefaultVersion, "meshbench/proxyv2-agent:" + ProxylessDefaultVersion}, refs)
	refs, err = im.Images(InstallOptions{Version: "1.30-dev.9739e10eb9d7", Registry: "registry.local:5000/istio"})
	require.NoError(t, err)
	assert.Equal(t, []string{"registry.local:5000/istio/pilot:1.30-dev.9739e10eb9d7", "registry.local:5000/istio/proxyv2-agent:1.30-dev.9739e10eb9d7"}, refs)
	_, err = im.Images(InstallOptions{Version: "not a version"})
	assert.ErrorContains(t, err, `install version "not a version"`)
}
