package mesh

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGRPCStatusNameIsIstios(t *testing.T) {
	for c, want := range map[codes.Code]string{codes.DataLoss: "DATA_LOSS", codes.Unavailable: "UNAVAILABLE",
		codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.OK: "OK", codes.FailedPrecondition: "FAILED_PRECONDITION"} {
		assert.Equal(t, want, grpcStatusName(c))
	}
}

const vsPath = "/apis/networking.istio.io/v1/namespaces/mb/virtualservices/meshbench-propagation"

// The rule is created once, then only its match's value changes; Cleanup
// removes it with the mTLS policies.
func TestProxylessProbeFaultCreatesThenPatchesTheRule(t *testing.T) {
	f := &policyAPI{objects: map[string][]byte{}, istiodOf: "mb131"}
	c := fakeAPIClient(t, f)
	m := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	pr, ok := m.(Propagator)
	require.True(t, ok, "istio-proxyless measures config propagation")
	const host = "backend.mb.svc.cluster.local"
	require.NoError(t, pr.SetProbeFault(ctx, c, "mb", host, false))
	rule := func(value string) string {
		return `{"hosts":["backend.mb.svc.cluster.local"],"exportTo":["."],"http":[
			{"name":"meshbench-probe","match":[{"headers":{"x-meshbench-probe":{"exact":"` + value + `"}}}],
			 "fault":{"abort":{"grpcStatus":"DATA_LOSS","percentage":{"value":100}}},
			 "route":[{"destination":{"host":"backend.mb.svc.cluster.local"}}]},
			{"name":"meshbench-default","route":[{"destination":{"host":"backend.mb.svc.cluster.local"}}]}]}`
	}
	assert.JSONEq(t, `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService",
		"metadata":{"name":"meshbench-propagation","namespace":"mb","labels":{"app.kubernetes.io/managed-by":"meshbench"}},
		"spec":`+rule("off")+`}`, string(f.objects[vsPath]))

	require.NoError(t, pr.SetProbeFault(ctx, c, "mb", host, true))
	require.NoError(t, pr.SetProbeFault(ctx, c, "mb", host, false))
	require.Len(t, f.patched, 2)
	for i, value := range []string{"on", "off"} {
		assert.Equal(t, vsPath+": application/merge-patch+json ", f.patched[i][:len(vsPath)+len(": application/merge-patch+json ")])
		assert.JSONEq(t, `{"spec":`+rule(value)+`}`, f.patched[i][len(vsPath)+len(": application/merge-patch+json "):])
	}
	require.NoError(t, m.(Cleaner).Cleanup(ctx, c))
	assert.Equal(t, []string{vsPath}, f.deleted)

	// One of that name it did not create is refused and kept.
	f2 := &policyAPI{objects: map[string][]byte{vsPath: []byte("{}")}, istiodOf: "mb131"}
	c2 := fakeAPIClient(t, f2)
	m2 := newMesh(t, "istio-proxyless", WithRevision("mb131"))
	assert.EqualError(t, m2.(Propagator).SetProbeFault(ctx, c2, "mb", host, false), "istio-proxyless: VirtualService mb/meshbench-propagation exists "+
		"and was not applied by this run: meshbench neither replaces nor removes it; delete it or use another namespace")
	assert.Empty(t, f2.patched)
}

func TestSumPilotXDS(t *testing.T) {
	n, err := sumPilotXDS([]byte("# HELP pilot_xds Number of endpoints connected to this pilot using XDS.\n# TYPE pilot_xds gauge\n" +
		"pilot_xds{version=\"1.30-dev\"} 3\npilot_xds{version=\"1.31-dev\"} 4\npilot_xds_pushes{type=\"cds\"} 99\n"))
	require.NoError(t, err)
	assert.Equal(t, 7.0, n)
	_, err = sumPilotXDS([]byte("pilot_xds_pushes{type=\"cds\"} 99\n"))
	assert.EqualError(t, err, "no pilot_xds in its metrics")
}

// ConnectedProxies sums pilot_xds over the revision's istiod pods, read
// through the API server's pod proxy on istiod's monitoring port.
func TestProxylessConnectedProxies(t *testing.T) {
	pod := func(name, rev string) corev1.Pod {
		return corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system",
			Labels: map[string]string{"app": "istiod", istioRev: rev}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	var selectors []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/istio-system/pods":
			selectors = append(selectors, r.URL.Query().Get("labelSelector"))
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{pod("istiod-a", "mb131"), pod("istiod-b", "mb131")}})
		case "/api/v1/namespaces/istio-system/pods/istiod-a:15014/proxy/metrics":
			fmt.Fprint(w, "pilot_xds{version=\"1.31-dev\"} 5\n")
		case "/api/v1/namespaces/istio-system/pods/istiod-b:15014/proxy/metrics":
			fmt.Fprint(w, "pilot_xds{version=\"1.31-dev\"} 2\n")
		default:
			http.NotFound(w, r)
		}
	})
	c := fakeAPIClient(t, h)
	n, err := newMesh(t, "istio-proxyless", WithRevision("mb131")).(Propagator).ConnectedProxies(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	assert.Equal(t, []string{"app=istiod,istio.io/rev=mb131"}, selectors)
}

func TestProxylessIdleProxyAsksForNextToNothing(t *testing.T) {
	tpl := &corev1.PodTemplateSpec{}
	newMesh(t, "istio-proxyless").(Propagator).IdleProxy(tpl)
	assert.Equal(t, map[string]string{"sidecar.istio.io/proxyCPU": "1m", "sidecar.istio.io/proxyMemory": "16Mi"}, tpl.Annotations)
}
