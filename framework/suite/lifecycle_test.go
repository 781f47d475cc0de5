package suite_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lifecycleBinary builds testdata/lifecycle once.
var lifecycleBinary = testBinary("lifecycle")

// runLifecycle runs the lifecycle binary as go test -bench would, its
// TestMain's Setup without the env func named without (none when
// empty), and returns its output and exit code.
func runLifecycle(t *testing.T, without string) (string, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a benchmark binary")
	}
	bin, err := lifecycleBinary()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), bin, "-test.v", "-test.run", "^$", "-test.bench", ".", "-test.count", "1",
		"-target", "local", "-results", t.TempDir(), "-thresholds", "none")
	cmd.Env = append(os.Environ(), "LIFECYCLE_WITHOUT="+without)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, "%s", out)
	return string(out), 0
}

// The env funcs are the control, in a real benchmark binary (e2e-framework
// and testing.M): SetUpTarget builds the target once, before the benchmark
// runs, which finds it; TearDown closes it once, after; Run does not tear
// down again. testing.M's benchmarks are read for the plan (by reflection,
// selectedBenchmarks): if that stops finding them, the plan line fails.
func TestLifecycleSetsUpAndTearsDownOnce(t *testing.T) {
	out, code := runLifecycle(t, "")
	assert.Equal(t, 0, code, "%s", out)
	assert.Equal(t, 1, strings.Count(out, "lifecycle: target built\n"), "%s", out)
	assert.Equal(t, 1, strings.Count(out, "lifecycle: target closed\n"), "%s", out)
	built, bench, closed := strings.Index(out, "lifecycle: target built"), strings.Index(out, "lifecycle: benchmark"), strings.Index(out, "lifecycle: target closed")
	assert.True(t, built < bench && bench < closed, "built, benchmark, closed, in that order: %s", out)
	assert.Contains(t, out, "# meshbench: plan: 1 benchmarks (BenchmarkLifecycle), no deadline")
	assert.Contains(t, out, "meshbench-no-such-program is not on PATH", "the benchmark found the target, then skipped")
	assert.NotContains(t, out, "TearDown did not run")
}

// A TestMain whose Setup lacks SetUpTarget: the benchmark fails naming it,
// and no target is built behind its back.
func TestLifecycleWithoutSetUpTargetNamesIt(t *testing.T) {
	out, code := runLifecycle(t, "SetUpTarget")
	assert.Equal(t, 1, code, "%s", out)
	assert.Contains(t, out, "# meshbench: FAIL: target local: no target: SetUpTarget did not run; list CheckFixtures, CreateCluster, LoadImages and SetUpTarget in the environment's Setup, in that order")
	assert.NotContains(t, out, "lifecycle: target built")
	assert.NotContains(t, out, "lifecycle: target closed")
}
