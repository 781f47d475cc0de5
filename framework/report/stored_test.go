package report_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A stored reference is checked like a report's input, may be an upgrade
// gate's run, and comes with the digest of the exact bytes read.
func TestOpenStored(t *testing.T) {
	data, err := os.ReadFile(recorded)
	require.NoError(t, err)
	r, sum, err := report.OpenStored(recorded)
	require.NoError(t, err)
	want := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(want[:]), sum)
	assert.Equal(t, "20261130T171226Z-local", r.RunID(), "its started time and target")

	dir := t.TempDir()
	gateRun := filepath.Join(dir, "gate.json")
	require.NoError(t, os.WriteFile(gateRun, bytes.ReplaceAll(data, []byte(`"arm": "meshed"`), []byte(`"arm": "candidate"`)), 0o644))
	r, _, err = report.OpenStored(gateRun)
	require.NoError(t, err)
	assert.Equal(t, testbed.Candidate, r.Records[1].Arm)
	ins, err := report.Open(gateRun)
	require.NoError(t, err, "meshbench report takes an upgrade gate's run too")
	assert.Equal(t, testbed.Candidate, ins[0].Results.Records[1].Arm)

	odd := filepath.Join(dir, "odd.json")
	require.NoError(t, os.WriteFile(odd, bytes.Replace(data, []byte(`"arm": "meshed"`), []byte(`"arm": "sidecar"`), 1), 0o644))
	_, _, err = report.OpenStored(odd)
	assert.EqualError(t, err, odd+`: records[1].arm: "sidecar", want baseline, meshed, reference or candidate`)
	_, err = report.Open(odd)
	assert.EqualError(t, err, odd+`: records[1].arm: "sidecar", want baseline, meshed, reference or candidate`)
	_, _, err = report.OpenStored(filepath.Join(dir, "missing.json"))
	assert.EqualError(t, err, filepath.Join(dir, "missing.json")+": open "+filepath.Join(dir, "missing.json")+": no such file or directory")
}
