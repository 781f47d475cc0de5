package load

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lines go whole to the file; messages are counted with their numbers
// masked, most frequent first, and a Drain starts afresh.
func TestLogTallyCountsDistinctMessages(t *testing.T) {
	var file bytes.Buffer
	tl := &LogTally{w: &file, counts: map[string]int{}}
	lines := `{"ts":1.5,"level":"err","msg":"Unable to connect to 127.0.0.1:41234: connection refused"}
{"ts":1.6,"level":"err","msg":"Unable to connect to 127.0.0.1:41235: connection refused"}
{"ts":1.7,"level":"warn","msg":"Content-length missing"}
plain text 42
{"ts":1.8,"level":"err","msg":"Unable to connect to 127.0.0.1:41236: connection refused"}
`
	n, err := tl.Write([]byte(lines))
	require.NoError(t, err)
	assert.Equal(t, len(lines), n)
	assert.Equal(t, lines, file.String())
	got := tl.Drain()
	assert.Equal(t, []ErrorCount{
		{"Unable to connect to N.N.N.N:N: connection refused", 3},
		{"Content-length missing", 1},
		{"plain text N", 1},
	}, got)
	assert.Equal(t, `5 loadgen log lines: 3× "Unable to connect to N.N.N.N:N: connection refused", 1× "Content-length missing", and 1 other messages`,
		Summary(got, 2))
	assert.Empty(t, tl.Drain())
	assert.Equal(t, "", Summary(nil, 3))
}
