package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A candidate is refused before anything runs where the mesh cannot run
// it beside its reference, naming no flag (the suite names them).
func TestKubeCandidateRefusedBeforeAnythingRuns(t *testing.T) {
	newMesh := func(name string, opts ...mesh.Option) mesh.Mesh {
		m, err := mesh.New(name, opts...)
		require.NoError(t, err)
		return m
	}
	noKeepAlive := []arms.Variant{arms.NoKeepAlive}
	noEvidence := func(context.Context, kubernetes.Interface, string) ([]mesh.Edge, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		m    mesh.Mesh
		c    arms.Spec
		want CandidateError
		msg  string
	}{
		{"istio", newMesh("istio"), arms.Spec{Image: "nginx:1.27"}, CandidateError{Mesh: "istio", Why: NotSidecarMesh, Revisioned: true},
			"candidate nginx:1.27: on a cluster only the bring-your-own sidecar mesh runs a candidate sidecar beside the reference, not istio; it can gate another revision"},
		{"ambient revision", newMesh("istio-ambient"), arms.Spec{Revision: "canary"}, CandidateError{Mesh: "istio-ambient", Why: AmbientRevision},
			"candidate rev=canary: Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side"},
		{"ambient waypoint revision", newMesh("istio-ambient", mesh.WithWaypoint(mesh.DefaultWaypoint)), arms.Spec{Revision: "canary"}, CandidateError{Mesh: "istio-ambient", Why: AmbientRevision},
			"candidate rev=canary: Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side"},
		{"linkerd revision", newMesh("linkerd"), arms.Spec{Revision: "canary"}, CandidateError{Mesh: "linkerd", Why: NotRevisioned},
			"candidate rev=canary: a revision is an Istio control plane (istio.io/rev), only with the istio mesh, not linkerd"},
		{"sidecar revision", newMesh("sidecar"), arms.Spec{Revision: "canary"}, CandidateError{Mesh: "sidecar", Why: NotRevisioned},
			"candidate rev=canary: a revision is an Istio control plane (istio.io/rev), only with the istio mesh, not sidecar"},
		{"none", newMesh("none"), arms.Spec{Variants: noKeepAlive}, CandidateError{Mesh: "none", Why: NotSidecarMesh},
			"candidate +no-keepalive: on a cluster only the bring-your-own sidecar mesh runs a candidate sidecar beside the reference, not none"},
		{"own wiring", newMesh("sidecar", mesh.WithMTLSEvidence(noEvidence)), arms.Spec{Variants: noKeepAlive}, CandidateError{Mesh: "sidecar", Why: VariantOwnWiring},
			"candidate +no-keepalive: +no-keepalive is a variant of the nginx configuration meshbench renders, and this sidecar brings its own wiring"},
		{"own arguments", newMesh("sidecar", mesh.WithSidecar("proxy", "envoy:v1", "-c", "/etc/envoy.yaml")), arms.Spec{Image: "envoy:v2", Variants: noKeepAlive},
			CandidateError{Mesh: "sidecar", Why: VariantOwnArgs, Args: []string{"-c", "/etc/envoy.yaml"}},
			`candidate envoy:v2+no-keepalive: +no-keepalive is a variant of the nginx configuration meshbench renders, which the sidecar's own arguments ["-c" "/etc/envoy.yaml"] replace`},
	} {
		c := fake.NewClientset()
		cand := tc.c
		_, err := newTarget(c, Options{Mesh: tc.m, Candidate: &cand})
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
		assert.Empty(t, c.Actions(), "%s: nothing asked of the cluster", tc.name)
		err = CheckCandidate(tc.m, cand)
		assert.EqualError(t, err, tc.msg, tc.name)
		var ce *CandidateError
		require.ErrorAs(t, err, &ce, tc.name)
		tc.want.Candidate = cand
		assert.Equal(t, tc.want, *ce, tc.name)
	}
	// The sidecar mesh runs an image candidate with its own wiring or
	// arguments, and a configuration candidate with the harness's.
	for _, tc := range []struct {
		m mesh.Mesh
		c arms.Spec
	}{
		{newMesh("sidecar", mesh.WithMTLSEvidence(noEvidence)), arms.Spec{Image: "envoy:v2"}},
		{newMesh("sidecar", mesh.WithSidecar("proxy", "envoy:v1", "-c", "/etc/envoy.yaml")), arms.Spec{Image: "envoy:v2"}},
		{newMesh("sidecar"), arms.Spec{Variants: noKeepAlive}},
		{newMesh("sidecar"), arms.Spec{Image: "meshbench/nginx:next", Variants: noKeepAlive}},
		{newMesh("istio"), arms.Spec{Revision: "canary"}},
		{newMesh("istio", mesh.WithRevision("stable")), arms.Spec{Revision: "canary"}},
		{newMesh("istio", mesh.WithRevision("canary")), arms.Spec{Revision: "canary"}}, // A/A
	} {
		assert.NoError(t, CheckCandidate(tc.m, tc.c), tc.c.String())
	}
}

// deployment returns the named Deployment of ns and its proxy container.
func deployment(t *testing.T, ctx context.Context, tg *Target, ns, name, proxy string) (*corev1.Container, int) {
	t.Helper()
	d, err := tg.c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "%s/%s", ns, name)
	cs := d.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == proxy {
			return &cs[i], len(cs)
		}
	}
	return nil, len(cs)
}

// TestKubeCandidateImageOnFakeCluster: -candidate=IMAGE on the sidecar
// mesh deploys three arms in three namespaces, the reference's sidecars
// on the mesh's image and the candidate's on the candidate image, and
// runs all three with their path proved.
func TestKubeCandidateImageOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: m, Candidate: &arms.Spec{Image: "meshbench/sidecar:next"},
		Workloads: manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	assert.Equal(t, testbed.UpgradeArms, tg.Arms())

	nss := tg.Namespaces()
	require.Len(t, nss, 3)
	want := map[testbed.Arm]string{testbed.Baseline: "", testbed.Reference: "meshbench/sidecar:dev", testbed.Candidate: "meshbench/sidecar:next"}
	for i, arm := range testbed.UpgradeArms {
		ns, err := fc.c.CoreV1().Namespaces().Get(ctx, nss[i], metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, tg.arms[arm].ns, ns.Name)
		assert.Contains(t, ns.Name, "-"+string(arm)+"-")
		assert.Equal(t, string(arm), ns.Labels[manifests.LabelArm])
		assert.Equal(t, arm.IsMeshed(), ns.Labels["meshbench.io/sidecar"] == "enabled", "%s: injection on in the meshed arms only", arm)
		for _, comp := range manifests.Components {
			proxy, n := deployment(t, ctx, tg, ns.Name, string(comp), "mb-sidecar")
			if !arm.IsMeshed() {
				assert.Nil(t, proxy, "%s %s: no sidecar in the baseline", arm, comp)
				assert.Equal(t, 1, n)
				continue
			}
			require.NotNil(t, proxy, "%s %s: sidecar injected", arm, comp)
			assert.Equal(t, want[arm], proxy.Image, "%s %s", arm, comp)
		}
	}
	env := tg.Environment()
	assert.Equal(t, "meshbench/sidecar:dev", env.Mesh.Config["arm.reference"])
	assert.Equal(t, "meshbench/sidecar:next", env.Mesh.Config["arm.candidate"])
	assert.Contains(t, env.Mesh.Config["nodes.candidate"], "backend=")
	ev := tg.Evidence()
	for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		assert.True(t, ev.Verifications[arm].Meshed, arm)
	}

	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond}
	for _, arm := range testbed.UpgradeArms {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.TwoHop}, Window: o})
		require.NoError(t, err, arm)
		assert.Equal(t, arm, run.Arm)
		assert.Empty(t, run.Invalid, "%s: the path proof holds", arm)
		require.Len(t, run.Edges, 2, arm)
		for _, e := range run.Edges {
			assert.Equal(t, arm.IsMeshed(), e.Secured, "%s %+v", arm, e)
		}
		_, sidecars := run.Resources.Role(measure.RoleSidecar)
		assert.Equal(t, arm.IsMeshed(), sidecars, "%s: sidecar CPU counted in the meshed arms", arm)
		for _, u := range run.Resources.Usage {
			assert.True(t, strings.HasPrefix(u.Name, tg.arms[arm].ns+"/"), "%s: only its own containers: %s", arm, u.Name)
		}
	}
	_, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	assert.ErrorContains(t, err, `unknown arm "meshed"`)
}

// TestKubeCandidateConfigOnFakeCluster: -candidate=+no-keepalive with the
// sidecar meshbench wires runs the same image in the candidate arm, with
// keep-alive between its sidecars off, and the reference's on.
func TestKubeCandidateConfigOnFakeCluster(t *testing.T) {
	fc, ctx, _ := startFakeCluster(t)
	m, err := mesh.New("sidecar") // wired by the harness: its nginx config
	require.NoError(t, err)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: m, Candidate: &arms.Spec{Variants: []arms.Variant{arms.NoKeepAlive}},
		Workloads: manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	require.Len(t, tg.Namespaces(), 3)

	conf := func(arm testbed.Arm, comp manifests.Component) string {
		cm, err := fc.c.CoreV1().ConfigMaps(tg.arms[arm].ns).Get(ctx, string(comp)+"-sidecar", metav1.GetOptions{})
		require.NoError(t, err, "%s %s", arm, comp)
		return cm.Data["nginx.conf"]
	}
	for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		for _, comp := range manifests.Components {
			proxy, _ := deployment(t, ctx, tg, tg.arms[arm].ns, string(comp), manifests.SidecarName)
			require.NotNil(t, proxy, "%s %s", arm, comp)
			assert.Equal(t, "meshbench/nginx:dev", proxy.Image, "%s %s: the same image in both arms", arm, comp)
		}
		lg := conf(arm, manifests.Loadgen)
		assert.Equal(t, arm == testbed.Reference, strings.Contains(lg, "keepalive 256;"), "%s: keep-alive to the peers' sidecars", arm)
		assert.Equal(t, arm == testbed.Candidate, strings.Contains(lg, "proxy_set_header Connection close;"), arm)
		assert.Equal(t, arm == testbed.Reference, strings.Count(conf(arm, manifests.Frontend), "keepalive 256;") == 2,
			"%s: the frontend's sidecar keeps its app's and its peer's connections alive", arm)
	}
	proxy, n := deployment(t, ctx, tg, tg.arms[testbed.Baseline].ns, string(manifests.Backend), manifests.SidecarName)
	assert.Nil(t, proxy, "no sidecar in the baseline")
	assert.Equal(t, 1, n)
	env := tg.Environment()
	assert.Equal(t, "meshbench/nginx:dev", env.Mesh.Config["arm.reference"])
	assert.Equal(t, "meshbench/nginx:dev, no keep-alive between sidecars", env.Mesh.Config["arm.candidate"])
	assert.True(t, tg.Evidence().Verifications[testbed.Candidate].Meshed)
}
