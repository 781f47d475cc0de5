package mesh

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throwaway is a mesh that exists only in this file, as a new mesh's
// adapter would in its own: it embeds none for the Mesh methods.
type throwaway struct{ none }

func (throwaway) Name() string { return "throwaway" }

var throwawayAdapter = Adapter{
	Name: "throwaway", Rank: 99,
	New:     func(config) Mesh { return throwaway{} },
	Proxies: []string{"throwaway-proxy"},
	Marks:   []InjectionMark{{Key: "throwaway.io/inject", Value: "on", Annotation: true}},
}

// A mesh is one registered file: registering it is all it takes to be
// accepted by New, listed by Names (so in -mesh's help and its errors),
// and kept out of every baseline; a second adapter of the same name is
// refused, naming it.
func TestAThrowawayMeshRegistersInItsOwnFile(t *testing.T) {
	require.NoError(t, add(throwawayAdapter))
	t.Cleanup(func() {
		registry.Lock()
		delete(registry.byName, "throwaway")
		registry.Unlock()
	})
	m, err := New("throwaway")
	require.NoError(t, err)
	assert.Equal(t, "throwaway", m.Name())
	assert.Equal(t, []string{"none", "linkerd", "istio", "istio-ambient", "istio-proxyless", "cilium", "sidecar", "throwaway"}, Names())
	assert.Equal(t, []string{"linkerd-proxy", "istio-proxy", "mb-sidecar", "throwaway-proxy"}, knownProxies())
	assert.Contains(t, injectionMarks(), InjectionMark{Key: "throwaway.io/inject", Value: "on", Annotation: true})

	assert.EqualError(t, add(throwawayAdapter), `mesh: adapter "throwaway" registered twice`)
	assert.EqualError(t, add(Adapter{Name: "istio", New: throwawayAdapter.New}), `mesh: adapter "istio" registered twice`)
	assert.EqualError(t, add(Adapter{Name: "x"}), `mesh: adapter "x" has no New`)
	assert.EqualError(t, add(Adapter{New: throwawayAdapter.New}), "mesh: an adapter without a name")
	assert.PanicsWithError(t, `mesh: adapter "throwaway" registered twice`, func() { register(throwawayAdapter) })
}

// The shipped meshes, as registered: the baseline's checks cover each
// one's proxies and injection marks.
func TestShippedMeshesAreRegistered(t *testing.T) {
	assert.Equal(t, []string{"none", "linkerd", "istio", "istio-ambient", "istio-proxyless", "cilium", "sidecar"}, Names())
	assert.Equal(t, []string{"linkerd-proxy", "istio-proxy", "mb-sidecar"}, knownProxies())
	assert.Equal(t, []InjectionMark{
		{Key: "linkerd.io/inject", Value: "enabled", Annotation: true},
		{Key: "istio-injection", Value: "enabled"},
		{Key: "istio.io/rev"},
		{Key: "istio.io/dataplane-mode", Value: "ambient"},
		{Key: sidecarLabel, Value: "enabled"},
	}, injectionMarks())
}
