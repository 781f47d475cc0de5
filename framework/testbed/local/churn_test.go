package local_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/local"
)

// churnLoad is a short window for the connection counts: two users.
var churnLoad = testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond}

// TestPathProofCountsConnections runs a client that keeps its connections
// alive and one that opens a new connection per request, in both arms over
// two hops, with each sidecar that is installed. The path proof counts the
// client's connections one per request in the baseline; in the meshed arm
// the first edge counts the mTLS connections into the frontend's sidecar,
// which the loadgen's sidecar keeps pooled whatever the client does.
func TestPathProofCountsConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and proxies; run without -short")
	}
	for _, proxy := range []string{"caddy", "nginx", "haproxy", "envoy"} {
		t.Run(proxy, func(t *testing.T) {
			if _, err := exec.LookPath(proxy); err != nil && proxy != "caddy" {
				t.Skipf("%s is not on PATH", proxy)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			tg, err := local.New(ctx, local.Options{Sidecar: arms.Spec{Proxy: proxy}, Logf: t.Logf})
			require.NoError(t, err)
			defer func() { require.NoError(t, tg.Close(ctx)) }()
			for _, churn := range []bool{false, true} {
				for _, arm := range testbed.Arms {
					w := testbed.Workload{Path: testbed.TwoHop, NewConnections: churn}
					run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: w, Window: churnLoad})
					require.NoError(t, err)
					logEdges(t, proxy, arm, churn, run)
					require.Len(t, run.Edges, 2)
					first, second := run.Edges[0], run.Edges[1]
					if arm == testbed.Baseline && churn {
						assertPerRequest(t, first, "the baseline's client opens one connection per request into the frontend")
					} else {
						assertPooled(t, first, "%s %s, new connections %v: the first hop's connections are pooled", proxy, arm, churn)
					}
					assertPooled(t, second, "%s %s, new connections %v: the frontend pools its connections", proxy, arm, churn)
				}
			}
		})
	}
}

// TestNoKeepAliveChurnsTheMTLSHop: with caddy+no-keepalive the loadgen's
// sidecar opens a new mTLS connection per request, and the path proof
// counts one per request on the meshed edge although the client and the
// backend's sidecar keep theirs alive: the count is the mTLS hop's, as the
// backend's sidecar names it (workload.ConnHeader).
func TestNoKeepAliveChurnsTheMTLSHop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and Caddy; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tg, err := local.New(ctx, local.Options{Candidate: &arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.NoKeepAlive}}, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: churnLoad})
		require.NoError(t, err)
		logEdges(t, "caddy", arm, false, run)
		require.Len(t, run.Edges, 1)
		if arm == testbed.Candidate {
			assertPerRequest(t, run.Edges[0], "+no-keepalive: a new mTLS connection per request")
		} else {
			assertPooled(t, run.Edges[0], "the reference's sidecars pool their mTLS connections")
		}
	}
}

func logEdges(t *testing.T, proxy string, arm testbed.Arm, churn bool, run *testbed.Run) {
	t.Helper()
	var b bytes.Buffer
	testbed.PrintEdges(&b, run.Edges)
	t.Logf("%s %s, new connections %v: %d requests, invalid=%v\n%s", proxy, arm, churn, run.Load.Requests, run.Invalid, b.String())
	assert.Empty(t, run.Invalid)
}

// assertPerRequest wants one connection per request on e: each request's
// own, plus at most the users' open connections counted again each time
// the counter's set of connections is cut (every 4096).
func assertPerRequest(t *testing.T, e testbed.Edge, msg string) {
	t.Helper()
	slack := int64(churnLoad.Concurrency) * (1 + e.Requests/4096)
	assert.True(t, e.Connections >= e.Requests && e.Connections <= e.Requests+slack,
		"%s → %s: %s, got %d connections for %d requests", e.Src, e.Dst, msg, e.Connections, e.Requests)
}

// assertPooled wants e's requests on a pool: at least one connection, at
// most a fifth of the requests (nginx's pool is per worker, one worker
// per core).
func assertPooled(t *testing.T, e testbed.Edge, format string, args ...any) {
	t.Helper()
	assert.True(t, e.Connections >= 1 && e.Connections*5 <= e.Requests,
		"%s → %s: %d connections for %d requests: %s", e.Src, e.Dst, e.Connections, e.Requests, fmt.Sprintf(format, args...))
}
