package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestTargetPlacements: a target set up in the mesh with one loadgen per
// arm serves, when scenarios ask, the loadgen out of the mesh (its
// namespace made on first use) and more shards in the mesh (every arm
// scaled alike), and a later run with fewer shards leaves the others idle.
func TestTargetPlacements(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	require.Len(t, tg.Namespaces(), 2)
	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}

	out := testbed.Workload{Path: testbed.OneHop, Placement: testbed.OutOfMesh}
	require.NoError(t, tg.Supports(out, nil))
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: out, Window: o})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	nss := tg.Namespaces()
	require.Len(t, nss, 3, "the out-of-mesh loadgen's namespace, made on first use")
	assert.Equal(t, tg.ns("loadgen"), nss[2])
	assert.Equal(t, validity.Reasons{{Kind: validity.LoadgenOutOfMesh, Detail: "loadgen out of mesh: the loadgen → backend hop is plain text by design"}}, run.Warnings)
	for _, u := range run.Resources.Usage {
		if u.Role == measure.RoleLoadgen {
			assert.Equal(t, nss[2]+"/loadgen-0/loadgen", u.Name)
		}
	}
	assert.False(t, run.Edges[0].Secured)

	four := testbed.Workload{Path: testbed.OneHop, Loadgens: 2}
	for _, arm := range testbed.Arms {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: four, Window: o})
		require.NoError(t, err)
		assert.Empty(t, run.Invalid, arm)
		require.Len(t, run.Shards, 2, arm)
		assert.Equal(t, testbed.InMesh, run.Workload.Placement)
	}
	for _, a := range tg.arms {
		d, err := fc.c.AppsV1().Deployments(a.ns).Get(ctx, "loadgen", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(2), *d.Spec.Replicas, "%s scaled with the other arm", a.name)
	}

	run, err = tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	assert.Empty(t, run.Shards)
	var loadgens []string
	for _, u := range run.Resources.Usage {
		if u.Role == measure.RoleLoadgen || u.Role == measure.RoleSidecar && strings.Contains(u.Name, "/loadgen-") {
			loadgens = append(loadgens, u.Name)
		}
	}
	meshed := tg.arms[testbed.Meshed].ns
	assert.Equal(t, []string{meshed + "/loadgen-0/loadgen", meshed + "/loadgen-0/mb-sidecar"}, loadgens, "the idle loadgen is no role's")
	assert.Equal(t, 1, tg.replicas[nss[2]])
	assert.Equal(t, 2, tg.replicas[meshed])
	assert.Empty(t, run.Warnings, "every arm placed alike")

	// The meshed backend moved to the other node: its runs say so.
	p, err := fc.c.CoreV1().Pods(meshed).Get(ctx, "backend-0", metav1.GetOptions{})
	require.NoError(t, err)
	p.Spec.NodeName = "meshbench-worker2"
	_, err = fc.c.CoreV1().Pods(meshed).Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	run, err = tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid, "a warning, not a reason to drop the run")
	assert.Equal(t, []string{"placed apart from the baseline arm: backend on meshbench-worker2, the baseline arm's on meshbench-worker; " +
		"ratios to that arm measure the placement as well as the arm (placement is only preferred to match: give the cluster a node per workload)"},
		run.Warnings.Of(validity.PlacedApart).Strings())
}

// TestWithIdleLoadgens: the loadgen pods a run does not drive are
// "other", everything else keeps its role.
func TestWithIdleLoadgens(t *testing.T) {
	pods := []corev1.Pod{*runPod("ns", "loadgen-0", "loadgen", "r"), *runPod("ns", "loadgen-1", "loadgen", "r"), *runPod("ns", "backend-0", "backend", "r")}
	base := func(ns, pod, container string) measure.Role { return measure.RoleApp }
	roleOf := withIdleLoadgens(base, pods, pods[:1])
	assert.Equal(t, measure.RoleApp, roleOf("ns", "loadgen-0", "loadgen"))
	assert.Equal(t, measure.Role("other"), roleOf("ns", "loadgen-1", "mb-sidecar"))
	assert.Equal(t, measure.RoleApp, roleOf("ns", "backend-0", "backend"), "not a loadgen pod")
	assert.Equal(t, measure.RoleApp, withIdleLoadgens(base, pods, pods[:2])("ns", "loadgen-1", "loadgen"))
}
