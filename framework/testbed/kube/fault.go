package kube

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"sigs.k8s.io/e2e-framework/klient/wait"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// faultTimeline is the bucket width of a fault run's timeline.
const faultTimeline = 50 * time.Millisecond

// A fault on a cluster kills one container of the workload's first ready
// pod in the measured arm, After into the window, the way a crash would
// (testbed.Kill), or stops it with SIGTERM as a rollout restart or a
// container stop would (testbed.Restart), and lets the kubelet restart it
// either way: the run measures the failed requests and the recovery on
// the loadgens' timelines, waits (polling, within Options.RestartTimeout)
// until the container runs again and its pod is ready, so that the runs
// after it find the arm whole, and takes the container's expected
// restart out of the restarts that would invalidate the run. The kubelet restarts a container at once the first time and
// then backs off (10 s, 20 s, … for 10 minutes): kill the same container
// again within minutes and the recovery includes that back-off.

// faultRun is a fault planned into one run's window, and what became of
// it. Its methods do nothing on nil: an arm without the container (the
// baseline has no sidecars) runs without the fault.
type faultRun struct {
	f         testbed.Fault
	pod       corev1.Pod
	container string
	// logs: the container is the target's own sidecar, whose logs of
	// verified peers and plain requests prove the path.
	logs     bool
	restarts int32 // of the container before the run

	// fire kills (or stops) the container and says when; how says how.
	// aimErr is why it could not be readied.
	fire   func(context.Context) (time.Time, error)
	how    string
	aimErr error

	stop, done chan struct{}
	started    time.Time // the window's start, on the harness clock
	fired      bool
	at         time.Time // when the container was killed or stopped
	err        error

	// watched is closed when the watch of the restart, started with the
	// kill, is over. running is when the container was first seen running
	// again, back when its pod was ready again too; zero when not within
	// Options.RestartTimeout, and then state says what it was doing.
	watched       chan struct{}
	running, back time.Time
	restartsAfter int32
	state         string
}

// faultState is what the target keeps for its faults: how they kill a
// container, and why they cannot run on this cluster ("" when they can).
type faultState struct {
	// killer kills a container for a fault; faultWhyNot says why faults
	// cannot run on this cluster, "" when they can.
	killer      killer
	faultWhyNot string
}

// faultInjector plans a run's fault, watches the killed container's
// restart and judges the outcome. It reads the run's pods and the mesh's
// node proxies through c, and knows the mesh and the target's own sidecar
// (nil for every other mesh); the killer is the target's faultState.
type faultInjector struct {
	*faultState
	pods    runPods
	mesh    mesh.Mesh
	sidecar *manifests.Sidecar
	now     func() time.Time
	// restartTimeout, loadgenImage and words are the target's
	// Options.RestartTimeout, Workloads.Images.Loadgen and Words.
	restartTimeout time.Duration
	loadgenImage   string
	words          testbed.Words
}

// faults is the target's fault injector.
func (t *Target) faults() faultInjector {
	return faultInjector{faultState: &t.faultState, pods: t.pods(), mesh: t.o.Mesh, sidecar: t.sidecar, now: t.now,
		restartTimeout: t.o.RestartTimeout, loadgenImage: t.o.Workloads.Images.Loadgen, words: t.o.Words}
}

// planFault is faultInjector.plan with the target's injector.
func (t *Target) planFault(ctx context.Context, a *arm, f *testbed.Fault) (*faultRun, error) {
	return t.faults().plan(ctx, a, f)
}

// judgeFault is faultInjector.judge with the target's injector.
func (t *Target) judgeFault(run *testbed.Run, fr *faultRun) { t.faults().judge(run, fr) }

// plan finds the container f hits in arm a: the workload's sidecar
// (the target's own, or the mesh's) or its app, and readies the kill or
// the stop, so that in the window it is one command. It returns nil when
// a has no such container.
func (fi faultInjector) plan(ctx context.Context, a *arm, f *testbed.Fault) (*faultRun, error) {
	if f == nil {
		return nil, nil
	}
	pods, err := fi.pods.ready(ctx, a.ns, manifests.Component(f.Workload))
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("fault %s: no ready %s pod in %s", f, f.Workload, a.ns)
	}
	fr := &faultRun{f: *f, pod: pods[0], container: f.Workload}
	if f.NodeProxy {
		if !a.name.IsMeshed() {
			return nil, nil // the baseline's pods go through no node proxy
		}
		if fr.pod, fr.container, err = fi.nodeProxy(ctx, pods[0].Spec.NodeName); err != nil {
			return nil, fmt.Errorf("fault %s: %w", f, err)
		}
	}
	if f.Sidecar {
		fr.container, fr.logs = fi.sidecarContainer(a, &fr.pod), a.sidecar
		if fr.container == "" {
			return nil, nil
		}
	}
	st, ok := containerStatus(&fr.pod, fr.container)
	if !ok {
		return nil, fmt.Errorf("fault %s: pod %s/%s has no container %s", f, a.ns, fr.pod.Name, fr.container)
	}
	fr.restarts = st.RestartCount
	if fi.killer == nil {
		fr.aimErr = errors.New("no way to kill a container on this cluster")
		return fr, nil
	}
	fr.fire, fr.how, fr.aimErr = fi.killer.aim(ctx, &fr.pod, fr.container, f.Action)
	return fr, nil
}

// nodeProxy finds the mesh's per-node proxy on node (the first ready pod
// that a mesh.Roles.NodeProxies selector matches there) and the container
// to hit: the selector's, else the pod's first.
func (fi faultInjector) nodeProxy(ctx context.Context, node string) (corev1.Pod, string, error) {
	sels := fi.mesh.Roles().NodeProxies
	for _, w := range sels {
		l, err := fi.pods.c.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(w.Labels).String(), FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return corev1.Pod{}, "", fmt.Errorf("list the %s mesh's node proxies on %s: %w", fi.mesh.Name(), node, err)
		}
		sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
		for _, p := range l.Items {
			if p.Spec.NodeName != node || p.DeletionTimestamp != nil || !podReady(&p) || len(p.Spec.Containers) == 0 {
				continue
			}
			c := cmp.Or(w.Container, p.Spec.Containers[0].Name)
			if _, ok := containerStatus(&p, c); ok {
				return p, c, nil
			}
		}
	}
	if len(sels) == 0 {
		return corev1.Pod{}, "", fmt.Errorf("the %s mesh runs no per-node proxy", fi.mesh.Name())
	}
	return corev1.Pod{}, "", fmt.Errorf("no ready node proxy of the %s mesh on node %s (selectors %s)", fi.mesh.Name(), node, describeSelectors(sels))
}

// describeSelectors prints node-proxy selectors as namespace/labels.
func describeSelectors(ws []mesh.Workload) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = cmp.Or(w.Namespace, "*") + "/" + labels.SelectorFromSet(w.Labels).String()
	}
	return strings.Join(out, ", ")
}

// sidecarContainer names the proxy container of pod in arm a: the
// bring-your-own sidecar, or the first of the mesh's sidecar containers
// the pod runs; "" when it has none.
func (fi faultInjector) sidecarContainer(a *arm, pod *corev1.Pod) string {
	if a.sidecar {
		return fi.sidecar.Name
	}
	for _, name := range fi.mesh.Roles().Sidecars {
		if _, ok := containerStatus(pod, name); ok {
			return name
		}
	}
	return ""
}

// containerStatus is the status of pod's container (or native sidecar)
// named name.
func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// start schedules the kill After from now, and the watch of the restart
// right after it. The kill happened when the killer says, within the span
// of its command.
func (fr *faultRun) start(ctx context.Context, now func() time.Time, watch func(context.Context, *faultRun)) {
	if fr == nil {
		return
	}
	fr.stop, fr.done, fr.started = make(chan struct{}), make(chan struct{}), now()
	timer := time.NewTimer(fr.f.After)
	go func() {
		defer close(fr.done)
		defer timer.Stop()
		select {
		case <-timer.C:
			fr.fired = true
			issued := now()
			if fr.err = fr.aimErr; fr.err != nil {
				fr.at = issued
				return
			}
			var at time.Time
			at, fr.err = fr.fire(ctx)
			fr.at = within(at, issued, now())
			if fr.err == nil {
				fr.watched = make(chan struct{})
				go func() {
					defer close(fr.watched)
					watch(ctx, fr)
				}()
			}
		case <-fr.stop:
		case <-ctx.Done():
		}
	}()
}

// within is t, or the nearest end of [from, to] when t is outside (or
// unknown): a kill the node timed on a clock that does not agree with the
// harness's happened while its command ran.
func within(t, from, to time.Time) time.Time {
	switch {
	case t.IsZero() || t.Before(from):
		return from
	case t.After(to):
		return to
	}
	return t
}

// wait ends the fault's schedule with the window.
func (fr *faultRun) wait() {
	if fr == nil || fr.done == nil {
		return
	}
	select {
	case <-fr.done:
	default:
		close(fr.stop)
		<-fr.done
	}
}

// killed reports whether the container was killed, or stopped for a
// restart.
func (fr *faultRun) killed() bool { return fr != nil && fr.fired && fr.err == nil }

// killedKey is the killed container, whose restart the run expects; the
// zero key when nothing was killed.
func (fr *faultRun) killedKey() kubelet.ContainerKey {
	if !fr.killed() {
		return kubelet.ContainerKey{}
	}
	return kubelet.ContainerKey{Namespace: fr.pod.Namespace, Pod: fr.pod.Name, Container: fr.container}
}

// lostLog bounds the requests the killed sidecar served without a line in
// its logs: what nginx had buffered (at least 8 bytes a line) and the
// requests in flight.
func (fr *faultRun) lostLog(concurrency int) int64 {
	if !fr.killed() || !fr.logs {
		return 0
	}
	return manifests.LogBuffer/8 + int64(concurrency)
}

func (fr *faultRun) component() manifests.Component { return manifests.Component(fr.f.Workload) }

func (fr *faultRun) who() string {
	return fmt.Sprintf("%s of %s/%s", fr.container, fr.pod.Namespace, fr.pod.Name)
}

// watchRestart polls, from the kill on, until the killed container runs
// again, restarted by the kubelet, and its pod is ready; within
// Options.RestartTimeout.
func (fi faultInjector) watchRestart(ctx context.Context, fr *faultRun) {
	err := wait.For(func(ctx context.Context) (bool, error) {
		p, err := fi.pods.c.CoreV1().Pods(fr.pod.Namespace).Get(ctx, fr.pod.Name, metav1.GetOptions{})
		if err != nil {
			fr.state = err.Error()
			return false, nil // transient, or the pod is gone: poll on
		}
		st, _ := containerStatus(p, fr.container)
		fr.restartsAfter, fr.state = st.RestartCount, describeState(st)
		restarted := st.RestartCount > fr.restarts && st.State.Running != nil
		if restarted && fr.running.IsZero() {
			fr.running = fi.now()
		}
		return restarted && st.Ready && podReady(p), nil
	}, wait.WithContext(ctx), wait.WithInterval(200*time.Millisecond), wait.WithTimeout(fi.restartTimeout), wait.WithImmediate())
	if err == nil {
		fr.back = fi.now()
	}
}

// awaitRestart waits for the watch of the killed container's restart.
func awaitRestart(fr *faultRun) {
	if fr.killed() {
		<-fr.watched
	}
}

// describeState says what a container is doing, for a restart that did
// not come.
func describeState(st corev1.ContainerStatus) string {
	switch s := st.State; {
	case s.Waiting != nil:
		return strings.TrimSpace(fmt.Sprintf("waiting: %s %s (restarts %d)", s.Waiting.Reason, s.Waiting.Message, st.RestartCount))
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s, exit code %d (restarts %d)", s.Terminated.Reason, s.Terminated.ExitCode, st.RestartCount)
	case s.Running != nil && !st.Ready:
		return fmt.Sprintf("running, not ready (restarts %d)", st.RestartCount)
	}
	return fmt.Sprintf("running (restarts %d)", st.RestartCount)
}

// judge puts the fault's outcome on run (testbed.JudgeFault), with
// the kubelet's restart of the killed (or stopped) container.
func (fi faultInjector) judge(run *testbed.Run, fr *faultRun) {
	if fr == nil {
		return // this arm has no such container
	}
	run.Fault = &fr.f
	if fr.killed() {
		run.Warn(validity.FaultKilled, "%s was %s %v into the window (%s): its CPU is not in this run's figures",
			fr.who(), fr.f.Action.Past(), fr.at.Sub(fr.started).Round(time.Millisecond), fr.how)
		if fr.back.IsZero() {
			run.Invalidate(validity.FaultNotRecovered, "%s was not running and ready again within %v of the window's end: %s",
				fr.who(), fi.restartTimeout, fr.state)
		} else {
			run.Warn(validity.FaultRestarted, "the kubelet restarted %s (restarts %d → %d): running again %v and ready %v after the %s",
				fr.who(), fr.restarts, fr.restartsAfter, fr.running.Sub(fr.at).Round(100*time.Millisecond), fr.back.Sub(fr.at).Round(100*time.Millisecond), fr.f.Action)
		}
	}
	if fr.killed() && run.Load.Timeline == nil {
		run.Invalidate(validity.FaultFailed, "fault run without a timeline: the loadgen image (%s) predates mbloadgen's timeline=; rebuild it",
			orDefault(fi.loadgenImage, manifests.DefaultImages.Loadgen))
		return
	}
	testbed.JudgeFault(run, testbed.FaultOutcome{Fired: fr.fired, At: fr.at, Err: fr.err}, fi.words)
}

// killer kills one container of a pod as a crash would, or as near to it
// as the cluster allows, or stops it with SIGTERM for a restart, as
// action says. aim readies the signal before the window and says how it
// is sent; fire, in the window, sends it and returns when, by the clock
// of the container's node.
type killer interface {
	aim(ctx context.Context, pod *corev1.Pod, container string, action testbed.Action) (fire func(context.Context) (time.Time, error), how string, err error)
}

// signals are the signals a fault's action sends the container's main
// process: a crash's, or the kubelet's when it stops a container.
var signals = map[testbed.Action]string{testbed.Kill: "KILL", testbed.Restart: "TERM"}

// signalOf is the signal action sends.
func signalOf(action testbed.Action) (string, error) {
	sig, ok := signals[action]
	if !ok {
		return "", fmt.Errorf("fault action %q: no signal for it on clusters", action)
	}
	return sig, nil
}

// newKiller picks how faults kill: through the node when the target has
// node access (kind), else by exec into the container when the identity
// in use may; else it says why faults cannot run here.
func (t *Target) newKiller(ctx context.Context) (killer, string) {
	if t.o.NodeExec != nil {
		return nodeKiller{exec: t.o.NodeExec}, ""
	}
	if t.restCfg == nil {
		return nil, "faults need node access (Options.NodeExec) or a rest.Config to exec with"
	}
	ns := t.meshedArms()[0].ns
	ok, err := canExec(ctx, t.c, ns)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("faults exec a kill into the container, and whether the identity in use may exec into pods in %s is unknown: %v", ns, err)
	case !ok:
		return nil, fmt.Sprintf("faults exec a kill into the container, and the identity in use may not exec into pods in %s (RBAC create on pods/exec); kind targets kill through the node instead", ns)
	}
	return execKiller{cfg: t.restCfg, c: t.c}, ""
}

// canExec asks the API server whether the identity in use may exec into
// pods of ns.
func canExec(ctx context.Context, c kubernetes.Interface, ns string) (bool, error) {
	r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec",
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("self subject access review: %w", err)
	}
	return r.Status.Allowed, nil
}

// containerIDPattern is a CRI container ID after its runtime's scheme.
var containerIDPattern = regexp.MustCompile(`^[0-9a-f]{12,128}$`)

// nodeKiller sends SIGKILL to the container's main process from its node:
// the container exits with code 137, as a crash or the OOM killer would
// end it; or, for a restart, SIGTERM, as the kubelet stops a container.
// The node's clock is the harness's on kind (one kernel).
type nodeKiller struct{ exec NodeExec }

func (k nodeKiller) aim(ctx context.Context, pod *corev1.Pod, container string, action testbed.Action) (func(context.Context) (time.Time, error), string, error) {
	sig, err := signalOf(action)
	if err != nil {
		return nil, "", err
	}
	st, _ := containerStatus(pod, container)
	_, id, _ := strings.Cut(st.ContainerID, "://")
	if !containerIDPattern.MatchString(id) {
		return nil, "", fmt.Errorf("container %s of %s/%s: no CRI container ID in its status (%q)", container, pod.Namespace, pod.Name, st.ContainerID)
	}
	node, who := pod.Spec.NodeName, fmt.Sprintf("container %s of %s/%s on node %s", container, pod.Namespace, pod.Name, pod.Spec.NodeName)
	out, err := k.exec(ctx, node, "crictl", "inspect", "--output", "go-template", "--template", "{{.info.pid}}", id)
	if err != nil {
		return nil, "", fmt.Errorf("find the main process of %s: %w: %s", who, err, strings.TrimSpace(string(out)))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 1 {
		return nil, "", fmt.Errorf("find the main process of %s: crictl answered %q", who, strings.TrimSpace(string(out)))
	}
	fire := func(ctx context.Context) (time.Time, error) {
		script := fmt.Sprintf("date +%%s%%N && kill -%s %d", sig, pid)
		out, err := k.exec(ctx, node, "sh", "-c", script)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %s (%s): %w: %s", action, who, script, err, strings.TrimSpace(string(out)))
		}
		return clockOf(out), nil
	}
	return fire, "SIG" + sig + " to its main process, through node " + node, nil
}

// clockOf reads the `date +%s%N` a kill printed first; zero when it did
// not.
func clockOf(out []byte) time.Time {
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// execKiller asks the container's PID 1 to stop, by exec into the
// container: a process cannot SIGKILL its own PID namespace's init, so
// this is SIGTERM for a kill too, which nginx and Envoy take as a fast
// shutdown; for a restart it is the signal the kubelet would send.
type execKiller struct {
	cfg *rest.Config
	c   kubernetes.Interface
}

// execKillCommand is what execKiller runs in the container.
var execKillCommand = []string{"sh", "-c", "date +%s%N; kill -TERM 1"}

func (k execKiller) aim(_ context.Context, pod *corev1.Pod, container string, action testbed.Action) (func(context.Context) (time.Time, error), string, error) {
	if _, err := signalOf(action); err != nil {
		return nil, "", err
	}
	req := k.c.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: execKillCommand, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(k.cfg, "POST", req.URL())
	if err != nil {
		return nil, "", fmt.Errorf("exec into %s of %s/%s: %w", container, pod.Namespace, pod.Name, err)
	}
	fire := func(ctx context.Context) (time.Time, error) {
		var out bytes.Buffer
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
		if err := execKillError(err); err != nil {
			return time.Time{}, fmt.Errorf("exec %q into %s of %s/%s: %w: %s", strings.Join(execKillCommand, " "), container, pod.Namespace, pod.Name,
				err, strings.TrimSpace(out.String()))
		}
		return clockOf(out.Bytes()), nil
	}
	return fire, "SIGTERM to its PID 1, by exec into it", nil
}

// execKillError is the error of the kill's exec that means it failed:
// the shell exiting with a signal's code (128+n) is the container dying
// under it, as it should.
func execKillError(err error) error {
	var ce exec.CodeExitError
	if errors.As(err, &ce) && ce.Code > 128 {
		return nil
	}
	return err
}
