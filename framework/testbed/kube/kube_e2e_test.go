package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kube"
)

// TestKubeTargetOnCluster runs only with MESHBENCH_KUBE_E2E set: to the
// kubeconfig of a running cluster, where it creates the run's namespaces and
// deletes them again without touching the cluster itself; or to "kind",
// where it creates its own kind cluster from the repository's
// kind-config.yaml (framework/testbed/kind, offline node image), loads the
// local images into it, and deletes it at the end. The images come from
// MESHBENCH_NGINX_IMAGE and MESHBENCH_LOADGEN_IMAGE (default: the public
// ones; with "kind", local Docker images are required), the mesh from
// MESHBENCH_MESH (default none), the loadgen placement from
// MESHBENCH_PLACEMENT. It ends by checking that a crash-looping loadgen
// stops New within seconds.
func TestKubeTargetOnCluster(t *testing.T) {
	where := os.Getenv("MESHBENCH_KUBE_E2E")
	if where == "" {
		t.Skip("set MESHBENCH_KUBE_E2E to a kubeconfig, or to kind, to run against a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	nginx, lg := os.Getenv("MESHBENCH_NGINX_IMAGE"), os.Getenv("MESHBENCH_LOADGEN_IMAGE")
	cfg := kube.E2ECluster(ctx, t, where, filepath.Join("..", "..", "..", "kind-config.yaml"), "meshbench-kube", nginx, lg)
	m, err := mesh.New(orEnv("MESHBENCH_MESH", "none"))
	require.NoError(t, err)
	placement, err := kube.ParsePlacement(os.Getenv("MESHBENCH_PLACEMENT"))
	require.NoError(t, err)

	start := time.Now()
	tg, err := kube.New(ctx, cfg, kube.Options{
		Name:      "remote",
		Mesh:      m,
		Placement: placement,
		Loadgens:  2,
		Logf:      t.Logf,
		Workloads: manifests.Params{
			Images:       manifests.Images{Nginx: nginx, Loadgen: lg},
			ResponseSize: 1024,
		},
	})
	require.NoError(t, err)
	nss := tg.Namespaces()
	t.Logf("up in %v: namespaces %s", time.Since(start).Round(time.Second), strings.Join(nss, ", "))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		assert.NoError(t, tg.Close(ctx))
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		for _, ns := range nss {
			_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "namespace %s is gone", ns)
		}
	})
	env := tg.Environment()
	t.Logf("environment: %+v", env)

	var conc []int
	for _, f := range strings.Split(orEnv("MESHBENCH_CONCURRENCY", "4"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, "MESHBENCH_CONCURRENCY")
		conc = append(conc, n)
	}
	for _, c := range conc {
		o := testbed.Window{Concurrency: c, Duration: 5 * time.Second, Warmup: 2 * time.Second}
		for _, arm := range testbed.Arms {
			for _, p := range []testbed.Path{testbed.OneHop, testbed.TwoHop} {
				run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: p}, Window: o})
				require.NoError(t, err, "%s %s c=%d", arm, p, c)
				var b strings.Builder
				fmt.Fprintf(&b, "c=%d %s %s: %.0f req/s, p50 %.3f ms, p99 %.3f ms, %d requests over %d shards\n", c, arm, p,
					run.Load.AchievedQPS, run.Load.Percentile(50)*1e3, run.Load.Percentile(99)*1e3, run.Load.Requests, len(run.Shards))
				testbed.PrintEdges(&b, run.Edges)
				for _, r := range run.Resources.ByRole() {
					fmt.Fprintf(&b, "  %-13s %6.0fm  %d containers, max memory %d MiB\n", r.Role, r.MilliCores, r.Count, r.MaxLoadRSS>>20)
				}
				for n, u := range run.Resources.NodeUtilisation {
					fmt.Fprintf(&b, "  node %s at %.0f%%\n", n, u)
				}
				for _, w := range run.Warnings {
					fmt.Fprintf(&b, "  warning: %s\n", w)
				}
				for _, w := range run.Invalid {
					fmt.Fprintf(&b, "  invalid: %s\n", w)
				}
				t.Log(b.String())
				assert.Positive(t, run.Load.Requests)
				assert.Empty(t, run.Load.Invalid)
				for _, e := range run.Edges {
					if e.Src != "unknown" {
						assert.GreaterOrEqual(t, e.Requests, run.Load.Requests, "%+v", e)
					}
				}
				if m.Name() == "sidecar" {
					// The harness-wired sidecar: every hop of the meshed arm
					// verified by mTLS, none in the baseline, the sidecars'
					// CPU measured, and nothing invalid.
					assert.Empty(t, run.Invalid, "%s %s c=%d", arm, p, c)
					for _, e := range run.Edges {
						assert.Equal(t, arm == testbed.Meshed, e.Secured, "%s %s c=%d: %+v", arm, p, c, e)
					}
					sidecarCPU := false
					for _, r := range run.Resources.ByRole() {
						sidecarCPU = sidecarCPU || r.Role == measure.RoleSidecar && r.MilliCores > 0
					}
					assert.Equal(t, arm == testbed.Meshed, sidecarCPU, "%s %s c=%d: sidecar CPU", arm, p, c)
				}
			}
		}
	}

	// The loadgen run from the nginx image: nginx rejects mbloadgen's flags
	// and crash-loops. New stops within a minute or two with the pod's
	// reason, events and log lines, and deletes its namespaces.
	t.Run("fails fast on a crash-looping loadgen", func(t *testing.T) {
		start := time.Now()
		_, err := kube.New(ctx, cfg, kube.Options{Logf: t.Logf,
			Workloads: manifests.Params{Images: manifests.Images{Nginx: nginx, Loadgen: orEnv("MESHBENCH_NGINX_IMAGE", manifests.DefaultImages.Nginx)}}})
		var pe *kube.PodError
		require.ErrorAs(t, err, &pe)
		t.Logf("failed after %v:\n%v", time.Since(start).Round(time.Second), err)
		assert.Less(t, time.Since(start), 2*time.Minute)
		assert.Equal(t, "loadgen", pe.Container)
		assert.NotEmpty(t, pe.Events)
		assert.NotEmpty(t, pe.Logs)
	})
}

func orEnv(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}
