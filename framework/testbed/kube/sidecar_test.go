package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestSidecarEdges(t *testing.T) {
	peer := func(src, dst string, n int64) mesh.Edge {
		return mesh.Edge{Src: "mb/" + src, Dst: "mb/" + dst, Peer: src, Secured: true, Requests: n}
	}
	before := []mesh.Edge{peer("loadgen", "backend", 500), peer("loadgen", "frontend", 40), peer("frontend", "backend", 40)}
	cnt := func(be, fe int64) counted {
		return counted{
			Delta:     map[manifests.Component]int64{manifests.Backend: be + 1, manifests.Frontend: fe + 1},
			Pods:      map[manifests.Component]int{manifests.Backend: 1, manifests.Frontend: 1},
			Allowance: map[manifests.Component]int64{manifests.Backend: 3, manifests.Frontend: 3},
		}
	}

	t.Run("two hops, both verified", func(t *testing.T) {
		after := []mesh.Edge{peer("loadgen", "backend", 500), peer("loadgen", "frontend", 1040), peer("frontend", "backend", 1040)}
		es := sidecarEdges(testbed.TwoHop, cnt(1002, 1001), before, after, nil, false)
		require.Len(t, es, 2)
		assert.Equal(t, testbed.Edge{Src: "loadgen", Dst: "frontend", Peer: "loadgen", Secured: true, Requests: 1000,
			Evidence: "frontend's sidecar verified the client certificate CN=loadgen"}, es[0])
		assert.Equal(t, int64(1000), es[1].Requests)
		assert.True(t, es[1].Secured)
		assert.Empty(t, testbed.CheckEdges(testbed.Meshed, testbed.TwoHop, es, 1000))
	})

	t.Run("requests that bypassed the sidecar", func(t *testing.T) {
		after := []mesh.Edge{peer("loadgen", "backend", 600), peer("loadgen", "frontend", 40), peer("frontend", "backend", 40)}
		es := sidecarEdges(testbed.OneHop, cnt(1100, 0), before, after, nil, false)
		require.Len(t, es, 2)
		assert.Equal(t, int64(100), es[0].Requests)
		assert.Equal(t, testbed.Edge{Src: "unknown", Dst: "backend", Requests: 997, Evidence: "served by the app without its sidecar's verification"}, es[1])
		why := testbed.CheckEdges(testbed.Meshed, testbed.OneHop, es, 1000)
		assert.Contains(t, why[len(why)-1].Detail, "unknown → backend (997 requests")
	})

	t.Run("a stray verified caller", func(t *testing.T) {
		after := []mesh.Edge{peer("loadgen", "backend", 1500), peer("loadgen", "frontend", 40), peer("frontend", "backend", 50)}
		es := sidecarEdges(testbed.OneHop, cnt(1010, 0), before, after, nil, false)
		require.Len(t, es, 2)
		assert.Equal(t, "frontend", es[1].Src)
		assert.True(t, es[1].Secured)
		assert.NotEmpty(t, testbed.CheckEdges(testbed.Meshed, testbed.OneHop, es, 1000))
	})

	t.Run("out of the mesh: the first hop in plain text", func(t *testing.T) {
		after := []mesh.Edge{peer("loadgen", "backend", 500), peer("loadgen", "frontend", 40), peer("frontend", "backend", 1040)}
		es := sidecarEdges(testbed.TwoHop, cnt(1002, 1001), before, after, map[string]int64{"frontend": 1000}, true)
		require.Len(t, es, 2)
		assert.Equal(t, testbed.Edge{Src: "loadgen", Dst: "frontend", Requests: 1000,
			Evidence: "frontend's sidecar took 1000 requests in plain text on its permissive port 8081"}, es[0])
		assert.True(t, es[1].Secured)
		assert.Empty(t, checkEdges(testbed.Meshed, testbed.TwoHop, es, 1000, true))
	})

	t.Run("plain text in the mesh", func(t *testing.T) {
		after := []mesh.Edge{peer("loadgen", "backend", 1500), peer("loadgen", "frontend", 40), peer("frontend", "backend", 40)}
		es := sidecarEdges(testbed.OneHop, cnt(1200, 0), before, after, map[string]int64{"backend": 200}, false)
		require.Len(t, es, 2)
		assert.Equal(t, testbed.Edge{Src: "unknown", Dst: "backend", Requests: 200, Evidence: "plain text on backend's sidecar's permissive port"}, es[1])
		assert.Equal(t, validity.Reasons{{Kind: validity.UnexpectedRoute, Detail: "requests took an unexpected route: unknown → backend (200 requests, verified peer \"\")"}},
			checkEdges(testbed.Meshed, testbed.OneHop, es, 1000, false))
	})

	t.Run("nothing verified", func(t *testing.T) {
		es := sidecarEdges(testbed.OneHop, cnt(1000, 0), before, before, nil, false)
		require.Len(t, es, 2)
		assert.False(t, es[0].Secured)
		assert.Zero(t, es[0].Requests)
		assert.NotEmpty(t, testbed.CheckEdges(testbed.Meshed, testbed.OneHop, es, 1000))
	})
}
