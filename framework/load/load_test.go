package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestNormalizeDefaults(t *testing.T) {
	o := Options{URL: "http://127.0.0.1:8080/"}
	require.NoError(t, o.Normalize())
	assert.Equal(t, Options{
		URL: "http://127.0.0.1:8080/", Concurrency: 1, Duration: 5 * time.Second, Warmup: time.Second,
		Protocol: HTTP1, Timeout: 3 * time.Second, Resolution: stats.DefaultResolution, RateTolerance: 0.05,
	}, o)
	assert.True(t, o.ClosedLoop())
	o = Options{URL: "http://x:1/", Warmup: -1, QPS: 100}
	require.NoError(t, o.Normalize())
	assert.Zero(t, o.Warmup, "negative warm-up means none")
	assert.False(t, o.ClosedLoop())
}

func TestNormalizeErrors(t *testing.T) {
	o := Options{URL: "https://x/", Concurrency: -1, QPS: -2, Duration: -time.Second, Protocol: "spdy",
		RequestSize: -1, RateTolerance: 1.5, MaxErrorRate: -0.1}
	err := o.Normalize()
	require.Error(t, err)
	for _, want := range []string{
		`url "https://x/": want http://host:port/path`,
		"concurrency -1: must be >= 1",
		"qps -2: must be >= 0 (0 is closed loop at max rate)",
		"duration -1s: must be > 0",
		`unknown protocol "spdy": want http1, h2 or grpc`,
		"request size -1: must be >= 0",
		"rate tolerance 1.5: must be in [0, 1)",
		"max error rate -0.1: must be in [0, 1)",
	} {
		assert.Contains(t, err.Error(), want)
	}
	o = Options{}
	assert.EqualError(t, o.Normalize(), "url: missing")
	o = Options{URL: "http://x:1/", Protocol: GRPC, NewConnections: true}
	assert.EqualError(t, o.Normalize(), "new connections: protocol grpc multiplexes requests over one connection; a new connection per request is http1 only")
	o = Options{URL: "http://x:1/", NewConnections: true, Flow: &Flow{Users: 1, Steps: []Step{{Name: "home", Path: "/"}}}}
	assert.EqualError(t, o.Normalize(), "new connections: a flow's users keep their connections alive; a new connection per request drives connections, not a flow")
	o = Options{URL: "http://x:1/", NewConnections: true}
	assert.NoError(t, o.Normalize(), "http1 opens a new connection per request")
}

// TestNormalizeGRPCTargets: a grpc load may name its target as a remote
// loadgen dials it, plain (grpc://host:port) or through its xDS client
// (xds:///host:port); other protocols, and other forms, are refused.
func TestNormalizeGRPCTargets(t *testing.T) {
	for _, u := range []string{"grpc://backend.ns.svc.cluster.local:8079", "xds:///backend.ns.svc.cluster.local:8079", "http://x:1/"} {
		o := Options{URL: u, Protocol: GRPC}
		assert.NoError(t, o.Normalize(), u)
	}
	for _, c := range []struct {
		url   string
		proto Protocol
	}{{"grpc://x:1", HTTP1}, {"xds:///x:1", H2}, {"xds://x:1", GRPC}, {"xds:///", GRPC}, {"grpc:///x:1", GRPC}} {
		o := Options{URL: c.url, Protocol: c.proto}
		assert.EqualError(t, o.Normalize(), fmt.Sprintf("url %q: want http://host:port/path", c.url), "%s %s", c.proto, c.url)
	}
}

func TestParseProtocol(t *testing.T) {
	for in, want := range map[string]Protocol{"http1": HTTP1, "HTTP/1.1": HTTP1, "h1": HTTP1, "h2": H2, "H2": H2, "h2c": H2,
		"http2": H2, "grpc": GRPC, "gRPC": GRPC} {
		got, err := ParseProtocol(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseProtocol("h3")
	assert.EqualError(t, err, `unknown protocol "h3": want http1, h2 or grpc`)
	assert.False(t, HTTP1.HTTP2())
	assert.True(t, H2.HTTP2())
	assert.True(t, GRPC.HTTP2())
}

func TestJudge(t *testing.T) {
	o := Options{URL: "http://x:1/", QPS: 1000}
	require.NoError(t, o.Normalize())
	ok := &Result{Requests: 1000, AchievedQPS: 960, Codes: map[int]int64{200: 1000}}
	assert.Empty(t, o.Judge(ok), "4% under target is within the 5% tolerance")
	slow := &Result{Requests: 1000, AchievedQPS: 940, Codes: map[int]int64{200: 1000}}
	assert.Equal(t, validity.Reasons{{Kind: validity.MissedRate, Detail: "missed target rate: achieved 940.0 req/s of 1000.0 (tolerance 5%); the loadgen slowed down with the system, so latency is understated (coordinated omission)"}}, o.Judge(slow))
	errs := &Result{Requests: 1000, Errors: 3, AchievedQPS: 1000, Codes: map[int]int64{200: 997, 503: 2, -1: 1}}
	assert.Equal(t, validity.Reasons{{Kind: validity.Errors, Detail: "errors: 3 of 1000 requests failed (codes -1:1 200:997 503:2)"}}, o.Judge(errs))
	assert.Equal(t, validity.Reasons{{Kind: validity.NoRequests, Detail: "no request completed"}}, o.Judge(&Result{AchievedQPS: 1000}))
	closed := Options{URL: "http://x:1/"}
	require.NoError(t, closed.Normalize())
	assert.Empty(t, closed.Judge(&Result{Requests: 5, AchievedQPS: 1}), "a closed loop has no target rate to miss")
}

// TestRunAgainstRealServer runs a short real load against a server on port
// 0 and checks counts, headers, resolution and the open-loop verdict.
func TestRunAgainstRealServer(t *testing.T) {
	var gotHeader atomic.Value // handlers run concurrently
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("X-Test"))
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	res, err := Run(ctx, Options{URL: srv.URL + "/", Concurrency: 2, QPS: 200, Duration: 500 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Headers: map[string]string{"X-Test": "yes"}})
	require.NoError(t, err)
	assert.Equal(t, "yes", gotHeader.Load())
	assert.Equal(t, res.Requests, res.Codes[200])
	assert.Equal(t, res.Requests, res.Latency.Count)
	assert.Positive(t, res.Requests)
	// An open loop never exceeds its rate (it may fall short on a busy
	// machine, which Judge then reports; see TestJudge).
	assert.LessOrEqual(t, res.Requests, int64(200*0.5)+2)
	assert.Equal(t, 200.0, res.TargetQPS)
	require.NotNil(t, res.HDR)
	assert.Equal(t, res.Requests, res.HDR.Uncorrected.Count(), "HDR holds every request, as fortio's histogram")
	require.NotNil(t, res.HDR.Corrected, "open loop: corrected for coordinated omission")
	assert.GreaterOrEqual(t, res.HDR.Corrected.Count(), res.Requests)
	assert.Equal(t, FromCorrected, res.LatencySource())

	bad, err := Run(ctx, Options{URL: srv.URL + "/fail", Duration: 200 * time.Millisecond, Warmup: -1})
	require.NoError(t, err)
	assert.Equal(t, bad.Requests, bad.Errors)
	require.Len(t, bad.Invalid, 1)
	assert.Equal(t, validity.Errors, bad.Invalid[0].Kind)
	assert.Contains(t, bad.Invalid[0].Detail, "requests failed (codes 503:")
	require.NotNil(t, bad.HDR)
	assert.Nil(t, bad.HDR.Corrected, "closed loop: no intended send times")
	assert.Equal(t, bad.Requests, bad.HDR.Uncorrected.Count())
	assert.Equal(t, FromUncorrected, bad.LatencySource())
	assert.Equal(t, bad.HDR.Uncorrected.Percentile(50), bad.Percentile(50))

	plain, err := Run(ctx, Options{URL: srv.URL + "/", Duration: 200 * time.Millisecond, Warmup: -1, NoHDR: true})
	require.NoError(t, err)
	assert.Nil(t, plain.HDR)
	assert.Equal(t, FromFortio, plain.LatencySource())
	assert.Equal(t, stats.Percentile(plain.Latency, 90), plain.Percentile(90))
	assert.Equal(t, plain.Latency.Max, plain.Max())

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Run(cctx, Options{URL: srv.URL + "/", Duration: 5 * time.Second, Warmup: -1})
	assert.ErrorIs(t, err, context.Canceled)
}
