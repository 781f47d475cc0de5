package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// inApp is a test double of a proxyless mesh (mesh.InApp): no proxy
// container; its injector gives every meshed container an xDS bootstrap,
// and its telemetry says whether loadgen → backend was mTLS.
type inApp struct {
	mesh.Mesh // none's Detect, Enable, Roles and Verify: no proxy anywhere
	secured   bool
}

func newInApp(t *testing.T, secured bool) inApp {
	none, err := mesh.New("none")
	require.NoError(t, err)
	return inApp{Mesh: none, secured: secured}
}

func (inApp) Name() string       { return "inapp-test" }
func (inApp) DialScheme() string { return "xds" }

func (inApp) Inject(tmpl *corev1.PodTemplateSpec) error {
	for i := range tmpl.Spec.Containers {
		c := &tmpl.Spec.Containers[i]
		c.Env = append(c.Env, corev1.EnvVar{Name: "GRPC_XDS_BOOTSTRAP", Value: "/etc/istio/proxy/grpc-bootstrap.json"})
	}
	return nil
}

func (m inApp) MTLS(_ context.Context, _ kubernetes.Interface, ns string) ([]mesh.Edge, error) {
	return []mesh.Edge{{Src: ns + "/loadgen", Dst: ns + "/backend", Secured: m.secured, Evidence: "test peers: spiffe://cluster.local/ns/" + ns + "/sa/default"}}, nil
}

var (
	_ mesh.InApp       = inApp{}
	_ mesh.Injector    = inApp{}
	_ mesh.MTLSChecker = inApp{}
)

// TestGRPCURLPerArm: the baseline dials plain gRPC; the meshed arm of a
// proxyless mesh (mesh.InApp) its scheme, xds:///, at the Service's FQDN
// and gRPC port; a sidecar mesh's meshed arm, and mesh none's, plain gRPC
// through whatever proxy the pod has.
func TestGRPCURLPerArm(t *testing.T) {
	base := &arm{name: testbed.Baseline, ns: "mb-baseline-x"}
	meshed := &arm{name: testbed.Meshed, ns: "mb-meshed-x"}
	istio, err := mesh.New("istio")
	require.NoError(t, err)
	for _, c := range []struct {
		m      mesh.Mesh
		a      *arm
		scheme string
		url    string
	}{
		{supportsTarget(t, "none").o.Mesh, base, "grpc", "grpc://backend.mb-baseline-x.svc.cluster.local:8079"},
		{supportsTarget(t, "none").o.Mesh, meshed, "grpc", "grpc://backend.mb-meshed-x.svc.cluster.local:8079"},
		{istio, base, "grpc", "grpc://backend.mb-baseline-x.svc.cluster.local:8079"},
		{istio, meshed, "grpc", "grpc://backend.mb-meshed-x.svc.cluster.local:8079"},
		{newInApp(t, true), base, "grpc", "grpc://backend.mb-baseline-x.svc.cluster.local:8079"},
		{newInApp(t, true), meshed, "xds", "xds:///backend.mb-meshed-x.svc.cluster.local:8079"},
	} {
		tg := &Target{o: Options{Mesh: c.m}}
		got := tg.dialScheme(c.a)
		assert.Equal(t, c.scheme, got, "%s %s", c.m.Name(), c.a.name)
		assert.Equal(t, c.url, c.a.grpcURL(got), "%s %s", c.m.Name(), c.a.name)
	}
	// A revision gate's candidate arm dials with its own adapter.
	tg := &Target{o: Options{Mesh: istio}}
	cand := &arm{name: testbed.Candidate, ns: "mb-candidate-x", mesh: newInApp(t, true)}
	assert.Equal(t, "xds", tg.dialScheme(cand))
	assert.Equal(t, "grpc", tg.dialScheme(&arm{name: testbed.Reference, ns: "mb-reference-x"}))
}

// TestGRPCCodes: a grpc answer's RetCodes are gRPC status codes; OK
// counts as 200, every other status as 1000+code (load.GRPCCode) and
// fails, a socket error (-1) stays; an HTTP answer is read as it is.
func TestGRPCCodes(t *testing.T) {
	fr := &fortioResult{RetCodes: map[int]int64{0: 10, 14: 2, 4: 1, -1: 3}}
	assert.Equal(t, map[int]int64{200: 10, 1014: 2, 1004: 1, -1: 3}, fr.codes(load.GRPC))
	assert.Equal(t, map[int]int64{0: 10, 14: 2, 4: 1, -1: 3}, fr.RetCodes, "the answer is left alone")
	assert.Equal(t, fr.RetCodes, fr.codes(load.HTTP1))
	assert.Equal(t, fr.RetCodes, fr.codes(load.H2))
	assert.Equal(t, map[int]int64{1200: 5}, (&fortioResult{RetCodes: map[int]int64{200: 5}}).codes(load.GRPC), "200 is no gRPC status")

	// The shard's result: requests, errors and codes as the local
	// target's gRPC client counts them.
	rec := recorded(t, "closed-c8-shard0.json")
	rec.RetCodes = map[int]int64{0: 4940, 14: 11}
	o := opts(t, load.Options{URL: "xds:///backend.ns.svc.cluster.local:8079", Protocol: load.GRPC, Concurrency: 2, Duration: 2 * time.Second})
	r := shardResult(o, rec)
	assert.Equal(t, map[int]int64{200: 4940, 1014: 11}, r.Codes)
	assert.EqualValues(t, 4951, r.Requests)
	assert.EqualValues(t, 11, r.Errors)
	assert.Equal(t, "200:4940 1014(Unavailable):11", load.FormatCodes(r.Codes))
	rec.RetCodes = map[int]int64{0: 4951}
	assert.Zero(t, shardResult(o, rec).Errors)
}

// TestGRPCPayload: fortio's ping echoes its payload, so a grpc run sends
// one size both ways: the response size, or the request size alone.
func TestGRPCPayload(t *testing.T) {
	assert.Equal(t, 1024, grpcPayload(testbed.Workload{ResponseSize: 1024}))
	assert.Equal(t, 1024, grpcPayload(testbed.Workload{ResponseSize: 1024, RequestSize: 1024}))
	assert.Equal(t, 64, grpcPayload(testbed.Workload{RequestSize: 64}))
	assert.Zero(t, grpcPayload(testbed.Workload{}))
}

// TestRunQueryGRPC: the target and the ping's payload-size in the query;
// no HTTP body, no h2 switch.
func TestRunQueryGRPC(t *testing.T) {
	o := opts(t, load.Options{URL: "xds:///backend.ns.svc.cluster.local:8079", Protocol: load.GRPC, Concurrency: 4, RequestSize: 512})
	q, body, err := runQuery(o, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "xds:///backend.ns.svc.cluster.local:8079", q.Get("url"))
	assert.Equal(t, "512", q.Get("payload-size"))
	assert.Empty(t, q.Get("h2"))
	assert.Nil(t, body)
	o.RequestSize = 0
	q, _, err = runQuery(o, time.Second)
	require.NoError(t, err)
	assert.Empty(t, q.Get("payload-size"))
	_, has := q["payload-size"]
	assert.False(t, has)
}

// TestSupportsGRPC: gRPC runs on backends deployed for it, one hop, with
// one payload size and no metadata; HTTP does not run on them; a loadgen
// out of a proxyless mesh has no xDS client. Each refusal names the field.
func TestSupportsGRPC(t *testing.T) {
	tg := supportsTarget(t, "none")
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, nil),
		"protocol grpc: the backends were deployed for HTTP (nginx); gRPC needs the gRPC backend, deployed with Protocol=grpc")
	tg.o.Words = angled
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, nil),
		"protocol grpc: the backends were deployed for HTTP (nginx); gRPC needs the gRPC backend, deployed with <Protocol:grpc>")

	tg = supportsTarget(t, "none")
	tg.o.Workloads = manifests.Params{Protocol: manifests.GRPC, ResponseSize: 128}
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, nil))
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, ResponseSize: 4096}, nil), "the payload is per run")
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, RequestSize: 128}, nil))
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, &testbed.Fault{Action: testbed.Kill, Workload: "backend"}))
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, Path: testbed.TwoHop}, nil),
		"Workload.Path two-hop with Workload.Protocol grpc: on clusters gRPC is one-hop only (there is no gRPC frontend)")
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, RequestSize: 64}, nil),
		"Workload.RequestSize 64 with Workload.Protocol grpc: fortio's ping echoes its payload, so the request and the response are both 128 bytes (ResponseSize); set RequestSize to 0 or to it")
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, Headers: map[string]string{"x-tenant": "a"}}, nil),
		"Workload.Headers with Workload.Protocol grpc: the cluster loadgen's gRPC runs send no metadata")
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.HTTP1}, nil),
		"protocol http1: the backends were deployed for gRPC (Protocol=grpc); HTTP needs the nginx backends")
	assert.EqualError(t, tg.Supports(testbed.Workload{}, nil),
		"protocol http1: the backends were deployed for gRPC (Protocol=grpc); HTTP needs the nginx backends", "http1 is the default")
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, Placement: testbed.OutOfMesh}, nil), "mesh none: plain gRPC from anywhere")

	tg.o.Mesh = newInApp(t, true)
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, nil))
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC, Placement: testbed.OutOfMesh}, nil),
		"out-of-mesh placement with grpc: the inapp-test mesh's data plane is the app's own xDS client, which a loadgen outside the mesh does not have")
}

// TestGRPCEdge: a gRPC run's one hop counts the loadgen's OK calls, says
// so, and takes mTLS from the mesh's telemetry in the meshed arm only.
func TestGRPCEdge(t *testing.T) {
	base := &arm{name: testbed.Baseline, ns: "b", loadgenNS: "b"}
	assert.Equal(t, []testbed.Edge{{Src: "loadgen", Dst: "backend", Requests: 100,
		Evidence: "requests: the loadgen's 100 gRPC calls answered OK (the gRPC backend counts none)"}}, grpcEdge(base, 100, nil))
	assert.Empty(t, checkEdges(testbed.Baseline, testbed.OneHop, grpcEdge(base, 100, nil), 100, false))

	meshed := &arm{name: testbed.Meshed, ns: "m", loadgenNS: "m"}
	mtls, _ := newInApp(t, true).MTLS(context.Background(), nil, "m")
	assert.Equal(t, []testbed.Edge{{Src: "loadgen", Dst: "backend", Requests: 100, Peer: "loadgen", Secured: true,
		Evidence: "test peers: spiffe://cluster.local/ns/m/sa/default; requests: the loadgen's 100 gRPC calls answered OK (the gRPC backend counts none)"}},
		grpcEdge(meshed, 100, mtls))
	assert.Empty(t, checkEdges(testbed.Meshed, testbed.OneHop, grpcEdge(meshed, 100, mtls), 100, false))
	// Telemetry of the baseline's namespace does not secure the meshed arm.
	other, _ := newInApp(t, true).MTLS(context.Background(), nil, "b")
	why := checkEdges(testbed.Meshed, testbed.OneHop, grpcEdge(meshed, 100, other), 100, false)
	assert.Equal(t, []validity.Kind{validity.MeshNotOn, validity.PathNotVerified}, why.Kinds())
	unsecured, _ := newInApp(t, false).MTLS(context.Background(), nil, "m")
	assert.Equal(t, []validity.Kind{validity.MeshNotOn, validity.PathNotVerified},
		checkEdges(testbed.Meshed, testbed.OneHop, grpcEdge(meshed, 100, unsecured), 100, false).Kinds())
}

// TestKubeRefusesGRPCWithTheSidecarMesh: the bring-your-own sidecar, as
// the harness wires it, proxies HTTP only; refused before the cluster is
// touched.
func TestKubeRefusesGRPCWithTheSidecarMesh(t *testing.T) {
	m, err := mesh.New("sidecar", mesh.WithSidecar("mb-sidecar", "meshbench/sidecar:dev"))
	require.NoError(t, err)
	_, err = newTarget(nil, Options{Mesh: m, Workloads: manifests.Params{Protocol: manifests.GRPC}})
	assert.EqualError(t, err, "kube target: workloads: protocol grpc: the sidecar mesh's proxy, as the harness wires it, proxies HTTP/1.1 and h2c to its app, not gRPC")
}

// fakeGRPCLoadgen stands in for the loadgen pods of a gRPC run: it
// answers fortio's REST run with a recorded answer whose RetCodes are
// gRPC statuses, and keeps every run's query.
type fakeGRPCLoadgen struct {
	mu      sync.Mutex
	queries []url.Values
	answer  []byte
}

func newFakeGRPCLoadgen(t *testing.T, codes map[int]int64) *fakeGRPCLoadgen {
	b, err := os.ReadFile(filepath.Join("testdata", "fortio", "closed-c8-shard0.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	rc := map[string]int64{}
	for k, n := range codes {
		rc[strconv.Itoa(k)] = n
	}
	doc["RetCodes"], doc["RunType"] = rc, "GRPC"
	f := &fakeGRPCLoadgen{}
	f.answer, err = json.Marshal(doc)
	require.NoError(t, err)
	return f
}

func (f *fakeGRPCLoadgen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case fortioRunPath:
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.Query())
		f.mu.Unlock()
		_, _ = w.Write(f.answer)
	case netInfoPath:
		_, _ = w.Write([]byte(`{"hostname":"loadgen-0","fortio":"1.75.3","cores":2}`))
	default:
		_, _ = w.Write([]byte("ok\n"))
	}
}

func (f *fakeGRPCLoadgen) urls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, q := range f.queries {
		out = append(out, q.Get("url")+" payload-size="+q.Get("payload-size"))
	}
	return out
}

// TestGRPCOnFakeCluster deploys gRPC backends with a proxyless mesh on
// the fake cluster and runs both arms: no frontend is deployed, the
// meshed pods are injected and the baseline's are not, each arm's loadgen
// dials its own scheme, OK statuses are the successes, and the path is
// proved from the mesh's telemetry in the meshed arm.
func TestGRPCOnFakeCluster(t *testing.T) {
	fc, ctx, _ := startFakeCluster(t)
	lg := newFakeGRPCLoadgen(t, map[int]int64{0: 4951})
	srv := httptest.NewServer(lg)
	t.Cleanup(srv.Close)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: newInApp(t, true),
		Workloads: manifests.Params{Protocol: manifests.GRPC, ResponseSize: 256, Images: manifests.Images{Loadgen: "meshbench/mbloadgen:dev"}}})
	tg.fwd = func(ctx context.Context, ns, pod string, port int) (*tunnel, error) {
		if strings.HasPrefix(pod, string(manifests.Loadgen)+"-") {
			return &tunnel{Addr: strings.TrimPrefix(srv.URL, "http://")}, nil
		}
		return fc.forward(ctx, ns, pod, port)
	}
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })

	base, meshed := tg.arms[testbed.Baseline], tg.arms[testbed.Meshed]
	for _, a := range []*arm{base, meshed} {
		_, err := fc.c.AppsV1().Deployments(a.ns).Get(ctx, "frontend", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s: no gRPC frontend: %v", a.name, err)
		d, err := fc.c.AppsV1().Deployments(a.ns).Get(ctx, "backend", metav1.GetOptions{})
		require.NoError(t, err)
		ctr := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, "meshbench/mbloadgen:dev", ctr.Image)
		assert.Equal(t, []string{"-listen", ":8080", "-grpc-listen", ":8079", "-loglevel", "warning"}, ctr.Args)
		wantEnv := []corev1.EnvVar(nil)
		if a.name.IsMeshed() {
			wantEnv = []corev1.EnvVar{{Name: "GRPC_XDS_BOOTSTRAP", Value: "/etc/istio/proxy/grpc-bootstrap.json"}}
		}
		assert.Equal(t, wantEnv, ctr.Env, "%s: injected by the mesh in the meshed arm only", a.name)
		svc, err := fc.c.CoreV1().Services(a.ns).Get(ctx, "backend", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, svc.Spec.Ports, 1)
		assert.Equal(t, "grpc", svc.Spec.Ports[0].Name)
		assert.Equal(t, "grpc", *svc.Spec.Ports[0].AppProtocol)
	}
	cfg := tg.Environment().Mesh.Config
	assert.Equal(t, "grpc :8079 (fortio's ping, one hop)", cfg["protocols"])
	assert.Equal(t, "grpc", cfg["dial.baseline"])
	assert.Equal(t, "xds", cfg["dial.meshed"])

	w := testbed.Window{Concurrency: 2, Duration: 2 * time.Second, Warmup: -1}
	for _, a := range []*arm{base, meshed} {
		run, err := tg.Run(ctx, testbed.Spec{Arm: a.name, Workload: testbed.Workload{Protocol: load.GRPC}, Window: w})
		require.NoError(t, err, a.name)
		t.Logf("%s: edges %+v; invalid %v; warnings %v", a.name, run.Edges, run.Invalid.Strings(), run.Warnings.Strings())
		dial := map[testbed.Arm]string{testbed.Baseline: "grpc", testbed.Meshed: "xds"}[a.name]
		assert.Equal(t, dial, run.Dial)
		assert.Equal(t, a.grpcURL(dial), run.Load.Options.URL)
		assert.Equal(t, 256, run.Load.Options.RequestSize, "the ping's payload, both ways")
		assert.Equal(t, map[int]int64{200: 4951}, run.Load.Codes)
		assert.Zero(t, run.Load.Errors)
		require.Len(t, run.Edges, 1)
		assert.Equal(t, a.name.IsMeshed(), run.Edges[0].Secured, a.name)
		assert.Empty(t, run.Invalid, a.name)
	}
	// The mesh's telemetry says loadgen → backend was not mTLS.
	tg.o.Mesh = newInApp(t, false)
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Protocol: load.GRPC}, Window: w})
	require.NoError(t, err)
	assert.Equal(t, []validity.Kind{validity.MeshNotOn, validity.PathNotVerified}, run.Invalid.Kinds())
	lg.mu.Lock()
	lg.queries = lg.queries[:2]
	lg.mu.Unlock()
	assert.Equal(t, []string{
		"grpc://backend." + base.ns + ".svc.cluster.local:8079 payload-size=256",
		"xds:///backend." + meshed.ns + ".svc.cluster.local:8079 payload-size=256",
	}, lg.urls())
}
