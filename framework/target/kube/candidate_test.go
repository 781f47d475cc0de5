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
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target"
)

func TestKubeParseCandidate(t *testing.T) {
	for spec, want := range map[string]*Candidate{
		"":                                   nil,
		"nginx":                              {Image: "nginx"},
		"meshbench/nginx:1.27":               {Image: "meshbench/nginx:1.27"},
		"localhost:5000/a/b:v1+no-keepalive": {Image: "localhost:5000/a/b:v1", NoKeepAlive: true},
		"+no-keepalive":                      {NoKeepAlive: true},
		"rev=canary":                         {Revision: "canary"},
		"rev=1-28-0":                         {Revision: "1-28-0"},
		"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": {
			Image: "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	} {
		c, err := ParseCandidate(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want, c, spec)
		assert.Equal(t, spec, c.String(), "written back as the flag wrote it")
	}
	// A revision is a DNS label, as -mesh-revision's; an image reference
	// has no "=".
	for spec, want := range map[string]string{
		"rev=":       "-candidate=rev=: no revision name (want e.g. rev=canary, the revision istioctl install --revision=canary installs)",
		"rev=1.28":   `-candidate=rev=1.28: "1.28" is not a revision name: must not contain dots`,
		"rev=Canary": `-candidate=rev=Canary: "Canary" is not a revision name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		"nginx=1.27": `-candidate=nginx=1.27: "nginx=1.27" is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in +no-keepalive, or +no-keepalive alone for the reference's image)`,
		"revision=a": `-candidate=revision=a: "revision=a" is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in +no-keepalive, or +no-keepalive alone for the reference's image)`,
	} {
		_, err := ParseCandidate(spec)
		assert.EqualError(t, err, want, spec)
	}
	for _, spec := range []string{"Nginx:1.27", "nginx:1.27+fast", "caddy@v2.11.9", "nginx 1.27", "-nginx"} {
		_, err := ParseCandidate(spec)
		require.Error(t, err, spec)
		assert.Contains(t, err.Error(), "-candidate="+spec+": ", spec)
		assert.Contains(t, err.Error(), "is not an image reference", spec)
	}
}

// A candidate is refused before anything runs, naming the flag, where
// the mesh cannot run it beside its reference.
func TestKubeCandidateRefusedBeforeAnythingRuns(t *testing.T) {
	newMesh := func(name string, opts ...mesh.Option) mesh.Mesh {
		m, err := mesh.New(name, opts...)
		require.NoError(t, err)
		return m
	}
	noEvidence := func(context.Context, kubernetes.Interface, string) ([]mesh.Edge, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		m    mesh.Mesh
		c    Candidate
		want string
	}{
		{"istio", newMesh("istio"), Candidate{Image: "nginx:1.27"},
			"-candidate=nginx:1.27: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=istio " +
				"(with -mesh=istio, gate another revision with -candidate=rev=NAME; for another mesh, gate against a stored run with -reference)"},
		{"ambient revision", newMesh("istio-ambient"), Candidate{Revision: "canary"},
			"-candidate=rev=canary: Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side; " +
				"gate an ambient upgrade against a stored run with -reference (a run before the upgrade)"},
		{"ambient waypoint revision", newMesh("istio-ambient", mesh.WithWaypoint(mesh.DefaultWaypoint)), Candidate{Revision: "canary"},
			"-candidate=rev=canary: Istio ambient runs one ztunnel per node for every revision"},
		{"linkerd revision", newMesh("linkerd"), Candidate{Revision: "canary"},
			"-candidate=rev=canary: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=linkerd (for another mesh, gate against a stored run with -reference)"},
		{"sidecar revision", newMesh("sidecar"), Candidate{Revision: "canary"},
			"-candidate=rev=canary: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=sidecar"},
		{"none", newMesh("none"), Candidate{NoKeepAlive: true}, "-candidate=+no-keepalive: on a cluster only"},
		{"own wiring", newMesh("sidecar", mesh.WithMTLSEvidence(noEvidence)), Candidate{NoKeepAlive: true},
			"-candidate=+no-keepalive: +no-keepalive is a variant of the nginx configuration meshbench renders, and this sidecar brings its own wiring"},
		{"own arguments", newMesh("sidecar", mesh.WithSidecar("proxy", "envoy:v1", "-c", "/etc/envoy.yaml")), Candidate{Image: "envoy:v2", NoKeepAlive: true},
			"-candidate=envoy:v2+no-keepalive: +no-keepalive is a variant of the nginx configuration meshbench renders, which the sidecar's own arguments"},
	} {
		c := fake.NewClientset()
		cand := tc.c
		_, err := newTarget(c, Options{Mesh: tc.m, Candidate: &cand})
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.Empty(t, c.Actions(), "%s: nothing asked of the cluster", tc.name)
		_, err = CheckCandidate(tc.m, cand.String())
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	// The sidecar mesh runs an image candidate with its own wiring or
	// arguments, and a configuration candidate with the harness's.
	for _, tc := range []struct {
		m    mesh.Mesh
		spec string
	}{
		{newMesh("sidecar", mesh.WithMTLSEvidence(noEvidence)), "envoy:v2"},
		{newMesh("sidecar", mesh.WithSidecar("proxy", "envoy:v1", "-c", "/etc/envoy.yaml")), "envoy:v2"},
		{newMesh("sidecar"), "+no-keepalive"},
		{newMesh("sidecar"), "meshbench/nginx:next+no-keepalive"},
		{newMesh("istio"), "rev=canary"},
		{newMesh("istio", mesh.WithRevision("stable")), "rev=canary"},
		{newMesh("istio", mesh.WithRevision("canary")), "rev=canary"}, // A/A
	} {
		_, err := CheckCandidate(tc.m, tc.spec)
		assert.NoError(t, err, tc.spec)
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
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: m, Candidate: &Candidate{Image: "meshbench/sidecar:next"},
		Workloads: manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	assert.Equal(t, target.UpgradeArms, tg.Arms())

	nss := tg.Namespaces()
	require.Len(t, nss, 3)
	want := map[target.Arm]string{target.Baseline: "", target.Reference: "meshbench/sidecar:dev", target.Candidate: "meshbench/sidecar:next"}
	for i, arm := range target.UpgradeArms {
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
	for _, arm := range []target.Arm{target.Reference, target.Candidate} {
		assert.True(t, ev.Verifications[arm].Meshed, arm)
	}

	o := load.Options{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond}
	for _, arm := range target.UpgradeArms {
		run, err := tg.Run(ctx, target.Spec{Arm: arm, Workload: target.Workload{Path: target.TwoHop}, Load: o})
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
	_, err := tg.Run(ctx, target.Spec{Arm: target.Meshed, Workload: target.Workload{Path: target.OneHop}, Load: o})
	assert.ErrorContains(t, err, `unknown arm "meshed"`)
}

// TestKubeCandidateConfigOnFakeCluster: -candidate=+no-keepalive with the
// sidecar meshbench wires runs the same image in the candidate arm, with
// keep-alive between its sidecars off, and the reference's on.
func TestKubeCandidateConfigOnFakeCluster(t *testing.T) {
	fc, ctx, _ := startFakeCluster(t)
	m, err := mesh.New("sidecar") // wired by the harness: its nginx config
	require.NoError(t, err)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: m, Candidate: &Candidate{NoKeepAlive: true},
		Workloads: manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	require.Len(t, tg.Namespaces(), 3)

	conf := func(arm target.Arm, comp manifests.Component) string {
		cm, err := fc.c.CoreV1().ConfigMaps(tg.arms[arm].ns).Get(ctx, string(comp)+"-sidecar", metav1.GetOptions{})
		require.NoError(t, err, "%s %s", arm, comp)
		return cm.Data["nginx.conf"]
	}
	for _, arm := range []target.Arm{target.Reference, target.Candidate} {
		for _, comp := range manifests.Components {
			proxy, _ := deployment(t, ctx, tg, tg.arms[arm].ns, string(comp), manifests.SidecarName)
			require.NotNil(t, proxy, "%s %s", arm, comp)
			assert.Equal(t, "meshbench/nginx:dev", proxy.Image, "%s %s: the same image in both arms", arm, comp)
		}
		lg := conf(arm, manifests.Loadgen)
		assert.Equal(t, arm == target.Reference, strings.Contains(lg, "keepalive 256;"), "%s: keep-alive to the peers' sidecars", arm)
		assert.Equal(t, arm == target.Candidate, strings.Contains(lg, "proxy_set_header Connection close;"), arm)
		assert.Equal(t, arm == target.Reference, strings.Count(conf(arm, manifests.Frontend), "keepalive 256;") == 2,
			"%s: the frontend's sidecar keeps its app's and its peer's connections alive", arm)
	}
	proxy, n := deployment(t, ctx, tg, tg.arms[target.Baseline].ns, string(manifests.Backend), manifests.SidecarName)
	assert.Nil(t, proxy, "no sidecar in the baseline")
	assert.Equal(t, 1, n)
	env := tg.Environment()
	assert.Equal(t, "meshbench/nginx:dev", env.Mesh.Config["arm.reference"])
	assert.Equal(t, "meshbench/nginx:dev, no keep-alive between sidecars", env.Mesh.Config["arm.candidate"])
	assert.True(t, tg.Evidence().Verifications[target.Candidate].Meshed)
}
