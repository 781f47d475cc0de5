package suite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// kindGateRounds is how many interleaved rounds each gate point starts
// with (the sequential rule's first look, gate.MinPairsToDecide), and
// kindGateMaxRounds how many it may reach while a decision is still open
// (the sequential rule's budget, -max-count): it bounds the test's time
// in CI (a round of two arms takes about 32 s at 10 s windows; the A/A
// gate took 767 s at 8 rounds, inconclusive on throughput and CPU, 289 s
// at 4 to 6 and 229 s at 3 to 4, those with a baseline arm too). The
// tests assert what any budget must give: an A/A never fails, and
// +no-keepalive fails at its first look (sidecar CPU ×6.92, 5.57–8.61,
// at 3 pairs on 2026-12-04), while one round added while undecided is
// still exercised.
const (
	kindGateRounds    = 3
	kindGateMaxRounds = 4
)

// TestKindCandidateGateE2E is the upgrade gate on a real 3-node kind
// cluster built offline, with the bring-your-own sidecar mesh and only the
// one locally built nginx image: the reference and candidate arms
// interleaved at c=8 on one hop, as BenchmarkUpgradeGate runs them (no
// baseline: suite.GateArms), judged by fixtures/gates/kind.yaml. A
// candidate with keep-alive between its sidecars off (the same image, a
// new mTLS connection per request) must fail on sidecar CPU per 1k
// requests; with MESHBENCH_KIND_SIDECAR_AA=1 an A/A gate (the candidate is
// the reference's image and configuration), at maximum rate, must not
// fail first. Then the same cluster, reached only through its kubeconfig
// with the CPU from the kubelets, has each window aligned to their
// refreshes (kubeletAlignedOnCluster, about 2.5 minutes). They share the
// cluster, deleted at the end. `make
// e2e` runs it after TestKindE2E (about 15 minutes on 2 cores once the
// images are built).
func TestKindCandidateGateE2E(t *testing.T) {
	if os.Getenv("MESHBENCH_KIND_E2E") == "" {
		t.Skip("set MESHBENCH_KIND_E2E=1 and build the images as `make e2e` does (see docs/gate.md, \"Candidate against reference on kind\")")
	}
	name, _ := e2eCluster(t, "meshbench-gate") // kindGateRun keeps it between its gates
	image := envOr("MESHBENCH_NGINX_IMAGE", "meshbench/nginx:1.22.1-9-deb12u9")

	// make e2e's A/A gate on kind, which must not fail, is a real mesh's:
	// TestIstioCanaryGateE2E, two Istio revisions side by side. This
	// one, nginx against itself (139 s of CI), runs by hand with
	// MESHBENCH_KIND_SIDECAR_AA=1.
	if os.Getenv("MESHBENCH_KIND_SIDECAR_AA") != "" {
		t.Run("A/A", func(t *testing.T) {
			// At maximum rate only: the open-loop point (GateLoad at 0.2 of
			// the capacity, as kind-gate.sh runs it) on kind is the
			// mesh-release path's (hack/ci/mesh-release-e2e.sh, after this
			// test in make e2e), whose BenchmarkUpgradeGate gates both
			// points; here it took 282 of the A/A's 565 s in a cold CI run.
			v := kindGateRun(t, name, image, 0)
			assert.NotEqual(t, gate.Fail, v.Outcome, "an A/A gate never fails")
			for _, d := range v.Decisions {
				assert.NotEqual(t, gate.Fail, d.Outcome, d.Reason)
			}
		})
		if t.Failed() {
			return
		}
	}
	t.Run("no keep-alive between sidecars", func(t *testing.T) {
		v := kindGateRun(t, name, "+no-keepalive", noKeepaliveWindow)
		assert.Equal(t, gate.Fail, v.Outcome)
		var cpu *gate.Decision
		for i, d := range v.Decisions {
			if d.Metric == gate.SidecarCPUPer1kReq {
				cpu = &v.Decisions[i]
			}
		}
		require.NotNil(t, cpu, "sidecar CPU per 1k requests was gated")
		assert.Equal(t, gate.Fail, cpu.Outcome, cpu.Reason)
		assert.Greater(t, cpu.Interval.Lo, cpu.Limit, "the whole interval is beyond the limit")
		assert.Contains(t, cpu.Reason, "too high sidecar CPU per 1k req: candidate/reference")
	})
	// The same cluster, reached through its kubeconfig with the CPU from
	// the kubelets (issue 18).
	t.Run("kubelet counters aligned", func(t *testing.T) { kubeletAlignedOnCluster(t, name) })
}

// noKeepaliveWindow is the no-keep-alive gate's window. The CPU counters
// are read on the nodes after the window, and on a busy 2-core CI host
// such a read started up to 1.3 s late; after a candidate that opens a
// connection per request, 10 s windows then had their counters 89 % under
// load, under the 90 % the CPU figures need, and 3 of 4 pairs were left
// out as cpu-diluted (inconclusive at n=1, in two CI runs). 15 s windows
// leave that tail under 10 % of the span.
const noKeepaliveWindow = 15 * time.Second

// kindGateRun runs one upgrade gate on the kind cluster (made by the first
// run and kept for the next; deleteClusters deletes it): one hop at c=8 at
// maximum rate, kindGateRounds interleaved rounds of the reference and
// the candidate, with windows of window (0: the cluster default), and
// returns the gate's verdict.
func kindGateRun(t *testing.T, cluster, candidate string, window time.Duration) *gate.Verdict {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("e2e gate -candidate=%s: %.0fs", candidate, time.Since(start).Seconds()) }()
	fixture, err := filepath.Abs("../../fixtures/gates/kind.yaml")
	require.NoError(t, err)
	args := []string{"-kind-cluster", cluster, "-keep-cluster", "-mesh", "sidecar", "-candidate", candidate,
		"-gate", fixture, "-thresholds", "none", "-concurrency", "8", "-max-count", fmt.Sprint(kindGateMaxRounds)}
	if window > 0 {
		args = append(args, "-duration", window.String())
	}
	s, _ := kindSuite(t, args...)
	s.Config.Repeats = kindGateRounds
	require.NoError(t, s.LoadGate())
	setUp(t, s)
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkGate", Path: testbed.OneHop, Arms: s.GateArms()})
	})
	checkGateRecords(t, s.Records(), kindGateRounds, kindGateMaxRounds)
	err = s.Finish() // a failed gate is an error too: the verdict says which
	t.Logf("finish: %v", err)
	v := s.GateVerdict()
	require.NotNil(t, v, "the gate decided")
	for _, d := range v.Decisions {
		t.Logf("%s: %s", d.Outcome, d.Reason)
	}
	return v
}

// checkGateRecords: as many runs of the reference and the candidate, and
// none of the baseline (no decision reads it: suite.GateArms, as
// BenchmarkUpgradeGate runs), from lo to hi (the sequential rule adds
// rounds while undecided), labelled by arm, valid (its runs are all at
// maximum rate: the open-loop point, whose loadgen may miss its rate on
// a slow cluster, is the mesh-release path's), with the path proved
// secured and sidecar CPU measured.
func checkGateRecords(t *testing.T, recs []report.Record, lo, hi int) {
	t.Helper()
	arms := map[testbed.Arm]int{}
	for _, r := range recs {
		arms[r.Arm]++
		name := r.Name()
		assert.Contains(t, name, "arm="+string(r.Arm))
		assert.True(t, r.Valid(), "%s invalid: %v", name, r.Invalid)
		require.NotEmpty(t, r.Edges, name)
		for _, e := range r.Edges {
			assert.True(t, e.Secured, "%s: %s → %s secured (evidence %q)", name, e.Src, e.Dst, e.Evidence)
		}
		u, sidecars := r.Resources.Role(measure.RoleSidecar)
		assert.True(t, sidecars, "%s: sidecar containers", name)
		assert.Positive(t, u.MilliCores, "%s: sidecar CPU measured", name)
	}
	n := arms[testbed.Reference]
	assert.Equal(t, map[testbed.Arm]int{testbed.Reference: n, testbed.Candidate: n}, arms, "the two arms interleaved, no baseline")
	assert.GreaterOrEqual(t, n, lo, "rounds run")
	assert.LessOrEqual(t, n, hi, "rounds run, within -max-count")
}
