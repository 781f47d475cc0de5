package local

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/workload"
)

// What a client sends reaches every loadgen shard: the workload's request
// size and protocol, and its own headers beside the source header the
// path proof reads; the workload's headers are not changed.
func TestShardsKeepWhatTheClientSends(t *testing.T) {
	w := testbed.Workload{Path: testbed.OneHop, Protocol: "http1", RequestSize: 4096, Loadgens: 2,
		Headers: map[string]string{"x-tenant": "a", "authorization": "Bearer t"}}
	spec := testbed.Spec{Arm: testbed.Meshed, Workload: w, Window: testbed.Window{Concurrency: 4}}
	ar := &arm{urls: map[testbed.Path][]string{testbed.OneHop: {"http://127.0.0.1:1/", "http://127.0.0.1:2/"}}}
	shards := (&Target{}).shards(spec, w, ar)
	require.Len(t, shards, 2)
	for i, o := range shards {
		assert.Equal(t, 4096, o.RequestSize)
		assert.Equal(t, load.Protocol("http1"), o.Protocol)
		assert.Equal(t, map[string]string{"x-tenant": "a", "authorization": "Bearer t", workload.SourceHeader: "loadgen"}, o.Headers)
		assert.Equal(t, ar.urls[testbed.OneHop][i], o.URL)
	}
	assert.Equal(t, map[string]string{"x-tenant": "a", "authorization": "Bearer t"}, spec.Workload.Headers, "the spec's own map is not written to")
}

// Local sidecars register by name, once: a second proxy of the same name
// is refused, naming it, and registering it panics at start.
func TestSidecarRegistryRefusesDuplicates(t *testing.T) {
	assert.Equal(t, []string{"caddy", "envoy", "haproxy", "nginx"}, SidecarNames())
	mk := func() Sidecar { return caddy{} }
	assert.EqualError(t, addSidecar("caddy", mk), `local: sidecar "caddy" registered twice`)
	assert.PanicsWithError(t, `local: sidecar "nginx" registered twice`, func() { registerSidecar("nginx", mk) })
	require.NoError(t, addSidecar("throwaway", mk))
	t.Cleanup(func() { delete(sidecars, "throwaway") })
	s, err := lookSidecar("throwaway")
	require.NoError(t, err)
	assert.Equal(t, caddy{}, s)
}
