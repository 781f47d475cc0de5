package mesh

import (
	"encoding/json"
	"github.com/meshbench/meshbench/internal/testcharts"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// waypointStats is the recorded server-side sidecar series
// (istio-system/istio-ingressgateway → istioinaction/webapp, mutual_tls)
// as a waypoint reports it: Istio's ambient integration tests query
// waypoints' istio_requests_total with the same labels and
// reporter="waypoint".
func waypointStats(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "istio", "sidecar-stats.txt"))
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	return lines[0] + "\n" + strings.Replace(lines[1], `reporter="destination"`, `reporter="waypoint"`, 1) + "\n" + lines[2] + "\n"
}

func TestWaypointEdges(t *testing.T) {
	const wp = "istioinaction/waypoint"
	src, dst := "istio-system/istio-ingressgateway", "istioinaction/webapp"
	legs := []Edge{
		{Src: src, Dst: wp, Secured: true, Evidence: "in"},
		{Src: wp, Dst: dst, Secured: true, Evidence: "out"},
	}
	edges, err := WaypointEdges(wp, legs, strings.NewReader(waypointStats(t)))
	require.NoError(t, err)
	require.Len(t, edges, 3)
	assert.Equal(t, Edge{Src: src, Dst: dst, Secured: true,
		Evidence: `istio_requests_total{reporter="waypoint",connection_security_policy="mutual_tls"} 310; ` +
			`ztunnel istio-system/istio-ingressgateway → istioinaction/waypoint: in; ztunnel istioinaction/waypoint → istioinaction/webapp: out`}, edgeOf(t, edges, src, dst))

	// The client-side series of the same file is not the waypoint's.
	b, err := os.ReadFile(filepath.Join("testdata", "istio", "sidecar-stats.txt"))
	require.NoError(t, err)
	edges, err = WaypointEdges(wp, nil, strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Empty(t, edges)

	// A plaintext leg, or traffic that reached the workload without the
	// waypoint, is not secured.
	plain := []Edge{legs[0], {Src: wp, Dst: dst, Evidence: "plain"}}
	edges, err = WaypointEdges(wp, plain, strings.NewReader(waypointStats(t)))
	require.NoError(t, err)
	assert.False(t, edgeOf(t, edges, src, dst).Secured)
	direct := []Edge{{Src: src, Dst: dst, Secured: true, Evidence: "direct"}}
	edges, err = WaypointEdges(wp, direct, strings.NewReader(waypointStats(t)))
	require.NoError(t, err)
	require.Len(t, edges, 1)
	assert.False(t, edges[0].Secured)
	assert.Contains(t, edges[0].Evidence, "bypassed waypoint istioinaction/waypoint: ztunnel saw direct")
}

func edgeOf(t *testing.T, edges []Edge, src, dst string) Edge {
	t.Helper()
	for _, e := range edges {
		if e.Src == src && e.Dst == dst {
			return e
		}
	}
	t.Fatalf("no edge %s → %s in %v", src, dst, edges)
	return Edge{}
}

// fakeAPI stands in for the API server a waypoint is set up through: the
// Gateway API CRDs (absent until created), Gateways (programmed as soon as
// created) and the namespace's merge patch.
type fakeAPI struct {
	mu       sync.Mutex
	crds     map[string]bool
	created  []string
	gateways map[string][]byte
	patched  map[string]any
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	status := func(code int, reason string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
			Code: int32(code), Reason: metav1.StatusReason(reason)})
	}
	ok := func(v any) { w.Header().Set("Content-Type", "application/json"); json.NewEncoder(w).Encode(v) }
	body, _ := io.ReadAll(r.Body)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, crds+"/"):
		if !f.crds[strings.TrimPrefix(r.URL.Path, crds+"/")] {
			status(http.StatusNotFound, "NotFound")
			return
		}
		ok(map[string]any{"status": map[string]any{"conditions": []map[string]string{{"type": "Established", "status": "True"}}}})
	case r.Method == http.MethodPost && r.URL.Path == crds:
		var obj struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		json.Unmarshal(body, &obj)
		f.crds[obj.Metadata.Name] = true
		f.created = append(f.created, obj.Metadata.Name)
		ok(map[string]any{})
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, crds+"/"):
		delete(f.crds, strings.TrimPrefix(r.URL.Path, crds+"/"))
		ok(map[string]any{})
	case strings.HasPrefix(r.URL.Path, "/apis/gateway.networking.k8s.io/v1/namespaces/mb/gateways"):
		if r.Method == http.MethodPost {
			f.gateways["waypoint"] = body
		}
		ok(map[string]any{"status": map[string]any{"conditions": []map[string]string{{"type": "Programmed", "status": "True"}}}})
	case r.Method == http.MethodPatch && r.URL.Path == "/api/v1/namespaces/mb":
		json.Unmarshal(body, &f.patched)
		ok(corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "mb"}})
	default:
		status(http.StatusNotFound, "NotFound")
	}
}

// fakeAPIClient is a clientset talking to the stand-in API server f.
func fakeAPIClient(t *testing.T, f http.Handler) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	require.NoError(t, err)
	return c
}

// gatewayAPIDir is config/crd/standard of the pinned Gateway API module
// when it is in the module cache; the test is skipped otherwise.
func gatewayAPIDir(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod")
	}
	dir := filepath.Join(cache, "sigs.k8s.io", "gateway-api@"+GatewayAPIVersion, "config", "crd", "standard")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the Gateway API module is not in the module cache (go mod download -json %s@%s): %v", gatewayAPIModule, GatewayAPIVersion, err)
	}
	return dir
}

func TestAmbientEnableWithWaypoint(t *testing.T) {
	f := &fakeAPI{crds: map[string]bool{}, gateways: map[string][]byte{}}
	c := fakeAPIClient(t, f)
	a := newMesh(t, "istio-ambient", WithWaypoint(DefaultWaypoint), WithGatewayAPICRDs(gatewayAPIDir(t)))
	require.NoError(t, a.Enable(ctx, c, "mb"))

	// The module's standard CRDs, Gateway among them, were installed.
	assert.Contains(t, f.created, "gateways.gateway.networking.k8s.io")
	assert.Contains(t, f.created, "httproutes.gateway.networking.k8s.io")
	assert.Contains(t, f.created, "gatewayclasses.gateway.networking.k8s.io")
	// The waypoint is what `istioctl waypoint apply` makes.
	assert.JSONEq(t, `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway",
		"metadata":{"name":"waypoint","namespace":"mb","labels":{"istio.io/waypoint-for":"service"}},
		"spec":{"gatewayClassName":"istio-waypoint","listeners":[{"name":"mesh","port":15008,"protocol":"HBONE"}]}}`, string(f.gateways["waypoint"]))
	assert.Equal(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}}}, f.patched)

	// Cleanup removes what the run installed, and only that.
	f.crds["other.example.com"] = true
	require.NoError(t, a.(Cleaner).Cleanup(ctx, c))
	assert.Equal(t, map[string]bool{"other.example.com": true}, f.crds)

	// CRDs already there are neither installed nor removed.
	f2 := &fakeAPI{crds: map[string]bool{"gateways.gateway.networking.k8s.io": true}, gateways: map[string][]byte{}}
	c2 := fakeAPIClient(t, f2)
	a2 := newMesh(t, "istio-ambient", WithWaypoint(DefaultWaypoint), WithGatewayAPICRDs(t.TempDir()))
	require.NoError(t, a2.Enable(ctx, c2, "mb"))
	assert.Empty(t, f2.created)
	require.NoError(t, a2.(Cleaner).Cleanup(ctx, c2))
	assert.True(t, f2.crds["gateways.gateway.networking.k8s.io"])
}

// TestWaypointRoleMatchesIstio checks the label the waypoint CPU role
// selects against Istio's own waypoint template and constant.
func TestWaypointRoleMatchesIstio(t *testing.T) {
	charts := testcharts.IstioDir(t)
	tmpl, err := os.ReadFile(filepath.Join(charts, "istio-control", "istio-discovery", "files", "waypoint.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(tmpl), `"gateway.istio.io/managed" .ControllerLabel`)
	assert.Contains(t, string(tmpl), `"gateway.networking.k8s.io/gateway-name" .Name`)
	consts, err := os.ReadFile(filepath.Join(charts, "..", "..", "pkg", "config", "constants", "constants.go"))
	require.NoError(t, err)
	assert.Regexp(t, `ManagedGatewayMeshControllerLabel\s+= "istio.io-mesh-controller"`, string(consts))
	assert.Equal(t, []Workload{{Labels: map[string]string{"gateway.istio.io/managed": "istio.io-mesh-controller"}}},
		newMesh(t, "istio-ambient").Roles().Waypoints)
}

func TestGatewayAPICRDsFromTheModuleCache(t *testing.T) {
	want := gatewayAPIDir(t) // skips unless the module is cached: no download here
	got, err := GatewayAPICRDs(ctx, GatewayAPIVersion)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	crds, err := readCRDs(got)
	require.NoError(t, err)
	assert.Contains(t, crds, "gateways.gateway.networking.k8s.io")
	_, err = readCRDs(t.TempDir())
	assert.ErrorContains(t, err, "holds no gateways.gateway.networking.k8s.io CRD")
}
