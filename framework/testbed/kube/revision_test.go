package kube

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// istiod is an istiod Deployment of revision rev ("" for the default
// revision) running pilot version v.
func istiod(rev, v string) *appsv1.Deployment {
	one := int32(1)
	name, label := "istiod", "default"
	if rev != "" {
		name, label = "istiod-"+rev, rev
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", Labels: map[string]string{"app": "istiod", "istio.io/rev": label}},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:" + v}}}}},
	}
}

// withIstio makes the fake cluster an Istio cluster: the istiods of revs
// (name → version; "" is the default revision) in istio-system, and an
// injection webhook that gives every pod created in a namespace labelled
// istio.io/rev=REV, or istio-injection=enabled (revision injectAs("")),
// an istio-proxy sidecar stamped with the revision injectAs(REV) names, as
// Istio's injection template does (the pod's istio.io/rev label and the
// revision in its sidecar.istio.io/status annotation).
func (fc *fakeCluster) withIstio(t *testing.T, ctx context.Context, revs map[string]string, injectAs func(rev string) string) {
	t.Helper()
	for rev, v := range revs {
		_, err := fc.c.AppsV1().Deployments("istio-system").Create(ctx, istiod(rev, v), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	fc.c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		o, err := fc.c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", p.Namespace)
		if err != nil {
			return false, nil, nil
		}
		ns := o.(*corev1.Namespace)
		rev, ok := ns.Labels["istio.io/rev"]
		if !ok && ns.Labels["istio-injection"] != "enabled" {
			return false, nil, nil
		}
		rev = injectAs(rev)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Labels["istio.io/rev"] = rev
		p.Annotations["sidecar.istio.io/status"] = fmt.Sprintf(`{"containers":["istio-proxy"],"revision":%q}`, rev)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2"})
		return false, nil, nil
	})
}

// asLabelled injects each namespace with the revision it is labelled for,
// the default injector being the default revision.
func asLabelled(rev string) string {
	if rev == "" {
		return "default"
	}
	return rev
}

func istioMesh(t *testing.T, opts ...mesh.Option) mesh.Mesh {
	t.Helper()
	m, err := mesh.New("istio", opts...)
	require.NoError(t, err)
	return m
}

var istioImages = manifests.Params{Images: manifests.Images{Nginx: "meshbench/nginx:dev", Loadgen: "meshbench/mbloadgen:dev"}}

// stableCanaryTarget is a set-up target of a canary gate on the fake
// cluster: -mesh=istio -mesh-revision=stable (1.27.3) and
// -candidate=rev=canary (1.28.0), each namespace injected as labelled.
func stableCanaryTarget(t *testing.T) (*fakeCluster, context.Context, *Target) {
	t.Helper()
	fc, ctx, _ := startFakeCluster(t)
	fc.withIstio(t, ctx, map[string]string{"stable": "1.27.3", "canary": "1.28.0"}, asLabelled)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: istioMesh(t, mesh.WithRevision("stable")), Candidate: &arms.Spec{Revision: "canary"}, Workloads: istioImages})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	return fc, ctx, tg
}

// TestKubeCandidateRevisionOnFakeCluster: -candidate=rev=canary with
// -mesh=istio -mesh-revision=stable labels the reference arm's namespace
// for stable and the candidate's for canary, verifies each arm's sidecars
// against its own revision, and records both revisions and versions.
func TestKubeCandidateRevisionOnFakeCluster(t *testing.T) {
	fc, ctx, tg := stableCanaryTarget(t)
	assert.Equal(t, testbed.UpgradeArms, tg.Arms())

	nss := tg.Namespaces()
	require.Len(t, nss, 3)
	wantLabels := map[testbed.Arm]string{testbed.Baseline: "", testbed.Reference: "stable", testbed.Candidate: "canary"}
	for i, arm := range testbed.UpgradeArms {
		ns, err := fc.c.CoreV1().Namespaces().Get(ctx, nss[i], metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, tg.arms[arm].ns, ns.Name)
		assert.Equal(t, wantLabels[arm], ns.Labels["istio.io/rev"], arm)
		assert.NotContains(t, ns.Labels, "istio-injection", arm)
	}
	ev := tg.Evidence()
	for arm, rev := range map[testbed.Arm]string{testbed.Reference: "stable", testbed.Candidate: "canary"} {
		v := ev.Verifications[arm]
		assert.True(t, v.Meshed, arm)
		require.NotEmpty(t, v.Pods, arm)
		for _, p := range v.Pods {
			assert.Equal(t, rev, p.Revision, "%s %s", arm, p.Pod)
			assert.Equal(t, []string{"istio-proxy"}, p.Proxies, "%s %s", arm, p.Pod)
		}
	}
	for _, p := range ev.Verifications[testbed.Baseline].Pods {
		assert.Empty(t, p.Proxies, p.Pod)
	}

	cfg := tg.Environment().Mesh.Config
	assert.Equal(t, "istio revision stable, version 1.27.3", cfg["arm.reference"])
	assert.Equal(t, "istio revision canary, version 1.28.0", cfg["arm.candidate"])
	assert.Equal(t, "stable", cfg["arm.reference.revision"])
	assert.Equal(t, "1.28.0", cfg["arm.candidate.version"])
	assert.Equal(t, "istio-system/istiod-canary (docker.io/istio/pilot:1.28.0)", cfg["arm.candidate.controlPlane"])
	assert.Equal(t, "istio-system/istiod-stable (docker.io/istio/pilot:1.27.3)", cfg["arm.reference.controlPlane"])
	assert.Equal(t, "1.27.3", tg.Environment().Mesh.Version, "the mesh's version is the reference's")
}

// TestKubeCandidateRevisionControlPlanePerArm: in a canary each meshed
// arm's control-plane CPU is its own revision's istiod, the other
// revision's is "other". A live A/A canary on kind (2026-12-06) read the
// reference's istiod for both arms before this.
func TestKubeCandidateRevisionControlPlanePerArm(t *testing.T) {
	_, _, tg := stableCanaryTarget(t)
	istiodPod := func(rev string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "istiod-" + rev + "-0", Namespace: "istio-system",
			Labels: map[string]string{"app": "istiod", "istio.io/rev": rev}}}
	}
	pods := []corev1.Pod{istiodPod("stable"), istiodPod("canary")}
	for arm, own := range map[testbed.Arm]string{testbed.Reference: "stable", testbed.Candidate: "canary"} {
		roleOf := tg.roleOf(tg.arms[arm], pods)
		for _, rev := range []string{"stable", "canary"} {
			want := kubelet.RoleOther
			if rev == own {
				want = measure.RoleControlPlane
			}
			assert.Equal(t, want, roleOf("istio-system", "istiod-"+rev+"-0", "discovery"), "arm %s, istiod-%s", arm, rev)
		}
	}
}

// The reference is the default injector when -mesh-revision is not set:
// its namespace is labelled istio-injection=enabled, its istiod the
// default revision's, not the canary's beside it.
func TestKubeCandidateRevisionAgainstTheDefaultInjector(t *testing.T) {
	fc, ctx, _ := startFakeCluster(t)
	fc.withIstio(t, ctx, map[string]string{"": "1.27.3", "canary": "1.28.0"}, asLabelled)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: istioMesh(t), Candidate: &arms.Spec{Revision: "canary"}, Workloads: istioImages})
	require.NoError(t, tg.setUp(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	ns, err := fc.c.CoreV1().Namespaces().Get(ctx, tg.arms[testbed.Reference].ns, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "enabled", ns.Labels["istio-injection"])
	assert.NotContains(t, ns.Labels, "istio.io/rev")
	cfg := tg.Environment().Mesh.Config
	assert.Equal(t, "istio the default injector (istio-injection=enabled), version 1.27.3", cfg["arm.reference"])
	assert.Equal(t, "", cfg["arm.reference.revision"])
	assert.Equal(t, "istio revision canary, version 1.28.0", cfg["arm.candidate"])
	assert.Equal(t, "default", tg.Evidence().Verifications[testbed.Reference].Pods[0].Revision)
}

// A candidate revision that is not installed stops the run before
// anything is deployed, naming the revision, the namespace it would
// inject and how to install it.
func TestKubeCandidateRevisionMissing(t *testing.T) {
	fc, ctx, _ := startFakeCluster(t)
	fc.withIstio(t, ctx, map[string]string{"stable": "1.27.3"}, asLabelled)
	tg := fc.newTarget(t, Options{Name: "kind", Mesh: istioMesh(t, mesh.WithRevision("stable")), Candidate: &arms.Spec{Revision: "canary"}, Workloads: istioImages})
	fc.c.ClearActions()
	err := tg.setUp(ctx)
	assert.EqualError(t, err, "kube target: Candidate=rev=canary: istio is not installed: no Deployment labelled app=istiod in istio-system with istio.io/rev=canary; "+
		"the candidate arm's namespace "+tg.ns("candidate")+" would be labelled istio.io/rev=canary: install that revision first "+
		"(istioctl install --revision=canary, or helm install istiod-canary istio/istiod -n istio-system --set revision=canary) or pass MeshInstall")
	for _, a := range fc.c.Actions() {
		if a.GetNamespace() != "istio-system" { // the fake controller's istiod pods
			assert.NotEqual(t, "create", a.GetVerb(), "nothing deployed: %s %s/%s", a.GetVerb(), a.GetNamespace(), a.GetResource().Resource)
		}
	}
	assert.Empty(t, tg.Namespaces())
}

// A candidate arm whose sidecars another revision injected (here the
// reference's) fails verification naming the pod and both revisions; so
// does a reference whose default injector is the candidate revision.
func TestKubeCandidateRevisionWrongInjector(t *testing.T) {
	t.Run("candidate injected by the reference's revision", func(t *testing.T) {
		fc, ctx, _ := startFakeCluster(t)
		fc.withIstio(t, ctx, map[string]string{"stable": "1.27.3", "canary": "1.28.0"}, func(string) string { return "stable" })
		tg := fc.newTarget(t, Options{Name: "kind", Mesh: istioMesh(t, mesh.WithRevision("stable")), Candidate: &arms.Spec{Revision: "canary"}, Workloads: istioImages})
		err := tg.setUp(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "kube target: the arms are not what they claim: istio: meshed namespace \""+tg.ns("candidate")+"\" failed verification: "+
			"pod backend-0: its sidecar was injected by Istio revision stable (annotation sidecar.istio.io/status), not by revision canary, "+
			"the one its namespace is labelled for (istio.io/rev=canary)")
		assert.NotContains(t, err.Error(), tg.ns("reference"), "the reference arm is what it claims")
	})
	t.Run("default injector is the candidate revision", func(t *testing.T) {
		fc, ctx, _ := startFakeCluster(t)
		fc.withIstio(t, ctx, map[string]string{"": "1.27.3", "canary": "1.28.0"}, func(string) string { return "canary" })
		tg := fc.newTarget(t, Options{Name: "kind", Mesh: istioMesh(t), Candidate: &arms.Spec{Revision: "canary"}, Workloads: istioImages})
		err := tg.setUp(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "reference arm: the sidecars of pods backend-0, frontend-0, loadgen-0 were injected by Istio revision canary, the candidate's: "+
			"the default injector (istio-injection=enabled) is that revision, so the gate would compare the candidate with itself; name the reference's revision with MeshRevision")
	})
}
