package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/periodic"
	"fortio.org/fortio/rapi"
	flog "fortio.org/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/framework/load"
)

// grpcResult is what the harness decodes a run into (the kube target's
// fortioResult): fortio's RunnerResults, gRPC status codes and the
// records.
type grpcResult struct {
	periodic.RunnerResults
	RetCodes          map[int]int64
	URL               string
	SocketCount       int
	MeshbenchHDR      *load.Latencies
	MeshbenchTimeline *load.Timeline
}

// plainBackend serves the gRPC backend, plaintext, on a loopback port
// until the test ends.
func plainBackend(t *testing.T) (string, *Peers) {
	t.Helper()
	flog.SetLogLevelQuiet(flog.Error)
	peers := NewPeers(false)
	srv, err := newGRPCBackend(peers, false)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- serveGRPC(ctx, ln, srv, time.Second) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-errc)
	})
	return ln.Addr().String(), peers
}

func decodeGRPC(t *testing.T, body []byte) grpcResult {
	t.Helper()
	var res grpcResult
	require.NoError(t, json.Unmarshal(body, &res), string(body))
	require.False(t, res.Error, string(body))
	require.NotNil(t, res.DurationHistogram, string(body))
	return res
}

// TestGRPCRunClosedLoop runs fortio pings over plaintext gRPC through the
// REST API and reads the result as the harness does; the backend counts
// every ping, the uncounted first one of each connection included, from a
// peer without TLS.
func TestGRPCRunClosedLoop(t *testing.T) {
	addr, peers := plainBackend(t)
	srv := muxServer(t, peers)
	code, body := post(t, runURL(srv, "grpc://"+addr, url.Values{"payload-size": {"100"}, "timeline": {"50ms"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	res := decodeGRPC(t, body)
	h := res.DurationHistogram
	assert.Positive(t, h.Count)
	assert.Equal(t, map[int]int64{0: h.Count}, res.RetCodes, "keyed by gRPC status code, 0 is OK")
	assert.Equal(t, "meshbench gRPC ping", res.RunType)
	assert.Equal(t, "grpc://"+addr, res.URL)
	assert.Equal(t, 2, res.NumThreads)
	assert.Equal(t, 2, res.SocketCount)
	assert.Equal(t, "max", res.RequestedQPS)
	// The window's own duration, t=300ms, not fortio's default 5 s; no
	// tighter bound: beside a cold build the same window took 478 ms.
	assert.GreaterOrEqual(t, res.ActualDuration, 300*time.Millisecond)
	assert.Less(t, res.ActualDuration, 3*time.Second)
	assert.Contains(t, string(body), `"PayloadSize": 100`)
	require.NotNil(t, res.MeshbenchHDR, "field %s", HDRField)
	assert.Equal(t, h.Count, res.MeshbenchHDR.Uncorrected.Count())
	assert.Nil(t, res.MeshbenchHDR.Corrected, "a closed loop has nothing to correct")
	require.NotNil(t, res.MeshbenchTimeline, "field %s", TimelineField)
	var ok int64
	for _, n := range res.MeshbenchTimeline.OK {
		ok += n
	}
	assert.Equal(t, h.Count, ok)

	got := getPeers(t, srv.URL)
	assert.Equal(t, PeersReport{Peers: []PeerCalls{{Calls: h.Count + 2}}}, got)
}

// TestGRPCRunOpenLoop: an open-loop gRPC run has the corrected histogram,
// and hdr=off leaves the records out.
func TestGRPCRunOpenLoop(t *testing.T) {
	addr, _ := plainBackend(t)
	srv := muxServer(t, nil)
	code, body := post(t, runURL(srv, "grpc://"+addr, url.Values{"qps": {"100"}, "t": {"500ms"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	res := decodeGRPC(t, body)
	assert.Equal(t, "100", res.RequestedQPS)
	assert.False(t, res.NoCatchUp, "no nocatchup in the query (the harness sends none): it catches up")
	require.NotNil(t, res.MeshbenchHDR)
	unc, cor := res.MeshbenchHDR.Uncorrected, res.MeshbenchHDR.Corrected
	assert.Equal(t, res.DurationHistogram.Count, unc.Count())
	assert.Equal(t, res.DurationHistogram.Count, res.RetCodes[0])
	require.NotNil(t, cor)
	assert.GreaterOrEqual(t, cor.Count(), unc.Count())
	assert.LessOrEqual(t, cor.Count(), int64(50), "no more than the 100 req/s × 0.5 s scheduled")

	code, body = post(t, runURL(srv, "grpc://"+addr, url.Values{"hdr": {"off"}, "n": {"10"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	res = decodeGRPC(t, body)
	assert.Nil(t, res.MeshbenchHDR)
	assert.Equal(t, map[int]int64{0: 10}, res.RetCodes)
}

// TestGRPCRunErrors: a run that cannot start answers fortio's jrpc error.
func TestGRPCRunErrors(t *testing.T) {
	srv := muxServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct{ url, extra, want string }{
		{"xds://istiod/backend:8079", "", "want xds:///host:port"},
		{"grpc://backend", "", `want host:port, got "backend"`},
		{"grpc://backend:8079/ping", "", "want grpc://host:port"},
		{"grpc://" + closed, "", "first ping to dns:///" + closed + " on connection 1 of 2"},
		{"grpc://" + closed, "soon", `payload-size="soon"`},
		{"grpc://" + closed, "5000000", "payload-size=5000000: want at most 4193280 bytes"},
	} {
		extra := url.Values{}
		if tc.extra != "" {
			extra.Set("payload-size", tc.extra)
		}
		code, body := post(t, runURL(srv, tc.url, extra))
		assert.Equal(t, http.StatusBadRequest, code, tc.url)
		var reply struct {
			Error     bool   `json:"error"`
			Message   string `json:"message"`
			Exception string `json:"exception"`
		}
		require.NoError(t, json.Unmarshal(body, &reply), string(body))
		assert.True(t, reply.Error, tc.url)
		assert.Contains(t, reply.Exception, tc.want, tc.url)
	}
	n, _ := rapi.RunMetrics()
	assert.Zero(t, n, "no run left in fortio's list")
}

// TestGRPCRunStops: /fortio/rest/stop ends a gRPC run, which still answers
// its result.
func TestGRPCRunStops(t *testing.T) {
	addr, _ := plainBackend(t)
	srv := muxServer(t, nil)
	done := make(chan grpcResult, 1)
	go func() {
		_, body := post(t, runURL(srv, "grpc://"+addr, url.Values{"t": {"20s"}, "c": {"1"}, "qps": {"50"}}))
		var res grpcResult
		_ = json.Unmarshal(body, &res)
		done <- res
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		n, _ := rapi.RunMetrics()
		return n > 0, nil
	}))
	code, _ := post(t, srv.URL+"/fortio/rest/stop")
	assert.Equal(t, http.StatusOK, code)
	select {
	case res := <-done:
		assert.False(t, res.Error)
		assert.Less(t, res.ActualDuration, 10*time.Second)
	case <-ctx.Done():
		t.Fatal("the stopped run did not answer")
	}
}

// TestPingServer: the backend echoes the payload after DelayNanos, and
// its health service says SERVING.
func TestPingServer(t *testing.T) {
	addr, peers := plainBackend(t)
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	out, err := fgrpc.NewPingServerClient(cc).Ping(ctx, &fgrpc.PingMessage{Seq: 7, Payload: "abc", DelayNanos: int64(30 * time.Millisecond)})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	assert.Equal(t, int64(7), out.GetSeq())
	assert.Equal(t, "abc", out.GetPayload())
	assert.WithinRange(t, time.Unix(0, out.GetTs()), start, time.Now())
	for _, svc := range []string{"", fgrpc.DefaultHealthServiceName} {
		hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err, svc)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, hr.GetStatus(), svc)
	}
	assert.Equal(t, []PeerCalls{{Calls: 1}}, peers.Report().Peers, "health checks are not counted")
}

func getPeers(t *testing.T, base string) PeersReport {
	t.Helper()
	resp, err := http.Get(base + PeersPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r PeersReport
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return r
}

// TestServeGRPCBackend: -grpc-listen serves the plaintext backend beside
// the HTTP listener, whose /meshbench/peers counts its calls, and both
// stop when the context ends.
func TestServeGRPCBackend(t *testing.T) {
	t.Setenv(BootstrapEnv, "")
	t.Setenv(BootstrapConfigEnv, "")
	flog.SetLogLevelQuiet(flog.Error)
	o := options{listen: addrOf(freePort(t)), grpcListen: addrOf(freePort(t))}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, o) }()
	waitHealthy(t, "http://"+o.listen+HealthPath)
	require.NoError(t, healthCheck(ctx, o.grpcListen, insecure.NewCredentials()))
	cc, err := grpc.NewClient("passthrough:///"+o.grpcListen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	for range 3 {
		_, err := fgrpc.NewPingServerClient(cc).Ping(ctx, &fgrpc.PingMessage{})
		require.NoError(t, err)
	}
	assert.Equal(t, PeersReport{Peers: []PeerCalls{{Calls: 3}}}, getPeers(t, "http://"+o.listen))
	cancel()
	assert.NoError(t, <-errc)
}

// TestPeersWithoutBackend: without -grpc-listen, /meshbench/peers answers
// an empty list.
func TestPeersWithoutBackend(t *testing.T) {
	srv := server(t)
	resp, err := http.Get(srv.URL + PeersPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.JSONEq(t, `{"xds": false, "peers": []}`, string(b))
}

// TestGRPCRunCountsStatusCodes: calls that a server answers with an error
// status are counted under that gRPC code, and the run is not refused.
func TestGRPCRunCountsStatusCodes(t *testing.T) {
	gs := grpc.NewServer() // health only: Ping is Unimplemented
	healthpb.RegisterHealthServer(gs, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	srv := server(t)
	code, body := post(t, runURL(srv, "grpc://"+ln.Addr().String(), url.Values{"n": {"10"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	res := decodeGRPC(t, body)
	assert.Equal(t, map[int]int64{int(codes.Unimplemented): 10}, res.RetCodes)
	assert.Equal(t, int64(10), res.DurationHistogram.Count)
}
