package suite_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/target/kind"
)

// TestKindE2E is the end-to-end run on a real 3-node kind cluster built
// offline: both paths at c=1 and c=8, baseline against the bring-your-own
// sidecar mesh, checked for real results and against
// fixtures/thresholds/kind.yaml, and the cluster deleted whatever happens.
// `make e2e` starts dockerd and builds the images it needs.
func TestKindE2E(t *testing.T) {
	if os.Getenv("MESHBENCH_KIND_E2E") == "" {
		t.Skip("set MESHBENCH_KIND_E2E=1 and run `make e2e`, which starts dockerd and builds the node, nginx and loadgen images")
	}
	name := fmt.Sprintf("meshbench-e2e-%d", time.Now().Unix()%100000)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = kind.Down(ctx, name) // also when a step failed before Close
		list, err := kindcluster.NewProvider().List()
		assert.NoError(t, err)
		assert.False(t, slices.Contains(list, name), "cluster %s deleted", name)
	})
	fixture, err := filepath.Abs("../../fixtures/thresholds/kind.yaml")
	require.NoError(t, err)
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	cfg := suite.RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"-target", "kind", "-kind-cluster", name, "-mesh", envOr("MESHBENCH_KIND_MESH", "sidecar"),
		"-concurrency", "1,8", "-duration", "10s", "-warmup", "3s",
		"-nginx-image", envOr("MESHBENCH_NGINX_IMAGE", "meshbench/nginx:1.22.1-9-deb12u9"),
		"-loadgen-image", envOr("MESHBENCH_LOADGEN_IMAGE", "meshbench/mbloadgen:dev"),
		"-results", t.TempDir(), "-thresholds", fixture,
	}))
	require.NoError(t, cfg.Normalize())
	s := suite.NewWithConfig(cfg)
	s.Log = testWriter{t}
	s.Config.Repeats = 1
	sweep(s, target.OneHop, target.TwoHop)
	recs := s.Records()
	require.Len(t, recs, 2*2*2, "2 paths × 2 concurrencies × 2 arms")
	for _, r := range recs {
		name := r.Name()
		assert.True(t, r.Valid(), "%s invalid: %v", name, r.Invalid)
		assert.Zero(t, r.Load.Errors, "%s: errors", name)
		assert.Greater(t, r.Load.Requests, int64(100), name)
		require.NotEmpty(t, r.Edges, name)
		for _, e := range r.Edges {
			assert.Equal(t, r.Arm == target.Meshed, e.Secured, "%s: %s → %s secured (evidence %q)", name, e.Src, e.Dst, e.Evidence)
		}
		want := []measure.Role{measure.RoleLoadgen, measure.RoleApp}
		if r.Arm == target.Meshed {
			want = append(want, measure.RoleSidecar)
		}
		for _, role := range want {
			tot, ok := r.Resources.Role(role)
			assert.True(t, ok && tot.MilliCores > 0, "%s: no CPU measured for %s containers", name, role)
		}
		_, sidecars := r.Resources.Role(measure.RoleSidecar)
		assert.Equal(t, r.Arm == target.Meshed, sidecars, "%s: sidecar containers only in the meshed arm", name)
	}
	err = s.Finish()
	assert.NoError(t, err, "kind fixture")
	files, _ := filepath.Glob(filepath.Join(cfg.ResultsDir, "*.json"))
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	// The workloads sit on different nodes.
	for _, arm := range target.Arms {
		m := regexp.MustCompile(`"nodes\.` + string(arm) + `": "([^"]*)"`).FindSubmatch(data)
		require.NotNil(t, m, "placement of the %s arm recorded", arm)
		nodes := map[string]bool{}
		for _, kv := range regexp.MustCompile(`(backend|frontend|loadgen)=([^ ,;]+)`).FindAllSubmatch(m[1], -1) {
			nodes[string(kv[2])] = true
		}
		assert.GreaterOrEqual(t, len(nodes), 2, "%s arm spread across nodes: %s", arm, m[1])
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
