package meshinstall

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/mesh"
)

// With -mesh-install the candidate revision adds its istiod only: the
// cluster-wide base chart is the reference installation's.
func TestKubeCandidateRevisionCharts(t *testing.T) {
	m, err := mesh.New("istio")
	require.NoError(t, err)
	cm := m.(mesh.Revisioned).AtRevision("canary")
	charts, err := RevisionCharts(cm, mesh.InstallOptions{Version: "1.28.1"})
	require.NoError(t, err)
	require.Len(t, charts, 1)
	assert.Equal(t, "istiod-canary", charts[0].Release)
	assert.Equal(t, "istiod", charts[0].Name)
	assert.Equal(t, "1.28.1", charts[0].Version)
	assert.Equal(t, "canary", charts[0].Values["revision"])
}
