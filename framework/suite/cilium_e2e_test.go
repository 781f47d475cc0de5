package suite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestCiliumE2E measures Cilium's real data plane, built offline
// (hack/offline/cilium.sh): a 4-node kind cluster with Cilium as its CNI,
// against a baseline on a second cluster with the bridge CNI, interleaved;
// both paths at c=1 and c=8. With IPsec (MESHBENCH_CILIUM_ENCRYPTION=ipsec,
// on a kernel with ESP) it is proven from the nodes' XFRM counters, which
// move in the meshed arm and do not exist in the baseline. Without
// (none, the default: our CI kernel has no ESP transform, see issue 11),
// the meshed arm is Cilium's eBPF datapath, its hops plain by design, and
// no node may hold an IPsec state. The agents' CPU is measured as the
// node-proxy role. Both clusters are deleted whatever happens.
// `make e2e-cilium` runs it.
func TestCiliumE2E(t *testing.T) {
	charts := os.Getenv("MESHBENCH_CILIUM_CHARTS")
	if os.Getenv("MESHBENCH_CILIUM_E2E") == "" || charts == "" {
		t.Skip("set MESHBENCH_CILIUM_E2E=1 and MESHBENCH_CILIUM_CHARTS=<github.com/cilium/cilium module>/install/kubernetes, " +
			"and build the images with hack/offline/cilium.sh; `make e2e` does all three")
	}
	encryption := envOr("MESHBENCH_CILIUM_ENCRYPTION", "none")
	name := fmt.Sprintf("mb-cilium-%d", time.Now().Unix()%100000)
	deleteClusters(t, name, name+"-baseline")
	kindConfig, err := filepath.Abs("testdata/kind-cilium.yaml")
	require.NoError(t, err)
	s, cfg := kindSuite(t, "-kind-cluster", name, "-kind-config", kindConfig, "-mesh", "cilium", "-mesh-install",
		"-cilium-encryption", encryption, "-mesh-charts", charts, "-mesh-registry", "meshbench", "-thresholds", "none")
	setUp(t, s)
	for _, r := range sweepBothPaths(t, s) {
		name := r.Name()
		require.NotNil(t, r.Encryption, "%s: the nodes' XFRM counters were read", name)
		if r.Arm == testbed.Baseline {
			assert.Zero(t, r.Encryption.States, "%s: no IPsec state on the baseline cluster", name)
			assert.Zero(t, r.Encryption.Packets, name)
			continue
		}
		if encryption == "none" {
			assert.Zero(t, r.Encryption.States, "%s: no IPsec state without encryption", name)
			assert.Contains(t, r.Warnings.Of(validity.PlainByDesign).Strings(), "cilium: encryption off (-cilium-encryption=none): the meshed arm is Cilium's eBPF datapath "+
				"as the CNI, every hop plain text by design", name)
		} else {
			assert.Positive(t, r.Encryption.States, "%s: IPsec states on the Cilium nodes", name)
			assert.Greater(t, r.Encryption.Packets, r.Load.Requests, "%s: every request crossed IPsec", name)
		}
		require.NotEmpty(t, r.Edges, name)
		for _, e := range r.Edges {
			assert.Equal(t, encryption != "none", e.Secured, "%s: %s → %s secured (evidence %q)", name, e.Src, e.Dst, e.Evidence)
			if e.Secured {
				assert.Equal(t, "IPsec", e.Mechanism, name)
			}
		}
		agents, ok := r.Resources.Role(measure.RoleNodeProxy)
		assert.True(t, ok && agents.MilliCores > 0, "%s: the cilium agents' CPU measured", name)
	}
	require.NoError(t, s.Finish())
	files, _ := filepath.Glob(filepath.Join(cfg.ResultsDir, "*.json"))
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(data), `"baseline": "kind cluster `+name+`-baseline (bridge CNI, no mesh), measured interleaved`)
}
