package load

import (
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connStates counts a test server's connections by state.
type connStates struct {
	mu     sync.Mutex
	states map[http.ConnState]int
}

func (c *connStates) track(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states[s]++
}

func (c *connStates) count(s http.ConnState) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[s]
}

// TestHTTPRunnerCountsEveryStatus: every request of the window is counted
// under its status, in both histograms and in the timeline, which judges
// success as fortio does.
func TestHTTPRunnerCountsEveryStatus(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) % 3 {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	res, err := Measure(context.Background(), Options{URL: srv.URL + "/", Concurrency: 3, Duration: 300 * time.Millisecond,
		ExpectErrors: true, Timeline: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, res.Requests)
	assert.Equal(t, []int{200, 418, 503}, slices.Sorted(maps.Keys(res.Codes)), "no other status, no socket error")
	assert.Equal(t, res.Requests, res.Latency.Count, "fortio's histogram holds every request")
	assert.Equal(t, res.Requests, res.HDR.Uncorrected.Count(), "so does HDR")
	assert.Equal(t, res.Requests-res.Codes[200], res.Errors)
	var ok, failed int64
	for b := range res.Timeline.OK {
		ok, failed = ok+res.Timeline.OK[b], failed+res.Timeline.Failed[b]
	}
	assert.Equal(t, res.Codes[200]+res.Codes[418], ok, "the access loggers judge success as fortio does")
	assert.Equal(t, res.Codes[503], failed)
	assert.Greater(t, n.Load(), res.Requests, "each connection's first request is not counted")
}

// TestHTTPRunnerConnections: one connection per thread, opened before the
// window, kept alive through it and closed after it.
func TestHTTPRunnerConnections(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	conns := &connStates{states: map[http.ConnState]int{}}
	srv.Config.ConnState = conns.track
	srv.Start()
	defer srv.Close()
	res, err := Measure(context.Background(), Options{URL: srv.URL + "/", Concurrency: 3, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, map[int]int64{200: res.Requests}, res.Codes)
	assert.Equal(t, 3, conns.count(http.StateNew), "one connection per thread, kept alive")
	assert.Equal(t, res.Requests+3, n.Load(), "each connection's first request is not counted")
	assert.Eventually(t, func() bool { return conns.count(http.StateClosed) == 3 }, 5*time.Second, 10*time.Millisecond,
		"every connection is closed after the window")
}

// TestHTTPRunnerNewConnections: with NewConnections every request,
// counted or not, arrives on a TCP connection of its own; without it the
// same load reuses one connection per thread.
func TestHTTPRunnerNewConnections(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		var n atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
		conns := &connStates{states: map[http.ConnState]int{}}
		srv.Config.ConnState = conns.track
		srv.Start()
		res, err := Measure(context.Background(), Options{URL: srv.URL + "/", Concurrency: 3, Duration: 200 * time.Millisecond, NewConnections: fresh})
		srv.Close()
		require.NoError(t, err)
		assert.Equal(t, map[int]int64{200: res.Requests}, res.Codes, "new connections %v", fresh)
		assert.Greater(t, res.Requests, int64(3), "more requests than threads")
		assert.Equal(t, res.Requests+3, n.Load(), "each thread's first request is not counted")
		want := 3
		if fresh {
			want = int(n.Load())
		}
		assert.Equal(t, want, conns.count(http.StateNew), "new connections %v: accepted connections", fresh)
	}
}

// TestHTTPRunnerH2 runs h2c with prior knowledge through fhttp's std
// client.
func TestHTTPRunnerH2(t *testing.T) {
	var protos sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
	}))
	srv.Config.Protocols = &http.Protocols{}
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	res, err := Measure(context.Background(), Options{URL: srv.URL + "/", Protocol: H2, Concurrency: 2, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, res.Requests)
	assert.Equal(t, map[int]int64{200: res.Requests}, res.Codes)
	assert.Equal(t, res.Requests, res.HDR.Uncorrected.Count())
	_, h2 := protos.Load("HTTP/2.0")
	assert.True(t, h2, "requests went over HTTP/2")
	_, h1 := protos.Load("HTTP/1.1")
	assert.False(t, h1, "and none over HTTP/1.1")
}

// TestHTTPRunnerRefusedConnection: a target that refuses connections gives
// socket errors (code -1), not a failed run.
func TestHTTPRunnerRefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res, err := Measure(context.Background(), Options{URL: "http://" + addr + "/", Concurrency: 2, Duration: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, res.Requests)
	assert.Equal(t, map[int]int64{-1: res.Requests}, res.Codes)
	assert.Equal(t, res.Requests, res.Errors)
	assert.False(t, res.Valid())
}

// fetcher is an fhttp.Fetcher that answers code without a network.
type fetcher struct{ code int }

func (f fetcher) Fetch(context.Context) (int, []byte, int)          { return f.code, nil, 0 }
func (f fetcher) StreamFetch(context.Context) (int, int64, uint)    { return f.code, 0, 0 }
func (fetcher) HasBuffer() bool                                     { return false }
func (fetcher) Close()                                              {}
func (fetcher) GetIPAddress() (*stats.Occurrence, *stats.Histogram) { return nil, nil }

// TestHTTPCallerRun: a request's status is counted and handed to the
// access loggers with fortio's verdict, and a 200 costs no allocation.
func TestHTTPCallerRun(t *testing.T) {
	ctx := context.Background()
	for code, want := range map[int]bool{200: true, 204: true, 299: true, 418: true, 300: false, 404: false, 503: false, -1: false} {
		c := &httpCaller{client: fetcher{code}, codes: map[int]int64{}}
		ok, details := c.Run(ctx, 0)
		assert.Equal(t, want, ok, "code %d", code)
		assert.Equal(t, map[int]int64{code: 1}, c.codes)
		assert.Equal(t, codeText(code), details)
	}
	assert.Equal(t, "503", codeText(503))
	assert.Equal(t, "-1", codeText(-1))
	c := &httpCaller{client: fetcher{200}, codes: map[int]int64{}}
	allocs := testing.AllocsPerRun(1000, func() { c.Run(ctx, 0) })
	assert.Zero(t, allocs, "a 200 allocates nothing")
	assert.Equal(t, int64(1001), c.codes[200])
}
