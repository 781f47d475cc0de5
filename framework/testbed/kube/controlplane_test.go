package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
)

// The control plane's usage is its containers' counters between the two
// reads: a restarted container (another ID) gives no CPU but its memory,
// and other roles count for nothing.
func TestControlPlaneUsage(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 21, 0, 0, 0, time.UTC)
	ctr := func(id string, cpu float64, at time.Time, rss float64) kubelet.Container {
		return kubelet.Container{ID: id, CPUSeconds: kubelet.Sample{Value: cpu, Time: at}, RSSBytes: &kubelet.Sample{Value: rss, Time: at}}
	}
	istiod := kubelet.ContainerKey{Namespace: "istio-system", Pod: "istiod-1", Container: "discovery"}
	istiod2 := kubelet.ContainerKey{Namespace: "istio-system", Pod: "istiod-2", Container: "discovery"}
	app := kubelet.ContainerKey{Namespace: "mb", Pod: "backend-1", Container: "backend"}
	roleOf := func(ns, _, _ string) kubelet.Role {
		if ns == "istio-system" {
			return measure.RoleControlPlane
		}
		return measure.RoleApp
	}
	before := map[string]kubelet.Snapshot{
		"n1": {Containers: map[kubelet.ContainerKey]kubelet.Container{istiod: ctr("a", 10, t0, 1), app: ctr("b", 5, t0, 1)}},
		"n2": {Containers: map[kubelet.ContainerKey]kubelet.Container{istiod2: ctr("c", 3, t0, 1)}},
	}
	after := map[string]kubelet.Snapshot{
		"n1": {Containers: map[kubelet.ContainerKey]kubelet.Container{istiod: ctr("a", 10.5, t0.Add(4*time.Second), 40<<20), app: ctr("b", 9, t0.Add(5*time.Second), 1)}},
		"n2": {Containers: map[kubelet.ContainerKey]kubelet.Container{istiod2: ctr("d", 0.1, t0.Add(6*time.Second), 30<<20)}},
	}
	cpu, span, rss := controlPlaneUsage(roleOf, before, after)
	assert.InDelta(t, 0.5, cpu, 1e-9)
	assert.Equal(t, 4.0, span)
	assert.Equal(t, int64(70<<20), rss)
}

// The idle pods are the backend's pod under another name, selected by
// nothing the backend's Service selects, spread freely.
func TestIdleDeploymentIsTheBackendsPodUnselected(t *testing.T) {
	replicas := int32(1)
	b := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: "mb", Labels: map[string]string{manifests.LabelRun: "r1", manifests.LabelComponent: "backend"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: manifests.Selector(manifests.Backend)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{manifests.LabelRun: "r1", manifests.LabelName: "backend", manifests.LabelComponent: "backend"},
				Annotations: map[string]string{"inject.istio.io/templates": "grpc-agent"}},
				Spec: corev1.PodSpec{Affinity: &corev1.Affinity{}, Containers: []corev1.Container{{Name: "backend", Image: "meshbench/mbloadgen:dev"}}}}}}
	d := idleDeployment(b, 8)
	assert.Equal(t, "idle-proxies", d.Name)
	assert.Equal(t, "mb", d.Namespace)
	assert.Equal(t, int32(8), *d.Spec.Replicas)
	assert.Equal(t, map[string]string{manifests.LabelName: "idle-proxies", manifests.LabelComponent: "idle-proxies"}, d.Spec.Selector.MatchLabels)
	assert.Equal(t, map[string]string{manifests.LabelRun: "r1", manifests.LabelName: "idle-proxies", manifests.LabelComponent: "idle-proxies"}, d.Spec.Template.Labels)
	assert.Equal(t, "grpc-agent", d.Spec.Template.Annotations["inject.istio.io/templates"])
	assert.Nil(t, d.Spec.Template.Spec.Affinity)
	assert.Equal(t, "meshbench/mbloadgen:dev", d.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, "1m", d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(), "idle: next to nothing asked of the scheduler")
	assert.Equal(t, "16Mi", d.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String())
	assert.Empty(t, d.Spec.Template.Spec.Containers[0].Resources.Limits)
	assert.Equal(t, int32(1), *b.Spec.Replicas, "the backend's own Deployment is left as it was")
	assert.Equal(t, "backend", b.Spec.Template.Labels[manifests.LabelComponent])
	assert.NotNil(t, b.Spec.Template.Spec.Affinity)
}

func TestControlPlaneOptionsCheck(t *testing.T) {
	proxyless, err := mesh.New("istio-proxyless")
	require.NoError(t, err)
	none, err := mesh.New("none")
	require.NoError(t, err)
	require.NoError(t, ControlPlaneOptions{}.check(none))
	require.NoError(t, ControlPlaneOptions{Changes: 10, ExtraPods: 8}.check(proxyless))
	assert.EqualError(t, ControlPlaneOptions{Changes: 10}.check(none), "control plane: mesh none cannot change its routing for a probe and count its proxies (mesh.Propagator): only istio-proxyless measures its control plane")
	assert.EqualError(t, ControlPlaneOptions{ExtraPods: 8}.check(proxyless), "control plane: 8 extra pods without changes measure nothing: set the changes too")
	assert.EqualError(t, ControlPlaneOptions{Changes: -1}.check(proxyless), "control plane: changes -1, extra pods 0 and change timeout 0s must not be negative")
}
