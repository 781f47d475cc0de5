package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offsets reads whole A/A runs together, leaves a partial one out by
// name, and refuses a file that is not a gated results file.
func TestOffsetsReadsWholeRuns(t *testing.T) {
	dir := t.TempDir()
	for name, extra := range map[string]map[string]any{
		"run1": nil, "run2": nil, "run3": {"partial": "interrupted (interrupt)"},
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.Rename(resultsFile(t, steadyPairs, steadyPairs, extra), filepath.Join(dir, name, "r.json")))
	}
	var out, errb bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"offsets", "-v", dir}, &out, &errb))
	assert.Contains(t, errb.String(), filepath.Join(dir, "run3", "r.json")+" left out: the run is partial: interrupted (interrupt)")
	assert.Contains(t, out.String(), "2 whole gate runs\n")
	assert.Contains(t, out.String(), "sidecarCPUPer1kReq benchmark=BenchmarkUpgradeGate/c=8/load=max/loop=closed/path=one-hop: 2 runs, 0 of whose intervals exclude 1; per-pair SD 0.0 %; mean ratio 1.0000 (1.0000–1.0000 over the runs); no spread within the runs' pairs to compare their means against")
	assert.Contains(t, out.String(), "  run1/r.json: 1.0000 (")

	bad := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(bad, []byte("x"), 0o644))
	err := run(t.Context(), []string{"offsets", bad}, &out, &errb)
	assert.EqualError(t, err, "offsets: "+bad+": not a results file (want a name ending in .json, .json.gz, .journal.jsonl)")
	assert.Equal(t, 2, exitCode(err, &errb))
}
