package benchmarks

import (
	"context"
	"flag"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestEveryScenarioRunsLocally runs every shipped scenario on the local
// target with a short window, one round and c=2, through testing.Benchmark
// as go test -bench would, and checks that each recorded what its name
// says.
func TestEveryScenarioRunsLocally(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario against real processes")
	}
	skipInMainJob(t)
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	cfg := suite.RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"-target", "local", "-concurrency", "2", "-duration", "2s", "-warmup", "100ms",
		"-results", t.TempDir(), "-thresholds", "none"}))
	require.NoError(t, cfg.Normalize())
	cfg.Repeats, cfg.ConcurrencySet = 1, true
	saved := mb
	mb = suite.NewWithConfig(cfg)
	defer func() { mb = saved }()
	// go test without -bench: this binary's TestMain set nothing up, and a
	// benchmark never sets up a target itself.
	own := mb
	t.Cleanup(func() { _, _ = own.TearDown(context.Background(), nil) })
	require.NoError(t, own.SetUp(context.Background()))
	scenarios := map[string]func(*testing.B){
		"BenchmarkOneHop": BenchmarkOneHop, "BenchmarkTwoHop": BenchmarkTwoHop, "BenchmarkPlacement": BenchmarkPlacement,
		"BenchmarkProxyThreads": BenchmarkProxyThreads, "BenchmarkServiceTime": BenchmarkServiceTime,
		"BenchmarkPayload": BenchmarkPayload, "BenchmarkRateLadder": BenchmarkRateLadder, "BenchmarkProxyKilled": BenchmarkProxyKilled,
		"BenchmarkProtocols": BenchmarkProtocols, "BenchmarkUserFlow": BenchmarkUserFlow, "BenchmarkConnectionChurn": BenchmarkConnectionChurn,
	}
	start := time.Now()
	for _, name := range slices.Sorted(maps.Keys(scenarios)) {
		mb.Name = name
		testing.Benchmark(scenarios[name])
	}
	t.Logf("every scenario in %v", time.Since(start).Round(time.Second))
	defer checkInvalidRuns(t)

	got := map[string][]report.Record{}
	for _, r := range mb.Records() {
		got[r.Benchmark] = append(got[r.Benchmark], r)
	}
	for name := range scenarios {
		assert.NotEmpty(t, got[name], "%s recorded nothing", name)
	}
	keys := func(name, key string) []string {
		var vs []string
		for _, r := range got[name] {
			if v := r.Labels.Value(key); len(vs) == 0 || vs[len(vs)-1] != v {
				vs = append(vs, v)
			}
		}
		return vs
	}
	assert.Equal(t, []string{"in-mesh", "out-of-mesh", "in-mesh-x4"}, keys("BenchmarkPlacement", "placement"))
	assert.Equal(t, []string{"1", "2", "default"}, keys("BenchmarkProxyThreads", "threads"))
	assert.Equal(t, []string{"128B", "1KiB", "16KiB", "100KiB"}, keys("BenchmarkPayload", "payload"))
	assert.Equal(t, []string{"50ms"}, keys("BenchmarkServiceTime", "service"))
	assert.Equal(t, []string{"h2", "grpc"}, keys("BenchmarkProtocols", "protocol"))
	assert.Equal(t, []string{"20"}, keys("BenchmarkUserFlow", "users"))
	assert.GreaterOrEqual(t, len(keys("BenchmarkRateLadder", "qps")), 1)
	for _, r := range got["BenchmarkProxyKilled"] {
		require.NotNil(t, r.Recovery, "the fault's recovery is on the record")
		assert.Positive(t, r.Recovery.Failed, "requests failed while the sidecar was down")
		assert.GreaterOrEqual(t, r.Recovery.FirstSuccess, time.Duration(0), "requests succeeded again after the restart")
		// Whether the rate was back within the window depends on the
		// machine; a run that did not recover says so and is invalid
		// (framework/testbed/local TestKilledSidecarIsRestarted checks a
		// recovery in full).
		if r.Recovery.Recovered < 0 {
			assert.Contains(t, r.Invalid.String(), "no recovery within the window")
			assert.Contains(t, r.InvalidKinds(), validity.FaultNotRecovered)
		}
	}
	for _, r := range got["BenchmarkConnectionChurn"] {
		assert.True(t, r.Workload.NewConnections, "%s: a new connection per request", r.Name())
	}
	for _, r := range got["BenchmarkPayload"] {
		assert.Equal(t, map[string]int{"128B": 128, "1KiB": 1 << 10, "16KiB": 16 << 10, "100KiB": 100 << 10}[r.Labels.Value("payload")], r.Workload.ResponseSize)
	}
}

// skipInMainJob skips a test under -bench: go test ./benchmarks -bench . is
// the main job, which runs every scenario in full, -count times (and would
// run the test -count times too); a short pass would only add minutes.
func skipInMainJob(t *testing.T) {
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		t.Skip("the main job (-bench) runs the scenarios themselves; run this test with `go test ./benchmarks`")
	}
}

// checkInvalidRuns finishes the run and allows only the invalid runs a
// loaded machine may give: a fault whose rate was not back within the
// test's short window, and a rate ladder's rung past the knee (at c=2 even
// the first rung may be; it is the ladder's finding, not a failure).
func checkInvalidRuns(t *testing.T) {
	var others []string
	for _, r := range mb.Records() {
		allowed := r.Beyond != "" || r.Benchmark == "BenchmarkProxyKilled" && r.InvalidOnly(validity.FaultNotRecovered)
		if !r.Valid() && !allowed {
			others = append(others, r.Name()+": "+r.Invalid.String())
		}
	}
	assert.Empty(t, others, "invalid runs")
	if err := mb.Finish(); err != nil {
		assert.Regexp(t, `^not a valid result: invalid runs in BenchmarkProxyKilled/c=2 \(\d+\); their reasons`, err.Error(),
			"only the fault run may fail the run")
	}
}
