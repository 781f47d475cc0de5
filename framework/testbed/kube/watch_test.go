package kube

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/internal/kubewait"
	"github.com/meshbench/meshbench/internal/yamldocs"
)

// readDocs decodes a multi-document YAML file of testdata strictly.
func readDocs[T any](t *testing.T, name string) []T {
	t.Helper()
	out, err := yamldocs.Docs[T](filepath.Join("testdata", name))
	require.NoError(t, err)
	return out
}

var recordedNow = time.Date(2026, 11, 29, 10, 1, 0, 0, time.UTC)

func TestPodProblemOnRecordedStatuses(t *testing.T) {
	pods := readDocs[corev1.Pod](t, "pods/statuses.yaml")
	require.Len(t, pods, 16)
	for _, p := range pods {
		want := p.Annotations["meshbench.io/expect"]
		got := kubewait.PodProblem(&p, recordedNow, 30*time.Second)
		if want == "ok" {
			assert.Nil(t, got, "%s must not fail: %v", p.Name, got)
			continue
		}
		if assert.NotNil(t, got, "%s must fail with %s", p.Name, want) {
			assert.Equal(t, want, got.Reason, p.Name)
			assert.Equal(t, p.Namespace, got.Namespace)
			assert.Equal(t, p.Name, got.Pod)
			assert.NotEmpty(t, got.Message, p.Name)
		}
	}
	// What a reader sees names the cause.
	crash := kubewait.PodProblem(&pods[0], recordedNow, 30*time.Second)
	assert.Contains(t, crash.Error(), `host not found in upstream "backend:8080"`)
	assert.Contains(t, crash.Error(), "container backend: CrashLoopBackOff")
	init := kubewait.PodProblem(&pods[7], recordedNow, 30*time.Second)
	assert.Equal(t, "istio-init", init.Container, "init containers are watched too")
}

func TestEventProblemOnRecordedEvents(t *testing.T) {
	pods := readDocs[corev1.Pod](t, "pods/statuses.yaml")
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	evs := readDocs[corev1.Event](t, "pods/events.yaml")
	got := eventProblem(evs, byName, 3)
	require.NotNil(t, got)
	assert.Equal(t, "Unhealthy", got.Reason)
	assert.Equal(t, "frontend-6b7c8d9f5-unready", got.Pod, "the ready backend's old probe failures do not count")
	assert.Equal(t, "frontend", got.Container)
	assert.Contains(t, got.Message, "3 failed probes")
	assert.Contains(t, got.Message, "connection refused")

	assert.Nil(t, eventProblem(evs, byName, 4), "below the threshold")

	ps := readDocs[corev1.Event](t, "pods/events-podsecurity.yaml")
	got = eventProblem(ps, nil, 3)
	require.NotNil(t, got)
	assert.Equal(t, "FailedCreate", got.Reason)
	assert.Contains(t, got.Message, `violates PodSecurity "restricted:latest"`)
	assert.Nil(t, eventProblem(ps[1:], nil, 3), "a missing service account resolves itself")
}

// runPod returns a pod of component c in ns that is being created.
func runPod(ns, name string, c manifests.Component, run string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			manifests.LabelComponent: string(c), manifests.LabelRun: run,
		}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: string(c), Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: string(c), State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}}},
	}
}

func markReady(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	p.Status.ContainerStatuses[0].Ready = true
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func testReadiness(c *fake.Clientset, wants ...want) *readiness {
	return &readiness{c: c, run: "0a1b2c", wants: wants, probes: 3, grace: 30 * time.Second,
		every: 50 * time.Millisecond, now: time.Now, logf: func(string, ...any) {}, logLines: 20}
}

func TestReadinessFailsFastOnCrashLoop(t *testing.T) {
	ns := "meshbench-baseline-0a1b2c"
	c := fake.NewClientset(runPod(ns, "backend-1", manifests.Backend, "0a1b2c"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "backend-1.1", Namespace: ns}, Type: corev1.EventTypeWarning, Reason: "BackOff",
			Message: "Back-off restarting failed container backend in pod backend-1", Count: 2,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "backend-1", Namespace: ns}})
	r := testReadiness(c, want{Namespace: ns, Component: manifests.Backend, Replicas: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.wait(ctx) }()

	// The container crashes a moment later; the watch sees it.
	p, err := c.CoreV1().Pods(ns).Get(ctx, "backend-1", metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses[0].RestartCount = 1
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=backend pod=backend-1"}}
	p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error"}}
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)

	err = <-done
	var pe *PodError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Less(t, time.Since(start), 5*time.Second, "fails within seconds, not at the timeout")
	assert.Equal(t, "CrashLoopBackOff", pe.Reason)
	assert.Equal(t, "backend", pe.Container)
	assert.Contains(t, pe.Message, "last exit code 1")
	assert.Equal(t, []string{"Warning BackOff Pod/backend-1: Back-off restarting failed container backend in pod backend-1 (x2)"}, pe.Events)
	assert.Equal(t, "fake logs", pe.Logs, "the fake clientset's log body")
	assert.Contains(t, pe.Error(), "last log lines:\n  fake logs")
}

func TestReadinessFailsFastOnImagePull(t *testing.T) {
	ns := "meshbench-meshed-0a1b2c"
	p := runPod(ns, "loadgen-1", manifests.Loadgen, "0a1b2c")
	p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "ghcr.io/meshbench/mbloadgen:v0.1.0"`}
	c := fake.NewClientset(p)
	r := testReadiness(c, want{Namespace: ns, Component: manifests.Loadgen, Replicas: 1})
	err := r.wait(context.Background())
	var pe *PodError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "ImagePullBackOff", pe.Reason)
	assert.Contains(t, err.Error(), "mbloadgen:v0.1.0")
	assert.Empty(t, pe.Logs, "a container that never started has no logs to read")
}

func TestReadinessFailsOnFailingProbes(t *testing.T) {
	ns := "meshbench-baseline-0a1b2c"
	p := runPod(ns, "frontend-1", manifests.Frontend, "0a1b2c")
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	c := fake.NewClientset(p, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "frontend-1.1", Namespace: ns}, Type: corev1.EventTypeWarning,
		Reason: "Unhealthy", Message: "Readiness probe failed: HTTP probe failed with statuscode: 502", Count: 3,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "frontend-1", Namespace: ns, FieldPath: "spec.containers{frontend}"}})
	err := testReadiness(c, want{Namespace: ns, Component: manifests.Frontend, Replicas: 1}).wait(context.Background())
	var pe *PodError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "Unhealthy", pe.Reason)
	assert.Contains(t, pe.Message, "statuscode: 502")
}

func TestReadinessWaitsForEveryReplica(t *testing.T) {
	ns := "meshbench-baseline-0a1b2c"
	a, b := runPod(ns, "loadgen-a", manifests.Loadgen, "0a1b2c"), runPod(ns, "loadgen-b", manifests.Loadgen, "0a1b2c")
	markReady(a)
	other := runPod(ns, "loadgen-x", manifests.Loadgen, "another-run")
	markReady(other)
	c := fake.NewClientset(a, b, other)
	r := testReadiness(c, want{Namespace: ns, Component: manifests.Loadgen, Replicas: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.wait(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("ready with one of two replicas (another run's pod counted?): %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	markReady(b)
	_, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done)
}

func TestReadinessTimeoutSaysWhatIsPending(t *testing.T) {
	ns := "meshbench-baseline-0a1b2c"
	c := fake.NewClientset(runPod(ns, "backend-1", manifests.Backend, "0a1b2c"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := testReadiness(c, want{Namespace: ns, Component: manifests.Backend, Replicas: 1}).wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), ns+"/backend-1 Pending backend:ContainerCreating")
}
