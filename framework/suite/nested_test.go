package suite_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
)

// TestNestedSweepKeepsEveryRecord drives Main, in a built benchmark
// binary, with a sweep nested in the caller's own b.Run (qps) around an
// axis (payload): every record and every comparison keeps its own labels,
// none overwritten by another.
func TestNestedSweepKeepsEveryRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a benchmark binary with real processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nested.test")
	build := exec.CommandContext(t.Context(), "go", "test", "-c", "-o", bin, "./testdata/nested")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	results := filepath.Join(dir, "results")
	run := exec.CommandContext(t.Context(), bin, "-test.run", "^$", "-test.bench", ".", "-test.count", "1",
		"-target", "local", "-concurrency", "2", "-duration", "400ms", "-warmup", "100ms", "-results", results, "-thresholds", "none")
	// The exit code is not asserted: on a busy machine an open-loop run may
	// miss its rate and fail the verdict; the records are what is checked.
	out, _ = run.CombinedOutput()

	files, err := filepath.Glob(filepath.Join(results, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1, "%s", out)
	res, err := report.Read(files[0])
	require.NoError(t, err)
	var names []string
	for _, r := range res.Records {
		names = append(names, r.Name())
	}
	assert.ElementsMatch(t, []string{
		"BenchmarkNested/qps=50/payload=128B/c=2/arm=baseline", "BenchmarkNested/qps=50/payload=128B/c=2/arm=meshed",
		"BenchmarkNested/qps=50/payload=1KiB/c=2/arm=baseline", "BenchmarkNested/qps=50/payload=1KiB/c=2/arm=meshed",
		"BenchmarkNested/qps=100/payload=128B/c=2/arm=baseline", "BenchmarkNested/qps=100/payload=128B/c=2/arm=meshed",
		"BenchmarkNested/qps=100/payload=1KiB/c=2/arm=baseline", "BenchmarkNested/qps=100/payload=1KiB/c=2/arm=meshed",
	}, names)
	var scenarios []string
	for _, c := range res.Comparisons {
		scenarios = append(scenarios, c.Scenario())
		assert.Equal(t, 1, c.Baseline.Repeats, c.Scenario())
		assert.Equal(t, 1, c.Meshed.Repeats, c.Scenario())
	}
	assert.Equal(t, []string{
		"BenchmarkNested/qps=50/payload=128B/c=2", "BenchmarkNested/qps=50/payload=1KiB/c=2",
		"BenchmarkNested/qps=100/payload=128B/c=2", "BenchmarkNested/qps=100/payload=1KiB/c=2",
	}, scenarios)
	// Each record ran the load its labels say: the rate and the payload.
	for _, r := range res.Records {
		assert.Equal(t, r.Labels.Value("qps"), trimFloat(r.Load.Options.QPS), r.Name())
		size := map[string]int{"128B": 128, "1KiB": 1024}[r.Labels.Value("payload")]
		assert.Equal(t, size, r.Workload.ResponseSize, r.Name())
	}
	_ = os.RemoveAll(results)
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
