package kubelet

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// apiServer stands in for the API server's node proxy: it serves the
// recorded kubelet payloads for node kind-worker.
func apiServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, kubernetes.Interface) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return srv, c
}

func serveFixtures(t *testing.T) http.HandlerFunc {
	res, err := os.ReadFile(filepath.Join("testdata", "resource_kind_v1.21.txt"))
	require.NoError(t, err)
	cad, err := os.ReadFile(filepath.Join("testdata", "cadvisor_throttling.txt"))
	require.NoError(t, err)
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes/kind-worker/proxy/metrics/resource":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(res)
		case "/api/v1/nodes/kind-worker/proxy/metrics/cadvisor":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(cad)
		default:
			http.NotFound(w, r)
		}
	}
}

func TestFetch(t *testing.T) {
	_, c := apiServer(t, serveFixtures(t))
	before := time.Now()
	s, err := Fetch(context.Background(), c, "kind-worker")
	require.NoError(t, err)
	assert.Equal(t, "kind-worker", s.Node)
	assert.False(t, s.ReadAt.Before(before.Truncate(time.Second)))
	assert.Len(t, s.Containers, 70)
	assert.Equal(t, 357.35491, s.NodeCPUSeconds.Value)
	assert.Equal(t, 4.710169, s.Containers[coredns].CPUSeconds.Value)
}

func TestFetchForbidden(t *testing.T) {
	_, c := apiServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"nodes \"kind-worker\" is forbidden: User \"system:serviceaccount:mb:loadgen\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope",` +
			`"reason":"Forbidden","details":{"name":"kind-worker","kind":"nodes"},"code":403}`))
	})
	_, err := Fetch(context.Background(), c, "kind-worker")
	var rbac *RBACError
	require.True(t, errors.As(err, &rbac), "got %v", err)
	assert.Contains(t, err.Error(), "needs RBAC `get` on `nodes/proxy`")
	assert.Contains(t, err.Error(), `cannot get resource "nodes/proxy"`)
}

func TestFetchKubeletUnreachable(t *testing.T) {
	_, c := apiServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error trying to reach service: dial tcp 172.18.0.3:10250: connect: connection refused","reason":"ServiceUnavailable","code":503}`))
	})
	_, err := Fetch(context.Background(), c, "kind-worker")
	var un *UnreachableError
	require.True(t, errors.As(err, &un), "got %v", err)
	assert.True(t, un.Kubelet)
	assert.Contains(t, err.Error(), "could not reach the kubelet on node kind-worker")
}

func TestFetchAPIServerUnreachable(t *testing.T) {
	srv, c := apiServer(t, serveFixtures(t))
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Fetch(ctx, c, "kind-worker")
	var un *UnreachableError
	require.True(t, errors.As(err, &un), "got %v", err)
	assert.False(t, un.Kubelet)
	assert.Contains(t, err.Error(), "the API server at "+srv.URL+" is unreachable")
}

func TestFetchNeedsRealClient(t *testing.T) {
	_, err := Fetch(context.Background(), fake.NewSimpleClientset(), "n")
	assert.ErrorContains(t, err, "fake clientset")
}
