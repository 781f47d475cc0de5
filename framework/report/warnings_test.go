package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestWarningsStored: a results file stores each warning as its kind and
// detail, and still reads the plain strings that files held before
// warnings were typed, as warnings of kind unknown.
func TestWarningsStored(t *testing.T) {
	dir := t.TempDir()
	run := &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Load: &load.Result{Requests: 1}}
	run.Warn(validity.NodeSaturated, "node %s CPU at %.0f%% of %d cores: the machine, not only the mesh, is the ceiling", "local", 97.0, 2)
	run.Warn(validity.CPUIncomplete, "CPU not measured: %s", "node: samples are not in time order or not refreshed")
	data, back := writeOne(t, dir, run)
	assert.Contains(t, data, `
   "warnings": [
    {
     "kind": "node-saturated",
     "detail": "node local CPU at 97% of 2 cores: the machine, not only the mesh, is the ceiling"
    },
    {
     "kind": "cpu-incomplete",
     "detail": "CPU not measured: node: samples are not in time order or not refreshed"
    }
   ]`)
	assert.Equal(t, run.Warnings, back.Warnings)
	assert.True(t, back.Warnings.Has(validity.CPUIncomplete))

	old := readOldRecord(t, dir, `"load":{"requests":1},"warnings":["the fault failed no request","pinned thread: sidecar (sidecar): one thread at 950m of 1000m"]`)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Unknown, Detail: "the fault failed no request"},
		{Kind: validity.Unknown, Detail: "pinned thread: sidecar (sidecar): one thread at 950m of 1000m"},
	}, old.Warnings)
	assert.False(t, old.Warnings.Has(validity.FaultNoFailures), "an old file's warning has no kind but unknown")
	assert.Empty(t, old.Invalid)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"schema":"meshbench.results/v2","records":[{"benchmark":"BenchmarkOneHop","warnings":[7]}]}`), 0o644))
	_, err := report.Read(bad)
	assert.EqualError(t, err, bad+`: decode results: invalid reason: want a string or {"kind","detail"}: json: cannot unmarshal number into Go value of type validity.plain`)
}

// TestRecordedWarningsRead: the recorded results file, written before
// warnings were typed, reads its warnings as kind unknown, word for word.
func TestRecordedWarningsRead(t *testing.T) {
	res, err := report.Read("testdata/local.json")
	require.NoError(t, err)
	require.NotEmpty(t, res.Records)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Unknown, Detail: "node local CPU at 100% of 2 cores: the machine, not only the mesh, is the ceiling"},
	}, res.Records[0].Warnings)
}
