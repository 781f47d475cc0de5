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
		"-gate", fixture, "-thresholds", "none", "-concurrency", "1", "-duration", "5s", "-max-count", fmt.Sprint(kindGateMaxRounds)},
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
