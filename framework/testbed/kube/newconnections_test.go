package kube

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestNewConnectionsOnFakeCluster: a workload whose client opens a new
// connection per request reaches the loadgen pods' fortio, and every
// request arrives at the backend on a connection of its own; without it
// the loadgen keeps one connection per unit of concurrency.
func TestNewConnectionsOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	backend := fc.app(tg.arms[testbed.Baseline].ns, manifests.Backend)
	peers := func() int {
		n := 0
		backend.peers.Range(func(any, any) bool { n++; return true })
		return n
	}
	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}
	for _, fresh := range []bool{false, true} {
		loads, conns := backend.loads.Load(), peers()
		run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{NewConnections: fresh}, Window: o})
		require.NoError(t, err)
		assert.Empty(t, run.Invalid, "new connections %v", fresh)
		assert.Equal(t, fresh, run.Load.Options.NewConnections, "the workload's client is the load's")
		loads, conns = backend.loads.Load()-loads, peers()-conns
		assert.GreaterOrEqual(t, loads, run.Load.Requests, "new connections %v", fresh)
		assert.Greater(t, loads, int64(2), "more requests than the connections kept alive")
		want := 2
		if fresh {
			want = int(loads)
		}
		assert.Equal(t, want, conns, "new connections %v: connections the backend saw, for %d requests", fresh, loads)
	}
}

// TestClientReachesTheBackendOnFakeCluster: what the workload's client
// sends, a request body of -request-size's bytes and the scenario's own
// headers, goes from the spec through the loadgen pods' fortio to the
// backend of either arm, and the spec's workload is not written to.
func TestClientReachesTheBackendOnFakeCluster(t *testing.T) {
	fc, ctx, m := startFakeCluster(t)
	tg := fc.newTarget(t, Options{Mesh: m})
	require.NoError(t, tg.setUp(ctx))
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
		w := testbed.Workload{Path: testbed.OneHop, RequestSize: 4096, Headers: map[string]string{"X-Tenant": "tenant-" + string(arm)}}
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: w, Window: testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}})
		require.NoError(t, err)
		assert.Empty(t, run.Invalid, "%s", arm)
		assert.Equal(t, 4096, run.Load.Options.RequestSize, "%s: the recorded load", arm)
		assert.Equal(t, map[string]string{"X-Tenant": "tenant-" + string(arm)}, w.Headers, "%s: the target did not write into the workload", arm)
		got := fc.app(tg.arms[arm].ns, manifests.Backend).last.Load()
		require.NotNil(t, got, "%s: the backend served the load", arm)
		assert.Equal(t, http.MethodPost, got.method, "%s: a request body makes a POST", arm)
		assert.EqualValues(t, 4096, got.body, "%s: the body's bytes at the backend", arm)
		assert.Equal(t, "tenant-"+string(arm), got.header.Get("X-Tenant"), "%s: the scenario's header at the backend", arm)
	}
}
