package suite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestIstioCanaryGateE2E is an Istio canary upgrade gated live on kind,
// A/A: two istiod revisions of the 1.31-dev pin (built offline, installed
// side by side by -mesh-install: mb131 for the reference arm, mb131c for
// the candidate's), the proxyless gRPC data plane, one hop at c=1 at
// maximum rate, with a baseline arm of plain gRPC beside them. So it is
// also the proxyless benchmark at c=1 (the mesh-release path of `make e2e`
// runs c=8): every meshed run carries its mTLS proof by SPIFFE identity
// and istiod's CPU, and each arm's pods are verified as injected by its
// own revision. An A/A gate must not fail, and the results must say which
// revision and istiod version each arm ran. MESHBENCH_ISTIO_CANARY_E2E=1,
// on the cluster of `make e2e` (MESHBENCH_KIND_CLUSTER) after the
// mesh-release path has uninstalled its Istio.
func TestIstioCanaryGateE2E(t *testing.T) {
	skipWithoutIstio(t, "MESHBENCH_ISTIO_CANARY_E2E")
	name, keep := e2eCluster(t, "meshbench-canary")
	fixture, err := filepath.Abs("../../fixtures/gates/kind-istio-proxyless.yaml")
	require.NoError(t, err)
	s, cfg := kindSuite(t, append([]string{"-kind-cluster", name, keep, "-candidate", "rev=mb131c",
		"-gate", fixture, "-thresholds", "none", "-concurrency", "1", "-duration", "5s", "-warmup", "1s", "-max-count", fmt.Sprint(kindGateMaxRounds),
		"-control-plane-changes", fmt.Sprint(canaryChanges)},
		proxylessFlags(t)...)...)
	s.Config.Repeats = kindGateRounds
	require.NoError(t, s.LoadGate())
	start := time.Now()
	setUp(t, s)
	t.Logf("set up (install istiod mb131 and mb131c, deploy three arms): %v", time.Since(start).Round(time.Second))
	start = time.Now()
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkGate", Path: testbed.OneHop,
			Arms: []testbed.Arm{testbed.Baseline, testbed.Reference, testbed.Candidate}})
	})
	t.Logf("canary gate (c=1, baseline, reference and candidate): %v", time.Since(start).Round(time.Second))
	arms := map[testbed.Arm]int{}
	for _, r := range s.Records() {
		arms[r.Arm]++
		checkProxylessRun(t, r)
		checkControlPlane(t, r.Name(), r.Arm, r.ControlPlane)
	}
	n := arms[testbed.Reference]
	assert.Equal(t, map[testbed.Arm]int{testbed.Baseline: n, testbed.Reference: n, testbed.Candidate: n}, arms, "three arms interleaved")
	assert.GreaterOrEqual(t, n, kindGateRounds, "rounds run")
	assert.LessOrEqual(t, n, kindGateMaxRounds, "rounds run, within -max-count")
	t.Logf("finish: %v", s.Finish())
	v := s.GateVerdict()
	require.NotNil(t, v, "the gate decided")
	metrics := map[gate.Metric]bool{}
	for _, d := range v.Decisions {
		t.Logf("%s: %s", d.Outcome, d.Reason)
		assert.NotEqual(t, gate.Fail, d.Outcome, d.Reason)
		metrics[d.Metric] = true
	}
	assert.NotEqual(t, gate.Fail, v.Outcome, "an A/A gate never fails")
	assert.Equal(t, map[gate.Metric]bool{gate.WorkloadCPUPer1kReq: true, gate.Throughput: true}, metrics, "what the fixture gates at maximum rate")
	checkRevisionsRecorded(t, cfg.ResultsDir, "mb131", "mb131c")
}

// canaryChanges are the routing changes each meshed run of the canary
// gate times (-control-plane-changes).
const canaryChanges = 4

// checkControlPlane: a meshed run of the canary measured its own
// revision's istiod after its window: every change propagated to the
// loadgen's xDS client within the probe's timeout, and istiod served the
// arm's proxies (its backend and loadgen at least) with CPU and memory
// read; a baseline run measured none.
func checkControlPlane(t *testing.T, name string, arm testbed.Arm, cp *testbed.ControlPlane) {
	t.Helper()
	if !arm.IsMeshed() {
		assert.Nil(t, cp, "%s: a baseline run has no control plane", name)
		return
	}
	require.NotNil(t, cp, "%s: the control plane measured", name)
	require.Len(t, cp.Phases, 1, "%s: the run's own pods only", name)
	ph := cp.Phases[0]
	require.Len(t, ph.PropagationMs, canaryChanges, name)
	for _, ms := range ph.PropagationMs {
		assert.Greater(t, ms, ph.ProbeRTTMs, "%s: a change takes longer than one probe's round trip", name)
		assert.Less(t, ms, 30000.0, "%s: within the probe's timeout", name)
	}
	assert.GreaterOrEqual(t, ph.Proxies, 2, "%s: istiod serves the arm's backend and loadgen", name)
	assert.Greater(t, ph.RSSBytes, int64(10<<20), "%s: istiod's RSS", name)
	assert.Greater(t, ph.Seconds, 0.0, "%s: istiod's counters spanned the changes", name)
	p50, _ := ph.PropagationQuantile(0.5)
	mc, _ := ph.MilliCoresPerProxy()
	mib, _ := ph.RSSMiBPerProxy()
	t.Logf("%s: propagation p50 %.1f ms of %v; %d proxies, %.2f mcores and %.2f MiB per proxy", name, p50, ph.PropagationMs, ph.Proxies, mc, mib)
}

// checkRevisionsRecorded: the results file in dir says which Istio
// revision each arm of the gate ran, and the version of its istiod.
func checkRevisionsRecorded(t *testing.T, dir, ref, cand string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	res, err := report.Read(files[0])
	require.NoError(t, err)
	cfg := res.Environment.Mesh.Config
	for arm, rev := range map[string]string{"reference": ref, "candidate": cand} {
		assert.Equal(t, rev, cfg["arm."+arm+".revision"], "%s revision in %s", arm, files[0])
		assert.Regexp(t, `^1\.3[01]-dev\.[0-9a-f]{12}$`, cfg["arm."+arm+".version"], "%s istiod version in %s", arm, files[0])
		t.Logf("%s: %s", arm, cfg["arm."+arm])
	}
}
