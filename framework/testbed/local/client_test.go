package local_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/workload"
)

// TestClientReachesTheBackend: what the workload's client sends, a
// request body and the scenario's own headers, arrives at the backend in
// both arms, through the sidecars in the meshed one, beside the source
// header the path proof reads.
func TestClientReachesTheBackend(t *testing.T) {
	tg := newTarget(t)
	for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
		w := testbed.Workload{Path: testbed.OneHop, RequestSize: 4096, Headers: map[string]string{"X-Tenant": "tenant-" + string(arm)}}
		run, err := tg.Run(t.Context(), testbed.Spec{Arm: arm, Workload: w,
			Window: testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}})
		require.NoError(t, err)
		assert.Zero(t, run.Load.Errors, "%s", arm) // not run.Invalid: a busy machine is not this test's business
		assert.Equal(t, 4096, run.Load.Options.RequestSize, "%s: the recorded load", arm)
		assert.Equal(t, map[string]string{"X-Tenant": "tenant-" + string(arm)}, w.Headers, "%s: the target did not write into the workload", arm)

		first := backendFirst(t, tg.URL(arm, testbed.OneHop), "loadgen")
		assert.Equal(t, http.MethodPost, first.Method, "%s: a request body makes a POST", arm)
		assert.EqualValues(t, 4096, first.ContentLength, "%s: the body's length at the backend", arm)
		assert.Equal(t, "tenant-"+string(arm), first.Header.Get("X-Tenant"), "%s: the scenario's header at the backend", arm)
		assert.Equal(t, "loadgen", first.Header.Get(workload.SourceHeader), "%s", arm)
		wantPeer := workload.Direct
		if arm == testbed.Meshed {
			wantPeer = "loadgen" // verified by the backend's sidecar
		}
		assert.Equal(t, wantPeer, first.Peer, "%s", arm)
	}
}

// backendFirst reads, through url (the loadgen's address of a one-hop
// path, which ends at the backend), the first request the backend served
// from source.
func backendFirst(t *testing.T, url, source string) workload.First {
	t.Helper()
	resp, err := http.Get(url + workload.FirstPath[1:])
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var firsts []workload.First
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&firsts))
	for _, f := range firsts {
		if f.Source == source {
			return f
		}
	}
	require.Failf(t, "no request from "+source, "%+v", firsts)
	return workload.First{}
}
