package ceiling

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeWrk writes a script that prints out as wrk would, and returns its path.
func fakeWrk(t *testing.T, out string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wrk")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\ncat <<'END'\n"+out+"END\n"), 0o755))
	return p
}

// TestWrkReadsItsSummary takes the rate and the request count from wrk's
// summary, and refuses output without them.
func TestWrkReadsItsSummary(t *testing.T) {
	wrk := fakeWrk(t, "Running 1s test @ http://127.0.0.1:1/\n  2 threads and 4 connections\n"+
		"  24680 requests in 1.00s, 3.01MB read\nRequests/sec:  24680.50\nTransfer/sec:      3.01MB\n")
	r, err := Wrk(context.Background(), wrk, "http://127.0.0.1:1/", 4, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 24680.5, r.QPS)
	assert.Zero(t, r.NodePercent)

	_, err = Wrk(context.Background(), fakeWrk(t, "unable to connect to 127.0.0.1:1\n"), "http://127.0.0.1:1/", 4, time.Second)
	// wrk's own output follows, to say why.
	assert.EqualError(t, err, "wrk printed no Requests/sec or request count:\nunable to connect to 127.0.0.1:1\n")
}
