package suite_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/nodestats"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kind"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestKindE2E is the end-to-end run on a real 3-node kind cluster built
// offline: both paths at c=1 and c=8, baseline against the bring-your-own
// sidecar mesh, checked for real results and against
// fixtures/thresholds/kind.yaml; then, on the same cluster, the loadgen
// placements and the fault scenario (placementAndFault); and the cluster
// deleted whatever happens. `make e2e` starts dockerd and builds the
// images it needs. MESHBENCH_KIND_CLUSTER names the cluster (default
// meshbench-e2e-<n>); MESHBENCH_E2E_RESULTS keeps the results files in a
// directory (they calibrate fixtures/thresholds/kind.yaml: `meshbench
// calibrate`, with MESHBENCH_KIND_ROUNDS=3).
func TestKindE2E(t *testing.T) {
	if os.Getenv("MESHBENCH_KIND_E2E") == "" {
		t.Skip("set MESHBENCH_KIND_E2E=1 and run `make e2e`, which starts dockerd and builds the node, nginx and loadgen images")
	}
	name, keep := e2eCluster(t, "meshbench-e2e")
	fixture, err := filepath.Abs("../../fixtures/thresholds/kind.yaml")
	require.NoError(t, err)
	// The node CPU agent (issue 18) reads every node beside the node reads
	// (docker exec), at the same instants: each window's figures must
	// agree within 5 %.
	s, cfg := kindSuite(t, "-kind-cluster", name, keep, "-mesh", envOr("MESHBENCH_KIND_MESH", "sidecar"), "-thresholds", fixture,
		"-node-cpu", "agent", "-nodecpu-image", envOr("MESHBENCH_NODECPU_IMAGE", "meshbench/mbnodecpu:dev"))
	agentLog := &syncBuffer{}
	s.Log = io.MultiWriter(testWriter{t}, agentLog)
	defer agentAgrees(t, agentLog)
	setUp(t, s)
	recs := sweepBothPaths(t, s)
	for _, r := range recs {
		name := r.Name()
		require.NotEmpty(t, r.Edges, name)
		for _, e := range r.Edges {
			assert.Equal(t, r.Arm == testbed.Meshed, e.Secured, "%s: %s → %s secured (evidence %q)", name, e.Src, e.Dst, e.Evidence)
		}
		want := []measure.Role{measure.RoleLoadgen, measure.RoleApp}
		if r.Arm == testbed.Meshed {
			want = append(want, measure.RoleSidecar)
		}
		for _, role := range want {
			tot, ok := r.Resources.Role(role)
			assert.True(t, ok && tot.MilliCores > 0, "%s: no CPU measured for %s containers", name, role)
		}
		_, sidecars := r.Resources.Role(measure.RoleSidecar)
		assert.Equal(t, r.Arm == testbed.Meshed, sidecars, "%s: sidecar containers only in the meshed arm", name)
	}
	if !t.Failed() {
		placementAndFault(t, s, name)
	}
	// fixtures/thresholds/kind.yaml is calibrated on two quiet runs, and
	// a kind cluster on this 2-core machine varies more from one cluster
	// to the next than within a run (a third run read a p50 delta of
	// 0.63–0.69 ms at one-hop c=8 where the two had 0.30–0.52): a breach
	// is reported, not failed, as TestShortLocalSweep does for the local
	// fixture. Anything else is an error: every scenario is covered by a
	// rule, and the check ran on every comparison.
	reportBreaches(t, s.Finish(), fixture, "kind fixture breached (reported, not failed)")
	files, _ := filepath.Glob(filepath.Join(cfg.ResultsDir, "*.json"))
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(data), `"cpuCounters": "`+nodestats.Source+`"`, "the results say the CPU counters were read on the nodes")
	// The workloads sit on different nodes.
	for _, arm := range testbed.Arms {
		m := regexp.MustCompile(`"nodes\.` + string(arm) + `": "([^"]*)"`).FindSubmatch(data)
		require.NotNil(t, m, "placement of the %s arm recorded", arm)
		nodes := map[string]bool{}
		for _, kv := range regexp.MustCompile(`(backend|frontend|loadgen)=([^ ,;]+)`).FindAllSubmatch(m[1], -1) {
			nodes[string(kv[2])] = true
		}
		assert.GreaterOrEqual(t, len(nodes), 2, "%s arm spread across nodes: %s", arm, m[1])
	}
}

// agreement is one container's CPU over one span between two reads of
// its node, by the node read and by the agent, as the run logs it.
var agreement = regexp.MustCompile(`node CPU agent vs node read: node \S+: (\S+): ([\d.]+) millicores over (\S+) by the node read, ([\d.]+) over (\S+) by the agent \(([-+\d.]+)%\)`)

// agentAgrees checks the node CPU agent against the node reads: over every
// span of a 10 s window's length (the spans between windows are a few
// seconds, partly idle, where the up to 0.3 s between the two readers'
// reads on a slow cluster weighs more: 5.0 % on a 5.3 s span), each
// busy container of the run's workloads (sidecars, apps, loadgens) by the
// agent is within 5 % of the node read's. The control plane's are left
// out: the API server and etcd serve the agent's reads themselves, so
// their few tens of millicores move with when each reader read (+6.8 and
// +19.6 % in a CI run whose workloads' window spans agreed within 2.7 %).
func agentAgrees(t *testing.T, log *syncBuffer) {
	n := 0
	for _, m := range agreement.FindAllStringSubmatch(log.String(), -1) {
		span, err := time.ParseDuration(m[3])
		require.NoError(t, err, m[0])
		ns, _, _ := strings.Cut(m[1], "/")
		if span < 9*time.Second || !strings.HasPrefix(ns, "meshbench-") || strings.Contains(ns, "-nodecpu-") {
			continue
		}
		n++
		diff, err := strconv.ParseFloat(m[6], 64)
		require.NoError(t, err, m[0])
		cpu, err := cpuApart(m[2], m[3], m[4], m[5])
		require.NoError(t, err, m[0])
		assert.True(t, math.Abs(diff) <= 5 || cpu <= 5, "the agent within 5 %% of the node read, by rate or by CPU-seconds (%.1f %% apart): %s", cpu, m[0])
	}
	assert.Greater(t, n, 10, "windows compared between the agent and the node reads")
	t.Logf("node CPU agent: %d window spans compared with the node reads", n)
}

// cpuApart is how far apart, in percent of the node read's, the CPU-seconds
// of the two readers are: each reader's millicores times its own span. The
// readers read the same cgroup counters at instants up to about 0.6 s
// apart on a slow cluster (a cold CI run: 12.03 s against 11.43 s). A
// container busy across both spans shows the offset in CPU-seconds and
// agrees by rate; one idle in the offset (a baseline app while the meshed
// arm runs) agrees by CPU-seconds exactly (225.2 mc × 12.03 s and 237.1 mc
// × 11.43 s are both 2.71 CPU-s) and is 5.3 % apart by rate. Disagreeing
// by both is a reader that is wrong.
func cpuApart(nodeMC, nodeSpan, agentMC, agentSpan string) (float64, error) {
	var v [4]float64
	for i, f := range []string{nodeMC, nodeSpan, agentMC, agentSpan} {
		if i%2 == 1 {
			d, err := time.ParseDuration(f)
			if err != nil {
				return 0, err
			}
			v[i] = d.Seconds()
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		v[i] = x
	}
	node, agent := v[0]*v[1], v[2]*v[3]
	if node == 0 {
		return math.Inf(1), nil
	}
	return 100 * math.Abs(agent-node) / node, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// placementAndFault is the kind stage of the placement and fault
// scenarios, short and small: the seed's placements (in the mesh ×1, out
// of the mesh, in the mesh as shards) at c=8 with 5 s windows; the backend's
// bring-your-own sidecar container killed 2 s into a 15 s window of the
// meshed arm at c=4, which must fail requests and recover (the kubelet
// restarts the container in 1-3 s, and in up to 10 s when the machine is
// saturated); the frontend's sidecar stopped (restartRun); and a run of
// the meshed arm after them, which must be whole, with each sidecar
// restarted once by the kubelet.
func placementAndFault(t *testing.T, s *suite.Suite, cluster string) {
	start := time.Now()
	defer func() { t.Logf("e2e stage placement+fault: %.0fs", time.Since(start).Seconds()) }()
	s.Config.ConcurrencySet = false // the scenarios' own c, not -concurrency's
	short := func(d, warm time.Duration) func(*testbed.Window) {
		return func(w *testbed.Window) { w.Duration, w.Warmup = d, warm }
	}
	n := len(s.Records())
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkPlacement", Window: short(5*time.Second, 2*time.Second), Axes: []suite.Axis{suite.Placements(
			suite.Placement{Where: testbed.InMesh, Loadgens: 1, C: 8},
			suite.Placement{Where: testbed.OutOfMesh, Loadgens: 1, C: 8},
			suite.Placement{Where: testbed.InMesh, Loadgens: 2, C: 8},
		)}})
	})
	placed := s.Records()[n:]
	require.Len(t, placed, 3*2, "3 placements × 2 arms")
	checkPlacements(t, placed)

	n = len(s.Records())
	fault := &testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true, After: 2 * time.Second}
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkProxyKilled", Concurrency: []int{4}, Arms: []testbed.Arm{testbed.Meshed},
			Fault: fault, Window: short(15*time.Second, 2*time.Second)})
	})
	faulted := s.Records()[n:]
	require.Len(t, faulted, 1)
	checkFault(t, faulted[0].Run)

	restartRun(t, s, short(10*time.Second, 2*time.Second))

	n = len(s.Records())
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkAfterFault", Concurrency: []int{4}, Arms: []testbed.Arm{testbed.Meshed},
			Window: short(5*time.Second, time.Second)})
	})
	after := s.Records()[n:]
	require.Len(t, after, 1)
	for _, r := range after {
		assert.True(t, r.Valid(), "%s after the fault: invalid: %v", r.Name(), r.Invalid)
		assert.Zero(t, r.Load.Errors, "%s after the fault: errors", r.Name())
	}
	checkRestarted(t, cluster)
}

// restartRun stops the frontend's sidecar with SIGTERM, as the kubelet
// stops a container, 2 s into a 10 s two-hop window of the meshed arm at
// c=4 (issue 8). The frontend's, not the killed backend's: the kubelet
// would restart that one again only after its back-off (10 s).
func restartRun(t *testing.T, s *suite.Suite, short func(*testbed.Window)) {
	start := time.Now()
	n := len(s.Records())
	restart := &testbed.Fault{Action: testbed.Restart, Workload: "frontend", Sidecar: true, After: 2 * time.Second}
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkProxyRestarted", Path: testbed.TwoHop, Concurrency: []int{4},
			Arms: []testbed.Arm{testbed.Meshed}, Fault: restart, Window: short})
	})
	t.Logf("e2e stage restart: %.0fs", time.Since(start).Seconds())
	restarted := s.Records()[n:]
	require.Len(t, restarted, 1)
	checkRestart(t, restarted[0].Run)
}

// checkRestart: the stopped sidecar failed requests (nginx's fast
// shutdown on SIGTERM drops the connections through it), the load
// recovered within the window, and the kubelet restarted it.
func checkRestart(t *testing.T, r *testbed.Run) {
	checkRecovered(t, r, "restart", "stop")
	assert.Regexp(t, `mb-sidecar of \S+/frontend-\S+ was restarted \d+(\.\d+)?s into the window \(SIGTERM to its main process, through node `,
		r.Warnings.Of(validity.FaultKilled).String())
	assert.Regexp(t, `the kubelet restarted mb-sidecar of \S+/frontend-\S+ \(restarts 0 → 1\)`, r.Warnings.Of(validity.FaultRestarted).String())
	for _, line := range r.Warnings {
		t.Logf("restart run: warning: %s", line)
	}
}

// checkRecovered: the fault run (what: "fault" or "restart", done by
// act: "kill" or "stop") is valid, failed requests, and recovered within
// the window; it logs the figures.
func checkRecovered(t *testing.T, r *testbed.Run, what, act string) {
	t.Helper()
	assert.True(t, r.Valid(), "%s run invalid: %v", what, r.Invalid)
	require.NotNil(t, r.Fault)
	require.NotNil(t, r.Recovery, "recovery measured")
	rec := r.Recovery
	t.Logf("%s: %s: %s", what, r.Fault, rec)
	t.Logf("%s figures: failed requests %d, time to first success %v, time to recovery %v (errors in the run %d of %d)",
		what, rec.Failed, rec.FirstSuccess.Round(time.Millisecond), rec.Recovered.Round(time.Millisecond), r.Load.Errors, r.Load.Requests)
	assert.Positive(t, rec.Failed, "the %s failed requests", act)
	assert.GreaterOrEqual(t, rec.FirstSuccess, time.Duration(0), "a success after the %s", act)
	assert.GreaterOrEqual(t, rec.Recovered, time.Duration(0), "recovered within the window")
}

// checkPlacements: every placement's runs are valid and error-free; out
// of the mesh, the meshed arm's first hop is plain by design and the
// rest mTLS; shards run as many loadgens as asked.
func checkPlacements(t *testing.T, recs []report.Record) {
	t.Log("placement  arm       req/s   p50 ms  p99 ms  shards  first hop")
	for _, r := range recs {
		name, where := r.Name(), r.Labels.Value(labels.Placement)
		assert.True(t, r.Valid(), "%s invalid: %v", name, r.Invalid)
		assert.Zero(t, r.Load.Errors, "%s: errors", name)
		assert.Greater(t, r.Load.Requests, int64(100), name)
		require.NotEmpty(t, r.Edges, name)
		for i, e := range r.Edges {
			want := r.Arm == testbed.Meshed && !(i == 0 && where == "out-of-mesh")
			assert.Equal(t, want, e.Secured, "%s: %s → %s secured (evidence %q)", name, e.Src, e.Dst, e.Evidence)
		}
		shards := max(len(r.Shards), 1)
		assert.Equal(t, map[string]int{"in-mesh": 1, "out-of-mesh": 1, "in-mesh-x2": 2}[where], shards, name)
		p50, p99 := r.Load.Percentile(50), r.Load.Percentile(99)
		t.Logf("%-10s %-8s %7.0f  %6.2f  %6.2f  %6d  %s", where, r.Arm, r.Load.AchievedQPS, p50*1e3, p99*1e3, shards, r.Edges[0].Evidence)
	}
}

// checkFault: the killed sidecar failed requests, the load recovered
// within the window, and the run says the kubelet restarted it.
func checkFault(t *testing.T, r *testbed.Run) {
	checkRecovered(t, r, "fault", "kill")
	assert.Positive(t, r.Load.Errors)
	assert.Regexp(t, `mb-sidecar of \S+/backend-\S+ was killed \d+(\.\d+)?s into the window \(SIGKILL to its main process, through node `,
		r.Warnings.Of(validity.FaultKilled).String())
	assert.Regexp(t, `the kubelet restarted mb-sidecar of \S+ \(restarts 0 → 1\)`, r.Warnings.Of(validity.FaultRestarted).String())
	for _, line := range r.Warnings {
		t.Logf("fault run: warning: %s", line)
	}
}

// checkRestarted reads the cluster: the meshed backend's sidecar was
// restarted once, after a SIGKILL (exit code 137), the meshed frontend's
// once, after a SIGTERM (nginx's fast shutdown: exit code 0, Completed),
// and both run.
func checkRestarted(t *testing.T, cluster string) {
	kc, err := kindcluster.NewProvider().KubeConfig(cluster, false)
	require.NoError(t, err)
	rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	require.NoError(t, err)
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	for comp, exit := range map[manifests.Component]struct {
		code   int32
		reason string
	}{manifests.Backend: {137, "Error"}, manifests.Frontend: {0, "Completed"}} {
		pods, err := c.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{
			LabelSelector: manifests.LabelArm + "=meshed," + manifests.LabelComponent + "=" + string(comp)})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1, "%s", comp)
		p := pods.Items[0]
		i := slices.IndexFunc(p.Status.ContainerStatuses, func(st corev1.ContainerStatus) bool { return st.Name == manifests.SidecarName })
		require.GreaterOrEqual(t, i, 0, "the %s runs the sidecar", comp)
		st := p.Status.ContainerStatuses[i]
		require.NotNil(t, st.LastTerminationState.Terminated, "%s", comp)
		last := st.LastTerminationState.Terminated
		t.Logf("sidecar %s/%s %s: restarts %d, last exit code %d (%s)", p.Namespace, p.Name, st.Name, st.RestartCount, last.ExitCode, last.Reason)
		assert.Equal(t, int32(1), st.RestartCount, "%s's sidecar restarted once", comp)
		assert.NotNil(t, st.State.Running, "%s's sidecar runs", comp)
		assert.Equal(t, exit.code, last.ExitCode, "%s's sidecar's exit code", comp)
		assert.Equal(t, exit.reason, last.Reason, "%s's sidecar's exit reason", comp)
	}
}

// e2eCluster names the test's kind cluster, MESHBENCH_KIND_CLUSTER or
// PREFIX-<n>, and returns the flag that keeps it past the suite's close.
// The cluster is deleted at the end of the test, unless MESHBENCH_KIND_KEEP
// is set: then it outlives the test, for the next test to reuse (`make e2e`
// shares one cluster between its tests, and deletes it after the last).
func e2eCluster(t *testing.T, prefix string) (name, keep string) {
	t.Helper()
	name = envOr("MESHBENCH_KIND_CLUSTER", fmt.Sprintf("%s-%d", prefix, time.Now().Unix()%100000))
	if os.Getenv("MESHBENCH_KIND_KEEP") != "" {
		t.Logf("kind cluster %s is kept after the test (MESHBENCH_KIND_KEEP)", name)
		return name, "-keep-cluster"
	}
	deleteClusters(t, name)
	return name, "-keep-cluster=false"
}

// deleteClusters deletes the kind clusters at the end of the test, also
// when a step failed before the suite's Close, and checks they are gone.
func deleteClusters(t *testing.T, names ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, n := range names {
			_ = kind.Down(ctx, n)
			list, err := kindcluster.NewProvider().List()
			assert.NoError(t, err)
			assert.False(t, slices.Contains(list, n), "cluster %s deleted", n)
		}
	})
}

// kindSuite is a suite on kind with the e2e runs' window (10 s after a
// 3 s warm-up, c=1 and c=8, one round) and the offline images, plus args.
func kindSuite(t *testing.T, args ...string) (*suite.Suite, *suite.Config) {
	t.Helper()
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	cfg := suite.RegisterFlags(fs)
	require.NoError(t, fs.Parse(append([]string{
		"-target", "kind", "-concurrency", "1,8", "-duration", "10s", "-warmup", "3s",
		"-nginx-image", envOr("MESHBENCH_NGINX_IMAGE", "meshbench/nginx:1.22.1-9-deb12u9"),
		"-loadgen-image", envOr("MESHBENCH_LOADGEN_IMAGE", "meshbench/mbloadgen:dev"),
		"-results", envOr("MESHBENCH_E2E_RESULTS", t.TempDir()),
	}, args...)))
	require.NoError(t, cfg.Normalize())
	s := suite.NewWithConfig(cfg)
	s.Log = testWriter{t}
	s.Config.Repeats = 1
	return s, cfg
}

// kindThresholdRounds is how many rounds TestKindE2E's sweep of both
// paths runs: 1 in CI, whose 8 runs of 10 s windows give the node agent's
// check more than the 10 spans agentAgrees needs (each window compares
// every busy container of the run: the loadgen, the apps, the sidecars),
// and the kind fixture's breaches are reported, not failed (see
// TestKindE2E). With one round TestKindE2E took 275 s in a warm CI run,
// against 403 s with two (2026-12-05/06). MESHBENCH_KIND_ROUNDS asks for more, to
// calibrate the fixture (it is calibrated on 3, with
// MESHBENCH_E2E_RESULTS keeping the files).
func kindThresholdRounds(t *testing.T) int {
	t.Helper()
	n, err := strconv.Atoi(envOr("MESHBENCH_KIND_ROUNDS", "1"))
	require.NoError(t, err, "MESHBENCH_KIND_ROUNDS")
	require.Positive(t, n, "MESHBENCH_KIND_ROUNDS")
	return n
}

// sweepBothPaths sweeps one-hop and two-hop and checks what every run
// must show: valid, without errors, with requests.
func sweepBothPaths(t *testing.T, s *suite.Suite) []report.Record {
	t.Helper()
	// Interleaved pairs: a threshold of fixtures/thresholds/kind.yaml
	// fails only when every pair is beyond it.
	rounds := kindThresholdRounds(t)
	s.Config.Repeats = rounds
	sweep(s, testbed.OneHop, testbed.TwoHop)
	s.Config.Repeats = 1
	recs := s.Records()
	require.Len(t, recs, 2*2*2*rounds, "2 paths × 2 concurrencies × 2 arms × rounds")
	for _, r := range recs {
		assert.True(t, r.Valid(), "%s invalid: %v", r.Name(), r.Invalid)
		assert.Zero(t, r.Load.Errors, "%s: errors", r.Name())
		assert.Greater(t, r.Load.Requests, int64(100), r.Name())
	}
	return recs
}
