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
	charts, err := RevisionCharts(cm, mesh.InstallOptions{Version: "1.28.1"}, "")
	require.NoError(t, err)
	require.Len(t, charts, 1)
	assert.Equal(t, "istiod-canary", charts[0].Release)
	assert.Equal(t, "istiod", charts[0].Name)
	assert.Equal(t, "1.28.1", charts[0].Version)
	assert.Equal(t, "canary", charts[0].Values["revision"])
	assert.Empty(t, charts[0].Dir, "read where the installer reads the reference's")
}

// A canary of another version (Istio 1.30 to 1.31-dev, built offline)
// installs its istiod from its own charts and with its own images.
func TestKubeCandidateRevisionOfAnotherVersion(t *testing.T) {
	m, err := mesh.New("istio-proxyless")
	require.NoError(t, err)
	cm := m.(mesh.Revisioned).AtRevision("mb131")
	charts, err := RevisionCharts(cm, mesh.InstallOptions{Version: "1.31-dev.eed52ebb66ad"}, "/charts/131")
	require.NoError(t, err)
	require.Len(t, charts, 1)
	assert.Equal(t, "istiod-mb131", charts[0].Release)
	assert.Equal(t, "/charts/131", charts[0].Dir)
	assert.Equal(t, "meshbench/pilot:1.31-dev.eed52ebb66ad", charts[0].Values["image"])
	assert.Equal(t, "mb131", charts[0].Values["revision"])
}
