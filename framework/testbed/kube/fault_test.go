package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/exec"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// fakeKiller kills (or, for a restart, stops) a container of the fake
// cluster: its app answers 503 for down whatever the signal, then the
// container is restarted, as a kubelet would, and reports a new start
// time. signals records what each fault sent.
type fakeKiller struct {
	fc      *fakeCluster
	down    time.Duration
	signals *[]string
}

func (k fakeKiller) aim(_ context.Context, pod *corev1.Pod, container string, action testbed.Action) (func(context.Context) (time.Time, error), string, error) {
	sig, err := signalOf(action)
	if err != nil {
		return nil, "", err
	}
	return func(context.Context) (time.Time, error) {
		*k.signals = append(*k.signals, sig)
		return k.kill(pod, container), nil
	}, "fake SIG" + sig, nil
}

func (k fakeKiller) kill(pod *corev1.Pod, container string) time.Time {
	app := k.fc.app(pod.Namespace, manifests.Component(pod.Labels[manifests.LabelComponent]))
	at := time.Now()
	app.failUntil.Store(at.Add(k.down).UnixNano())
	time.AfterFunc(k.down, func() {
		k.fc.mu.Lock()
		k.fc.started[pod.Namespace+"/"+pod.Name+"/"+container] = time.Now()
		k.fc.mu.Unlock()
		p, err := k.fc.c.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			k.fc.t.Errorf("fake kubelet: %v", err)
			return
		}
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == container {
				p.Status.ContainerStatuses[i].RestartCount++
			}
		}
		if _, err := k.fc.c.CoreV1().Pods(pod.Namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			k.fc.t.Errorf("fake kubelet: %v", err)
		}
	})
	return at
}

// TestTargetFaultOnFakeCluster kills, then restarts, the meshed backend's
// sidecar 300 ms into the window: each run measures the failures and the
// recovery, takes the restart as expected, and the runs after it are
// whole; the baseline has no sidecar, so no fault.
func TestTargetFaultOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	// The fake API server answers every pod log with "fake logs".
	tally := load.NewLogTally(io.Discard)
	tg := fc.newTarget(t, Options{Mesh: m, RestartTimeout: 10 * time.Second, LoadgenLog: tally})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	var signals []string
	tg.killer, tg.faultWhyNot = fakeKiller{fc: fc, down: 400 * time.Millisecond, signals: &signals}, ""
	w := testbed.Workload{Path: testbed.OneHop}
	// Open loop: the rate before and after the fault is the same, whatever
	// else this machine runs.
	o := testbed.Window{Concurrency: 2, QPS: 200, RateTolerance: 0.3, Duration: 1500 * time.Millisecond, Warmup: -1}
	backend := tg.arms[testbed.Meshed].ns + "/backend-0"
	for i, tc := range []struct {
		action    testbed.Action
		did, sent string
	}{{testbed.Kill, "killed", "KILL"}, {testbed.Restart, "restarted", "TERM"}} {
		f := &testbed.Fault{Action: tc.action, Workload: "backend", Sidecar: true, After: 300 * time.Millisecond}
		require.NoError(t, tg.Supports(w, f))
		run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: w, Window: o, Fault: f})
		require.NoError(t, err, f)
		assert.Empty(t, run.Invalid, f)
		assert.Equal(t, f, run.Fault)
		assert.Equal(t, tc.sent, signals[len(signals)-1], f)
		require.NotNil(t, run.Recovery, f)
		rec := run.Recovery
		assert.Positive(t, rec.Failed, "%s: the fake app answers 503 for 400 ms whatever the signal", f)
		assert.Equal(t, run.Load.Errors, rec.Failed, "%s: every failure after the fault", f)
		assert.InDelta(t, 300, rec.At.Seconds()*1000, 150, "%s: on the harness clock", f)
		assert.GreaterOrEqual(t, rec.FirstSuccess, time.Duration(0), f)
		assert.GreaterOrEqual(t, rec.Recovered, 300*time.Millisecond, "%s: the app answered 503 for 400 ms", f)
		require.Len(t, run.Warnings, 2, "%q", run.Warnings)
		assert.Equal(t, []validity.Kind{validity.FaultKilled, validity.FaultRestarted}, run.Warnings.Kinds())
		assert.Regexp(t, `^mb-sidecar of `+backend+` was `+tc.did+` 3\d\dms into the window \(fake SIG`+tc.sent+`\): its CPU is not in this run's figures$`, run.Warnings[0].Detail)
		assert.Regexp(t, fmt.Sprintf(`^the kubelet restarted mb-sidecar of %s \(restarts %d → %d\): running again [\d.]+m?s and ready [\d.]+m?s after the %s$`,
			backend, i, i+1, tc.action), run.Warnings[1].Detail)
		assert.Equal(t, 50*time.Millisecond, run.Load.Timeline.Bucket)
		assert.True(t, run.Load.Options.ExpectErrors)
		assert.Equal(t, `1 loadgen log lines: 1× "fake logs"`, load.Summary(tally.Drain(), 3), "%s: the loadgen's log of a run that failed requests", f)

		run, err = tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: w, Window: o})
		require.NoError(t, err)
		assert.Empty(t, run.Invalid, "the run after the %s finds the arm whole", tc.action)
		assert.Empty(t, run.Warnings)
		assert.Empty(t, tally.Drain(), "no log is read after a run without failures")
	}

	f := &testbed.Fault{Action: testbed.Restart, Workload: "backend", Sidecar: true, After: 300 * time.Millisecond}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Baseline, Workload: w, Window: o, Fault: f})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid, "the baseline has no sidecar to restart")
	assert.Nil(t, run.Fault)
	assert.Nil(t, run.Recovery)
	assert.Zero(t, run.Load.Errors)
	assert.Equal(t, []string{"KILL", "TERM"}, signals)
}

// TestFaultNotRestarted: a container the kubelet does not bring back in
// time invalidates the run, saying what it is doing.
func TestFaultNotRestarted(t *testing.T) {
	tg := &Target{o: Options{RestartTimeout: time.Minute}}
	p := runPod("ns", "backend-0", manifests.Backend, "r")
	fr := &faultRun{f: testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true, After: time.Second}, pod: *p, container: "mb-sidecar",
		fired: true, started: time.Unix(100, 0), at: time.Unix(101, 0), how: "SIGKILL", state: "waiting: CrashLoopBackOff back-off 10s restarting failed container (restarts 2)"}
	run := &testbed.Run{Load: &load.Result{Timeline: &load.Timeline{Start: time.Unix(100, 0), Bucket: time.Second, OK: []int64{10, 0, 0}, Failed: []int64{0, 5, 5},
		LatencySum: []float64{0, 0, 0}, LatencyMax: []float64{0, 0, 0}}}}
	tg.judgeFault(run, fr)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.FaultNotRecovered, Detail: "mb-sidecar of ns/backend-0 was not running and ready again within 1m0s of the window's end: waiting: CrashLoopBackOff back-off 10s restarting failed container (restarts 2)"},
		{Kind: validity.FaultNotRecovered, Detail: "no recovery within the window (2s after the fault); lengthen Duration"},
	}, run.Invalid)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultKilled, Detail: "mb-sidecar of ns/backend-0 was killed 1s into the window (SIGKILL): its CPU is not in this run's figures"}}, run.Warnings)
}

// TestFaultNeedsTimeline: an mbloadgen without timeline= says so.
func TestFaultNeedsTimeline(t *testing.T) {
	tg := &Target{o: Options{Workloads: manifests.Params{Images: manifests.Images{Loadgen: "meshbench/mbloadgen:old"}}}}
	fr := &faultRun{f: testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true}, pod: *runPod("ns", "backend-0", manifests.Backend, "r"),
		container: "mb-sidecar", fired: true, back: time.Unix(1, 0)}
	run := &testbed.Run{Load: &load.Result{}}
	tg.judgeFault(run, fr)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultFailed, Detail: "fault run without a timeline: the loadgen image (meshbench/mbloadgen:old) predates mbloadgen's timeline=; rebuild it"}}, run.Invalid)
	assert.Nil(t, run.Recovery)
}

// TestNodeKiller: the kill is aimed before the window (the container's
// main process found with crictl on its node) and is one command in it,
// which prints the node's clock; a restart is the same with SIGTERM.
func TestNodeKiller(t *testing.T) {
	var cmds [][]string
	answers := []string{"4242\n", "1764500000123456789\n"}
	var fail error
	k := nodeKiller{exec: func(_ context.Context, node string, c ...string) ([]byte, error) {
		cmds = append(cmds, append([]string{node}, c...))
		if fail != nil {
			return []byte("no such container\n"), fail
		}
		out := answers[0]
		answers = answers[1:]
		return []byte(out), nil
	}}
	p := runPod("ns", "backend-0", manifests.Backend, "r")
	p.Spec.NodeName = "kind-worker"
	p.Status.ContainerStatuses[0].ContainerID = "containerd://0123456789abcdef0123"
	fire, how, err := k.aim(context.Background(), p, "backend", testbed.Kill)
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL to its main process, through node kind-worker", how)
	assert.Equal(t, [][]string{{"kind-worker", "crictl", "inspect", "--output", "go-template", "--template", "{{.info.pid}}", "0123456789abcdef0123"}}, cmds)
	at, err := fire(context.Background())
	require.NoError(t, err)
	assert.Equal(t, time.Unix(0, 1764500000123456789), at)
	assert.Equal(t, []string{"kind-worker", "sh", "-c", "date +%s%N && kill -KILL 4242"}, cmds[1])

	answers = []string{"4343\n", "1764500000987654321\n"}
	restart, how, err := k.aim(context.Background(), p, "backend", testbed.Restart)
	require.NoError(t, err)
	assert.Equal(t, "SIGTERM to its main process, through node kind-worker", how)
	at, err = restart(context.Background())
	require.NoError(t, err)
	assert.Equal(t, time.Unix(0, 1764500000987654321), at)
	assert.Equal(t, []string{"kind-worker", "sh", "-c", "date +%s%N && kill -TERM 4343"}, cmds[3])

	fail = errors.New("exit status 1")
	_, err = fire(context.Background())
	assert.EqualError(t, err, "kill container backend of ns/backend-0 on node kind-worker (date +%s%N && kill -KILL 4242): exit status 1: no such container")
	_, err = restart(context.Background())
	assert.EqualError(t, err, "restart container backend of ns/backend-0 on node kind-worker (date +%s%N && kill -TERM 4343): exit status 1: no such container")
	_, _, err = k.aim(context.Background(), p, "backend", testbed.Kill)
	assert.EqualError(t, err, "find the main process of container backend of ns/backend-0 on node kind-worker: exit status 1: no such container")
	fail, answers = nil, []string{"1\n"}
	_, _, err = k.aim(context.Background(), p, "backend", testbed.Kill)
	assert.EqualError(t, err, `find the main process of container backend of ns/backend-0 on node kind-worker: crictl answered "1"`)

	p.Status.ContainerStatuses[0].ContainerID = "containerd://x; reboot"
	_, _, err = k.aim(context.Background(), p, "backend", testbed.Restart)
	assert.EqualError(t, err, `container backend of ns/backend-0: no CRI container ID in its status ("containerd://x; reboot")`)

	_, _, err = k.aim(context.Background(), p, "backend", "pause")
	assert.EqualError(t, err, `fault action "pause": no signal for it on clusters`)
	_, _, err = execKiller{}.aim(context.Background(), p, "backend", "pause")
	assert.EqualError(t, err, `fault action "pause": no signal for it on clusters`)
}

// TestWithin: the kill's time as its node says, kept within the span of
// the command that did it.
func TestWithin(t *testing.T) {
	from, to := time.Unix(10, 0), time.Unix(11, 0)
	assert.Equal(t, time.Unix(10, 5e8), within(time.Unix(10, 5e8), from, to))
	assert.Equal(t, from, within(time.Time{}, from, to))
	assert.Equal(t, from, within(time.Unix(9, 0), from, to))
	assert.Equal(t, to, within(time.Unix(12, 0), from, to))
	assert.Equal(t, time.Unix(0, 42), clockOf([]byte("42\nkilled\n")))
	assert.True(t, clockOf([]byte("sh: date: not found")).IsZero())
}

func TestExecKillError(t *testing.T) {
	assert.NoError(t, execKillError(nil))
	assert.NoError(t, execKillError(exec.CodeExitError{Err: errors.New("command terminated with exit code 137"), Code: 137}), "the container died under the shell")
	err := exec.CodeExitError{Err: errors.New("command terminated with exit code 127"), Code: 127}
	assert.Equal(t, err, execKillError(err), "no sh in the image")
	assert.EqualError(t, execKillError(fmt.Errorf("forbidden")), "forbidden")
}

func TestDescribeState(t *testing.T) {
	assert.Equal(t, "waiting: CrashLoopBackOff back-off 10s (restarts 1)", describeState(corev1.ContainerStatus{RestartCount: 1,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}}}))
	assert.Equal(t, "terminated: Error, exit code 137 (restarts 0)", describeState(corev1.ContainerStatus{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}}))
	assert.Equal(t, "running, not ready (restarts 1)", describeState(corev1.ContainerStatus{RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}))
}

func TestNewKiller(t *testing.T) {
	tg := &Target{o: Options{NodeExec: func(context.Context, string, ...string) ([]byte, error) { return nil, nil }}}
	k, why := tg.newKiller(context.Background())
	assert.IsType(t, nodeKiller{}, k)
	assert.Empty(t, why)
	tg.o.NodeExec = nil
	k, why = tg.newKiller(context.Background())
	assert.Nil(t, k)
	assert.Equal(t, "faults need node access (Options.NodeExec) or a rest.Config to exec with", why)
}

// TestPlanNodeProxyFault: a fault on the node proxy hits the mesh's ready
// per-node proxy on the node that runs the workload's pod (ztunnel for
// istio-ambient), not one on another node nor a pod that is not ready;
// the baseline goes through none; a node without one is an error naming
// the node and the selector; a mesh without node proxies is refused
// before anything runs.
func TestPlanNodeProxyFault(t *testing.T) {
	ambient, err := mesh.New("istio-ambient")
	require.NoError(t, err)
	backend := runPod("meshed-ns", "backend-0", manifests.Backend, "r")
	markReady(backend)
	ztunnel := func(name, node string, ready bool) *corev1.Pod {
		p := runPod("istio-system", name, "ztunnel", "")
		p.Labels = map[string]string{"app": "ztunnel"}
		p.Spec.NodeName = node
		p.Spec.Containers[0].Name, p.Status.ContainerStatuses[0].Name = "istio-proxy", "istio-proxy"
		if ready {
			markReady(p)
		}
		return p
	}
	c := fake.NewClientset(backend, ztunnel("ztunnel-aaaa", "node-b", true), ztunnel("ztunnel-bbbb", "node-a", false), ztunnel("ztunnel-cccc", "node-a", true))
	tg := &Target{c: c, run: "r", o: Options{Mesh: ambient}}
	tg.killer = fakeKiller{signals: new([]string)}
	meshed := &arm{name: testbed.Meshed, ns: "meshed-ns"}
	f := &testbed.Fault{Action: testbed.Restart, Workload: "backend", NodeProxy: true, After: time.Second}
	assert.Equal(t, "restart the node proxy of backend after 1s", f.String())

	fr, err := tg.planFault(context.Background(), meshed, f)
	require.NoError(t, err)
	require.NotNil(t, fr)
	assert.Equal(t, "istio-proxy of istio-system/ztunnel-cccc", fr.who())
	assert.False(t, fr.logs)
	assert.NoError(t, fr.aimErr)

	fr, err = tg.planFault(context.Background(), &arm{name: testbed.Baseline, ns: "meshed-ns"}, f)
	require.NoError(t, err)
	assert.Nil(t, fr, "the baseline's pods go through no node proxy")

	backend.Spec.NodeName = "node-c"
	_, err = c.CoreV1().Pods("meshed-ns").Update(context.Background(), backend, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = tg.planFault(context.Background(), meshed, f)
	assert.EqualError(t, err, "fault restart the node proxy of backend after 1s: no ready node proxy of the istio-ambient mesh on node node-c (selectors istio-system/app=ztunnel)")

	linkerd, err := mesh.New("linkerd")
	require.NoError(t, err)
	tg.o.Mesh = linkerd
	assert.Contains(t, tg.faultUnsupported(testbed.Workload{Path: testbed.OneHop}, *f),
		"fault on the node proxy of backend: the linkerd mesh runs no per-node proxy (istio-ambient's ztunnel and cilium's agent and envoy are)")
	both := *f
	both.Sidecar = true
	assert.Contains(t, tg.faultUnsupported(testbed.Workload{Path: testbed.OneHop}, both),
		"fault restart the node proxy of backend after 1s: Sidecar and NodeProxy are both set; a fault hits one container")
}
