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

// TestInvalidReasonsStored: a results file stores each invalid reason as
// its kind and detail, and still reads the plain strings that files held
// before reasons were typed.
func TestInvalidReasonsStored(t *testing.T) {
	dir := t.TempDir()
	run := &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Load: &load.Result{Requests: 1}}
	run.Load.Invalid.Add(validity.MissedRate, "missed target rate: achieved %.1f req/s of %.1f", 940.0, 1000.0)
	run.Invalid = append(run.Invalid, run.Load.Invalid...)
	run.Invalidate(validity.Restart, "restart during the window: %s", "meshed/backend")
	data, back := writeOne(t, dir, run)
	assert.Contains(t, data, `
   "invalid": [
    {
     "kind": "missed-rate",
     "detail": "missed target rate: achieved 940.0 req/s of 1000.0"
    },
    {
     "kind": "restart",
     "detail": "restart during the window: meshed/backend"
    }
   ]`)
	assert.Equal(t, run.Invalid, back.Invalid)
	assert.Equal(t, run.Load.Invalid, back.Load.Invalid)

	old := readOldRecord(t, dir, `"load":{"requests":1,"invalid":["no request completed"]},"invalid":["no request completed","mTLS not verified: no proxy"]`)
	assert.Equal(t, validity.Reasons{{Kind: validity.Unknown, Detail: "no request completed"}, {Kind: validity.Unknown, Detail: "mTLS not verified: no proxy"}}, old.Invalid)
	assert.Equal(t, validity.Reasons{{Kind: validity.Unknown, Detail: "no request completed"}}, old.Load.Invalid)
}

// writeOne writes a results file holding one record of run and returns
// the file's text and the record read back from it.
func writeOne(t *testing.T, dir string, run *testbed.Run) (string, report.Record) {
	t.Helper()
	path, err := report.Write(dir, &report.Results{Schema: report.Schema, Records: []report.Record{{Benchmark: "BenchmarkOneHop", Run: run}}})
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	back, err := report.Read(path)
	require.NoError(t, err)
	require.Len(t, back.Records, 1)
	return string(data), back.Records[0]
}

// readOldRecord reads a results file, as files were written before reasons
// and warnings were typed, whose one meshed one-hop record ends in fields
// (JSON members, without braces), and returns that record.
func readOldRecord(t *testing.T, dir, fields string) report.Record {
	t.Helper()
	old := filepath.Join(dir, "old.json")
	require.NoError(t, os.WriteFile(old, []byte(`{"schema":"meshbench.results/v2","records":[{"benchmark":"BenchmarkOneHop","concurrency":1,"repeat":0,"arm":"meshed","path":"one-hop",`+
		fields+`}]}`), 0o644))
	back, err := report.Read(old)
	require.NoError(t, err)
	require.Len(t, back.Records, 1)
	return back.Records[0]
}
