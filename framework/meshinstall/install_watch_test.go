package meshinstall

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/framework/internal/kubewait"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/internal/yamldocs"
)

// readDocs decodes a multi-document YAML file of the kube target's
// testdata (the recorded pod statuses its watcher judges) strictly.
func readDocs[T any](t *testing.T, name string) []T {
	t.Helper()
	out, err := yamldocs.Docs[T](filepath.Join("..", "testbed", "kube", "testdata", name))
	require.NoError(t, err)
	return out
}

// recordedNow is the time the recorded pod statuses were taken at.
var recordedNow = time.Date(2026, 11, 29, 10, 1, 0, 0, time.UTC)

// TestInstallForgivesStartupRestarts judges the recorded statuses the way
// an install does: a crash-looping pod is forgiven while it starts, and
// only then; everything else still stops the install at once.
func TestInstallForgivesStartupRestarts(t *testing.T) {
	pods := readDocs[corev1.Pod](t, "pods/statuses.yaml")
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	f := forgiveness{Restarts: 2, Within: 3 * time.Minute}
	started := func(p *corev1.Pod, ago time.Duration) *corev1.Pod {
		p = p.DeepCopy()
		p.Status.StartTime = &metav1.Time{Time: recordedNow.Add(-ago)}
		return p
	}

	crash := byName["backend-7d9f6c5b8-crash"] // CrashLoopBackOff, restartCount 1
	e, n := installProblem(started(crash, 40*time.Second), recordedNow, 30*time.Second, f)
	require.NotNil(t, e)
	assert.Equal(t, int32(1), n, "one restart 40 s after start is forgiven")

	e, n = installProblem(started(crash, 4*time.Minute), recordedNow, 30*time.Second, f)
	require.NotNil(t, e)
	assert.Equal(t, int32(0), n, "still crashing after the forgiven time stops the install")
	assert.Contains(t, e.Error(), "it keeps crashing: 1 restarts, 4m0s after the pod started (at most 2 are forgiven in its first 3m0s)")

	again := started(crash, 90*time.Second)
	again.Status.ContainerStatuses[0].RestartCount = 3
	e, n = installProblem(again, recordedNow, 30*time.Second, f)
	require.NotNil(t, e)
	assert.Equal(t, int32(0), n, "a third restart stops the install")
	assert.Contains(t, e.Error(), `host not found in upstream "backend:8080"`)

	init := byName["istio-init-crash"] // an init container, restartCount 2
	_, n = installProblem(started(init, time.Minute), recordedNow, 30*time.Second, f)
	assert.Equal(t, int32(2), n)

	// Pulls, configuration and start errors never wait, however young the pod.
	for _, name := range []string{"loadgen-5c8d7f9b4-pull", "frontend-6b7c8d9f5-errpull", "backend-7d9f6c5b8-config",
		"backend-7d9f6c5b8-create", "frontend-6b7c8d9f5-start", "loadgen-5c8d7f9b4-oom"} {
		e, n := installProblem(started(byName[name], 5*time.Second), recordedNow, 30*time.Second, f)
		require.NotNil(t, e, name)
		assert.Equal(t, int32(0), n, name)
		assert.Equal(t, byName[name].Annotations["meshbench.io/expect"], e.Reason, name)
	}
}

// TestRolloutStopsOnAPodThatKeepsCrashing runs the install's rollout
// against a fake cluster: a forgiven restart is logged and waited on; a
// pull error stops it at the first look, with the pod's events.
func TestRolloutStopsOnAPodThatKeepsCrashing(t *testing.T) {
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istiod\n  namespace: istio-system\n"
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "istiod", Namespace: "istio-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "istiod"}}}}
	pods := readDocs[corev1.Pod](t, "pods/statuses.yaml")
	pod := func(name string) *corev1.Pod {
		for _, p := range pods {
			if p.Name == name {
				p := p.DeepCopy()
				p.Name, p.Namespace, p.Labels = "istiod-5f4d-abcde", "istio-system", map[string]string{"app": "istiod"}
				p.Status.StartTime = &metav1.Time{Time: time.Now().Add(-20 * time.Second)}
				return p
			}
		}
		t.Fatalf("no recorded pod %s", name)
		return nil
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "istiod.1", Namespace: "istio-system"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "istiod-5f4d-abcde"}, Type: "Warning", Reason: "Failed", Message: "Error: ErrImagePull"}
	ch := mesh.Chart{Release: "istiod", Namespace: "istio-system"}

	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	h := &Helm{c: fake.NewClientset(dep, pod("loadgen-5c8d7f9b4-pull"), ev), timeout: time.Minute, grace: 30 * time.Second, logf: logf}
	start := time.Now()
	err := h.rollout(context.Background(), ch, manifest)
	var pe *kubewait.PodError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ImagePullBackOff", pe.Reason)
	assert.Equal(t, []string{"Warning Failed Pod/istiod-5f4d-abcde: Error: ErrImagePull"}, pe.Events)
	assert.Less(t, time.Since(start), 5*time.Second)

	// A young crash-looping pod is forgiven: the rollout waits (here until
	// its time-out) and says why, once.
	logs = nil
	h = &Helm{c: fake.NewClientset(dep, pod("backend-7d9f6c5b8-crash")), timeout: 3 * time.Second, grace: 30 * time.Second, logf: logf}
	err = h.rollout(context.Background(), ch, manifest)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not rolled out after 3s: Deployment istio-system/istiod")
	var forgiven []string
	for _, l := range logs {
		if strings.Contains(l, "restarted while starting") {
			forgiven = append(forgiven, l)
		}
	}
	require.Len(t, forgiven, 1, "%q", logs)
	assert.Contains(t, forgiven[0], "kube target: helm: istiod: istio-system/istiod-5f4d-abcde container backend restarted while starting (1 of 2 restarts forgiven in its first 3m0s)")
}
