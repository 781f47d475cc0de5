package suite

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
)

// TestKubeOptionsLoadgenLog: a cluster target writes its loadgen pods'
// logs to the suite's loadgen log, the tally drainLog summarises; without
// a journal (no -bench) it writes them nowhere, not to a nil tally.
func TestKubeOptionsLoadgenLog(t *testing.T) {
	c := &Config{Target: "remote", Mesh: "none"}
	s := &Suite{}
	o, err := s.kubeOptions(c, nil)
	require.NoError(t, err)
	assert.Nil(t, o.LoadgenLog)

	var file bytes.Buffer
	s.loadLog = load.NewLogTally(&file)
	o, err = s.kubeOptions(c, nil)
	require.NoError(t, err)
	assert.Same(t, s.loadLog, o.LoadgenLog)
	assert.Equal(t, "remote", o.Name)
}
