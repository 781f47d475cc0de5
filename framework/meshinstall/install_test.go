package meshinstall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
)

func TestFindChart(t *testing.T) {
	dir := filepath.Join("testdata", "charts")
	got, err := findChart(dir, "mbtest-mesh", "0.1.0", nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "mbtest-mesh"), got)
	// By the name in Chart.yaml, not the directory's, deeper down.
	got, err = findChart(dir, "deep-chart", "2.0.0", nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "nested", "deeper"), got)

	_, err = findChart(dir, "istiod", "1.28.0", nil)
	assert.EqualError(t, err, "MeshCharts testdata/charts: no chart istiod (neither istiod-1.28.0.tgz nor a directory whose Chart.yaml says name: istiod)")
	_, err = findChart(filepath.Join(dir, "absent"), "istiod", "1.28.0", nil)
	assert.ErrorContains(t, err, "MeshCharts testdata/charts/absent: stat testdata/charts/absent: no such file or directory")
	flag := func(s testbed.Setting) string { return "-" + strings.ToLower(s.Name) }
	_, err = findChart(dir, "istiod", "1.28.0", flag)
	assert.EqualError(t, err, "-meshcharts testdata/charts: no chart istiod (neither istiod-1.28.0.tgz nor a directory whose Chart.yaml says name: istiod)",
		"the setting in the caller's words")

	// An archive of the wanted version (what `helm pull` writes) wins.
	tmp := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "base"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "base", "Chart.yaml"), []byte("name: base\nversion: 1.0.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "base-1.28.0.tgz"), nil, 0o644))
	got, err = findChart(tmp, "base", "1.28.0", nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "base-1.28.0.tgz"), got)
	got, err = findChart(tmp, "base", "1.27.0", nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tmp, "base"), got)
}

func TestReleaseWorkloads(t *testing.T) {
	manifest := `---
# Source: istiod/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
---
# Source: istiod/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: istiod
  namespace: istio-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ztunnel
---
apiVersion: extensions/v1beta1
kind: DaemonSet
metadata:
  name: ancient
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: store
  namespace: other
`
	ws, err := releaseWorkloads(manifest, "mesh")
	require.NoError(t, err)
	assert.Equal(t, []workload{
		{Kind: "Deployment", Namespace: "istio-system", Name: "istiod"},
		{Kind: "DaemonSet", Namespace: "mesh", Name: "ztunnel"},
		{Kind: "StatefulSet", Namespace: "other", Name: "store"},
	}, ws)
	objs, err := manifestObjects(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: peerauthentications.security.istio.io
  annotations:
    helm.sh/resource-policy: keep
---
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: istio-reader
  namespace: istio-system
`)
	require.NoError(t, err)
	assert.Equal(t, []object{
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "peerauthentications.security.istio.io", Keep: true},
		{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "istio-system", Name: "istio-reader"},
	}, objs)
	assert.Equal(t, "CustomResourceDefinition peerauthentications.security.istio.io", objs[0].String())
	assert.Equal(t, "ServiceAccount istio-system/istio-reader", objs[1].String())
	_, err = releaseWorkloads("kind: [", "mesh")
	assert.ErrorContains(t, err, "read release manifest")
}
