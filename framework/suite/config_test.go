package suite_test

import (
	"flag"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/suite"
)

func normalize(t *testing.T, args ...string) (*suite.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := suite.RegisterFlags(fs)
	require.NoError(t, fs.Parse(args))
	return cfg, cfg.Normalize()
}

func TestMeshInstallFlags(t *testing.T) {
	dir := t.TempDir()
	cfg, err := normalize(t, "-target", "kind", "-mesh", "istio", "-mesh-install", "-mesh-version", "1.27.3", "-mesh-charts", dir, "-mesh-registry", "r.local/istio")
	require.NoError(t, err)
	assert.True(t, cfg.MeshInstall)
	assert.Equal(t, "1.27.3", cfg.MeshVersion)
	assert.Equal(t, dir, cfg.MeshCharts)
	assert.Equal(t, "r.local/istio", cfg.MeshRegistry)

	_, err = normalize(t, "-target", "kind", "-mesh", "istio", "-mesh-version", "1.27.3", "-mesh-registry", "r.local")
	assert.EqualError(t, err, "-mesh-version=1.27.3: only used with -mesh-install\n-mesh-registry=r.local: only used with -mesh-install")
	_, err = normalize(t, "-mesh-install")
	assert.EqualError(t, err, "-mesh-install: the local target has no mesh to install; use -target=kind or a kubeconfig")
	_, err = normalize(t, "-target", "kind", "-mesh", "istio", "-mesh-install", "-mesh-charts", dir+"/absent")
	assert.EqualError(t, err, "-mesh-charts="+dir+"/absent: not a directory")
	// Before any cluster is made: an unknown mesh, one with nothing to
	// install, a version that is no chart version.
	_, err = normalize(t, "-target", "kind", "-mesh", "consul")
	assert.EqualError(t, err, `-mesh=consul: unknown mesh "consul" (known: none, linkerd, istio, istio-ambient, istio-proxyless, cilium, sidecar)`)
	_, err = normalize(t, "-target", "kind", "-mesh-install")
	assert.EqualError(t, err, "-mesh-install: the sidecar mesh has nothing to install")
	_, err = normalize(t, "-target", "kind", "-mesh", "linkerd", "-mesh-install", "-mesh-version", "stable")
	assert.EqualError(t, err, `-mesh-version=stable: linkerd: install version "stable" is not a chart version (want e.g. 2025.10.1)`)
	// A remote cluster pulls its own images: an offline build of Istio
	// only from the registry that holds it.
	_, err = normalize(t, "-target", "remote", "-mesh", "istio-proxyless", "-mesh-install", "-mesh-version", "1.31-dev.eed52ebb66ad")
	assert.ErrorContains(t, err, `-mesh-version=1.31-dev.eed52ebb66ad: istio-proxyless: install version "1.31-dev.eed52ebb66ad" is an offline build`)
	_, err = normalize(t, "-target", "remote", "-mesh", "istio-proxyless", "-mesh-install", "-mesh-version", "1.31-dev.eed52ebb66ad", "-mesh-registry", "r.local/mb")
	assert.NoError(t, err)
	_, err = normalize(t, "-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-mesh-version", "1.31-dev.eed52ebb66ad")
	assert.NoError(t, err)
}

func TestMeshRevisionAndWaypointFlags(t *testing.T) {
	cfg, err := normalize(t, "-target", "kind", "-mesh", "istio", "-mesh-revision", "canary")
	require.NoError(t, err)
	assert.Equal(t, "canary", cfg.MeshRevision)
	require.Len(t, cfg.MeshOptions(), 2, "the flags' words and the revision")
	cfg, err = normalize(t, "-target", "kind", "-mesh", "istio-ambient", "-waypoint")
	require.NoError(t, err)
	assert.True(t, cfg.Waypoint)
	require.Len(t, cfg.MeshOptions(), 2, "the flags' words and the waypoint")

	_, err = normalize(t, "-target", "kind", "-mesh", "linkerd", "-mesh-revision", "canary")
	assert.EqualError(t, err, `-mesh-revision=canary: only used with -mesh=istio or -mesh=istio-proxyless (got -mesh="linkerd")`)
	_, err = normalize(t, "-target", "kind", "-mesh", "istio", "-mesh-revision", "1.28")
	assert.EqualError(t, err, `-mesh-revision=1.28: not a revision name: must not contain dots`)
	_, err = normalize(t, "-target", "kind", "-mesh", "istio", "-waypoint")
	assert.EqualError(t, err, `-waypoint: only used with -mesh=istio-ambient (got -mesh="istio")`)
}

// A bad price fixture stops the run before the sweep, not after it.
func TestPricesFlag(t *testing.T) {
	cfg, err := normalize(t)
	require.NoError(t, err)
	assert.Empty(t, cfg.Prices, "the embedded example")
	_, err = normalize(t, "-prices", "../../fixtures/prices/example.yaml")
	assert.NoError(t, err)
	_, err = normalize(t, "-prices", "absent.yaml")
	assert.EqualError(t, err, "-prices: prices: open absent.yaml: no such file or directory")
}

// Cilium is on for its whole cluster: on kind it is the CNI, installed
// with the cluster, and on a remote cluster its baseline needs another.
func TestClusterWideMeshFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", "a.yaml")
	_, err := normalize(t, "-target", "kind", "-mesh", "cilium")
	assert.EqualError(t, err, "-mesh=cilium on kind: add -mesh-install: cilium is the cluster's CNI, installed when the cluster is made")
	_, err = normalize(t, "-target", "kind", "-mesh", "cilium", "-mesh-install", "-baseline-kubeconfig", "b.yaml")
	assert.EqualError(t, err, "-baseline-kubeconfig=b.yaml: kind makes the baseline cluster meshbench-baseline itself")
	_, err = normalize(t, "-target", "remote", "-mesh", "cilium")
	assert.EqualError(t, err, "-mesh=cilium: -baseline-kubeconfig is required: cilium: transparent encryption (ipsec) "+
		"is on for every node of the cluster, so the baseline needs a cluster without it")
	_, err = normalize(t, "-target", "remote", "-mesh", "istio", "-baseline-kubeconfig", "b.yaml")
	assert.EqualError(t, err, "-baseline-kubeconfig=b.yaml: only used with a mesh that is on for a whole cluster (-mesh=cilium) on a remote cluster")
	cfg, err := normalize(t, "-target", "remote", "-mesh", "cilium", "-baseline-kubeconfig", "b.yaml")
	require.NoError(t, err)
	assert.Equal(t, "b.yaml", cfg.BaselineKubeconfig)
	_, err = normalize(t, "-target", "kind", "-mesh", "cilium", "-mesh-install", "-cilium-encryption", "none")
	assert.NoError(t, err)
	_, err = normalize(t, "-target", "kind", "-mesh", "istio", "-cilium-encryption", "none")
	assert.EqualError(t, err, `-cilium-encryption=none: only used with -mesh=cilium (got -mesh="istio")`)
	_, err = normalize(t, "-target", "kind", "-mesh", "cilium", "-mesh-install", "-cilium-encryption", "tls")
	assert.ErrorContains(t, err, "-cilium-encryption=tls: want one of ipsec, wireguard, none")
}

// -candidate=rev=NAME is an Istio canary upgrade on a cluster: a revision
// name, with -mesh=istio only, refused before anything runs (the local
// target, ambient, any other mesh, a bad name), naming the flag.
func TestCandidateRevisionFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-target", "kind", "-mesh", "istio", "-candidate", "rev=canary"},
		{"-target", "kind", "-mesh", "istio", "-mesh-install", "-mesh-revision", "stable", "-candidate", "rev=canary"},
		{"-target", "kind", "-mesh", "istio", "-mesh-revision", "canary", "-candidate", "rev=canary"},
	} {
		cfg, err := normalize(t, args...)
		require.NoError(t, err, args)
		assert.Equal(t, "rev=canary", cfg.Candidate)
		assert.Equal(t, "kind.yaml", filepath.Base(cfg.Gate), args)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-target", "kind", "-mesh", "istio-ambient", "-candidate", "rev=canary"},
			"-candidate=rev=canary: Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side; " +
				"gate an ambient upgrade against a stored run with -reference (a run before the upgrade)"},
		{[]string{"-target", "kind", "-mesh", "linkerd", "-candidate", "rev=canary"},
			"-candidate=rev=canary: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=linkerd (for another mesh, gate against a stored run with -reference)"},
		{[]string{"-target", "kind", "-candidate", "rev=canary"},
			"-candidate=rev=canary: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=sidecar (for another mesh, gate against a stored run with -reference)"},
		{[]string{"-target", "kind", "-mesh", "istio", "-candidate", "rev=Canary"},
			`-candidate=rev=Canary: "Canary" is not a revision name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', ` +
				`and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{[]string{"-target", "kind", "-mesh", "istio", "-candidate", "rev="},
			"-candidate=rev=: no revision name (want e.g. rev=canary, the revision istioctl install --revision=canary installs)"},
		{[]string{"-candidate", "rev=canary"},
			"-candidate=rev=canary: an Istio revision runs on a cluster only (-target=kind or -target=remote, with -mesh=istio)"},
	} {
		_, err := normalize(t, tc.args...)
		assert.EqualError(t, err, tc.want, tc.args)
	}
}

// On a cluster -candidate is a sidecar image and/or configuration of the
// bring-your-own sidecar mesh; any other mesh, or something that is no
// image, is refused before a cluster is made, naming the flag.
func TestCandidateFlagsOnClusters(t *testing.T) {
	for _, spec := range []string{"+no-keepalive", "meshbench/nginx:next", "registry.local:5000/nginx:1.27+no-keepalive"} {
		cfg, err := normalize(t, "-target", "kind", "-candidate", spec)
		require.NoError(t, err, spec)
		assert.Equal(t, "sidecar", cfg.Mesh)
		assert.Equal(t, "kind.yaml", filepath.Base(cfg.Gate), "%s: the kind gate fixture by default", spec)
	}
	_, err := normalize(t, "-target", "kind", "-mesh", "istio", "-candidate", "nginx:1.27")
	assert.EqualError(t, err, "-candidate=nginx:1.27: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=istio "+
		"(with -mesh=istio, gate another revision with -candidate=rev=NAME; for another mesh, gate against a stored run with -reference)")
	t.Setenv("KUBECONFIG", "a.yaml")
	_, err = normalize(t, "-mesh", "linkerd", "-candidate", "+no-keepalive")
	assert.ErrorContains(t, err, "-candidate=+no-keepalive: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar)")
	_, err = normalize(t, "-target", "kind", "-candidate", "caddy@v2.11.9")
	assert.ErrorContains(t, err, `-candidate=caddy@v2.11.9: "caddy@v2.11.9" is not an image reference`)
	_, err = normalize(t, "-target", "kind", "-candidate", "nginx:1.27+keepalive-off")
	assert.ErrorContains(t, err, `-candidate=nginx:1.27+keepalive-off: "nginx:1.27+keepalive-off" is not an image reference`)
}

// -gate-fraction and -budget: a fraction in (0, 1) and a time ≥ 0, each
// refused otherwise with the flag's name.
func TestGateFractionAndBudgetFlags(t *testing.T) {
	cfg, err := normalize(t, "-gate-fraction", "0.2", "-budget", "5m")
	require.NoError(t, err)
	assert.Equal(t, 0.2, cfg.GateFraction)
	assert.Equal(t, "5m0s", cfg.Budget.String())
	for args, want := range map[[2]string]string{
		{"-gate-fraction", "1"}:    "-gate-fraction=1: a fraction of the capacity, in (0, 1)",
		{"-gate-fraction", "-0.1"}: "-gate-fraction=-0.1: a fraction of the capacity, in (0, 1)",
		{"-budget", "-1s"}:         "-budget=-1s: must be >= 0 (0: no budget but go test's -timeout)",
	} {
		_, err := normalize(t, args[0], args[1])
		assert.EqualError(t, err, want)
	}
}

func TestNodeCPUFlags(t *testing.T) {
	t.Setenv("MESHBENCH_NODECPU_IMAGE", "")
	cfg, err := normalize(t, "-target", "kind")
	require.NoError(t, err)
	assert.Equal(t, "kubelet", cfg.NodeCPU)
	assert.Equal(t, "meshbench/mbnodecpu:dev", cfg.NodeCPUImage)

	t.Setenv("MESHBENCH_NODECPU_IMAGE", "registry.corp/mbnodecpu:v1")
	cfg, err = normalize(t, "-target", "kind", "-node-cpu", "agent")
	require.NoError(t, err)
	assert.Equal(t, "agent", cfg.NodeCPU)
	assert.Equal(t, "registry.corp/mbnodecpu:v1", cfg.NodeCPUImage)

	_, err = normalize(t, "-target", "kind", "-node-cpu", "cadvisor")
	assert.EqualError(t, err, "-node-cpu=cadvisor: want kubelet or agent")
}

// The control plane is measured only on a cluster, by a mesh that can
// (mesh.Propagator), and the second pod count only with changes.
func TestControlPlaneFlags(t *testing.T) {
	cfg, err := normalize(t, "-target", "kind", "-mesh", "istio-proxyless", "-control-plane-changes", "10", "-control-plane-pods", "8")
	require.NoError(t, err)
	assert.Equal(t, 10, cfg.ControlPlaneChanges)
	assert.Equal(t, 8, cfg.ControlPlanePods)
	for args, want := range map[[3]string]string{
		{"kind", "istio", "10"}:           "-control-plane-changes=10: -mesh=istio cannot change its routing for a probe and count its proxies; only -mesh=istio-proxyless measures its control plane",
		{"local", "", "10"}:               "-control-plane-changes=10: the local target has no control plane; use -target=kind or a kubeconfig with -mesh=istio-proxyless",
		{"kind", "istio-proxyless", "-1"}: "-control-plane-changes=-1: want 0 or more",
	} {
		a := []string{"-target", args[0], "-control-plane-changes", args[2]}
		if args[1] != "" {
			a = append(a, "-mesh", args[1])
		}
		_, err := normalize(t, a...)
		assert.EqualError(t, err, want, "%v", args)
	}
	_, err = normalize(t, "-target", "kind", "-mesh", "istio-proxyless", "-control-plane-changes", "4", "-candidate", "rev=mb131c", "-gate-mode", "duet")
	assert.EqualError(t, err, "-control-plane-changes=4: a duet runs both arms at once, so each arm's control plane would be timed beside the other's changes; use -gate-mode=sequential")
	_, err = normalize(t, "-target", "kind", "-mesh", "istio-proxyless", "-control-plane-pods", "8")
	assert.EqualError(t, err, "-control-plane-pods=8: only used with -control-plane-changes")
}
