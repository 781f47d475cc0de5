package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"
	fstats "fortio.org/fortio/stats"
	flog "fortio.org/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/framework/load"
)

func server(t *testing.T) *httptest.Server {
	t.Helper()
	return muxServer(t, nil)
}

// muxServer serves NewMux(peers) on loopback until the test ends.
func muxServer(t *testing.T, peers *Peers) *httptest.Server {
	t.Helper()
	flog.SetLogLevelQuiet(flog.Error)
	srv := httptest.NewServer(NewMux(peers))
	t.Cleanup(srv.Close)
	return srv
}

func runURL(srv *httptest.Server, target string, extra url.Values) string {
	q := url.Values{"url": {target}, "c": {"2"}, "qps": {"-1"}, "t": {"300ms"}, "r": {"0.00001"}, "p": {"50,99"}}
	for k, v := range extra {
		q[k] = v
	}
	return srv.URL + "/fortio/rest/run?" + q.Encode()
}

func post(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(u, "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestRunAnswersHTTPRunnerResults runs a load through the REST API against
// mbloadgen's own echo handler on loopback and reads fortio's result back.
func TestRunAnswersHTTPRunnerResults(t *testing.T) {
	srv := server(t)
	code, body := post(t, runURL(srv, srv.URL+"/echo?size=100", nil))
	require.Equal(t, http.StatusOK, code, string(body))
	var res struct {
		fhttp.HTTPRunnerResults
		MeshbenchHDR *load.Latencies
	}
	require.NoError(t, json.Unmarshal(body, &res))
	h := res.DurationHistogram
	require.NotNil(t, h)
	assert.Positive(t, h.Count)
	assert.Equal(t, h.Count, res.RetCodes[http.StatusOK])
	assert.Equal(t, 2, res.NumThreads)
	assert.Equal(t, "max", res.RequestedQPS)
	// The window's own duration, t=300ms, not fortio's default 5 s; no
	// tighter bound: beside a cold build the same window took 478 ms.
	assert.GreaterOrEqual(t, res.ActualDuration, 300*time.Millisecond)
	assert.Less(t, res.ActualDuration, 3*time.Second)
	// r=0.00001: loopback latencies spread over 10 µs buckets instead of
	// fortio's default 1 ms one.
	assert.Greater(t, len(h.Data), 2, "sub-millisecond buckets")
	assert.Less(t, h.Data[0].End, 0.001)
	for _, b := range h.Data[:len(h.Data)-1] {
		units := b.End / 0.00001
		assert.InDelta(t, math.Round(units), units, 1e-6, "bucket end %g s is on the 10 µs layout", b.End)
	}
	// Every request is in the HDR histogram too; a closed loop has no
	// intended send times to correct from.
	require.NotNil(t, res.MeshbenchHDR, "field %s", HDRField)
	assert.Equal(t, h.Count, res.MeshbenchHDR.Uncorrected.Count())
	assert.Nil(t, res.MeshbenchHDR.Corrected)
	assert.Contains(t, string(body), `"uncorrected": "HISTFAAA`, "HDR's compact encoding")
}

// TestOpenLoopRunAnswersCorrectedHDR: an open-loop run's answer carries
// the HDR histogram corrected for coordinated omission, and hdr=off leaves
// the HDR field out.
func TestOpenLoopRunAnswersCorrectedHDR(t *testing.T) {
	srv := server(t)
	code, body := post(t, runURL(srv, srv.URL+"/echo", url.Values{"qps": {"100"}, "t": {"500ms"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	var res struct {
		DurationHistogram *fstats.HistogramData
		MeshbenchHDR      *load.Latencies
	}
	require.NoError(t, json.Unmarshal(body, &res))
	require.NotNil(t, res.MeshbenchHDR)
	unc, cor := res.MeshbenchHDR.Uncorrected, res.MeshbenchHDR.Corrected
	assert.Equal(t, res.DurationHistogram.Count, unc.Count())
	require.NotNil(t, cor)
	assert.GreaterOrEqual(t, cor.Count(), unc.Count())
	assert.LessOrEqual(t, cor.Count(), int64(50), "no more than the 100 req/s × 0.5 s scheduled")

	code, body = post(t, runURL(srv, srv.URL+"/echo", url.Values{"hdr": {"off"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	assert.NotContains(t, string(body), HDRField)
	assert.Contains(t, string(body), "DurationHistogram")
}

// TestRunAnswersTimeline: timeline=50ms adds the run's timeline, every
// request counted once in the bucket of its completion, failures apart;
// hdr=off leaves the HDR field out but not the timeline; a bad bucket is
// refused before the run.
func TestRunAnswersTimeline(t *testing.T) {
	srv := server(t)
	code, body := post(t, runURL(srv, srv.URL+"/echo?status=503", url.Values{"timeline": {"50ms"}, "hdr": {"off"}}))
	require.Equal(t, http.StatusOK, code, string(body))
	var res struct {
		RetCodes          map[int]int64
		ActualDuration    time.Duration
		MeshbenchTimeline *load.Timeline
	}
	require.NoError(t, json.Unmarshal(body, &res))
	assert.NotContains(t, string(body), HDRField)
	tl := res.MeshbenchTimeline
	require.NotNil(t, tl, "field %s", TimelineField)
	assert.Equal(t, 50*time.Millisecond, tl.Bucket)
	sum := func(xs []int64) (n int64) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	assert.Positive(t, res.RetCodes[http.StatusServiceUnavailable])
	assert.Equal(t, res.RetCodes[http.StatusServiceUnavailable], sum(tl.Failed))
	assert.Zero(t, sum(tl.OK))
	assert.Len(t, tl.Failed, len(tl.OK))
	// A 300 ms window in 50 ms buckets: as many as the window really
	// lasted (longer on a busy machine: 9 buckets in a cold CI run beside
	// the image build), plus the partial one at each end.
	assert.GreaterOrEqual(t, res.ActualDuration, 300*time.Millisecond)
	assert.LessOrEqual(t, len(tl.OK), int(res.ActualDuration/(50*time.Millisecond))+2, "a %s window in 50 ms buckets", res.ActualDuration)

	code, body = post(t, runURL(srv, srv.URL+"/echo", url.Values{"timeline": {"soon"}}))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, string(body), `timeline=\"soon\": want a positive Go duration`)
}

func TestOneRunAtATime(t *testing.T) {
	srv := server(t)
	done := make(chan int, 1)
	go func() {
		code, _ := post(t, runURL(srv, srv.URL+"/echo", url.Values{"t": {"2s"}, "c": {"1"}, "qps": {"50"}}))
		done <- code
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		n, _ := rapi.RunMetrics()
		return n > 0, nil
	}))
	code, body := post(t, runURL(srv, srv.URL+"/echo", nil))
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, string(body), `"error":true`)
	assert.Contains(t, string(body), "already in progress")

	code, body = post(t, runURL(srv, srv.URL+"/echo", url.Values{"async": {"on"}}))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, string(body), "synchronously")

	code, _ = post(t, srv.URL+"/fortio/rest/stop")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, http.StatusOK, <-done, "a stopped run still answers its result")
}

func TestRunErrorIsJSON(t *testing.T) {
	srv := server(t)
	code, body := post(t, runURL(srv, "http://[::1", nil))
	assert.NotEqual(t, http.StatusOK, code)
	var reply struct {
		Error     bool   `json:"error"`
		Exception string `json:"exception"`
	}
	require.NoError(t, json.Unmarshal(body, &reply))
	assert.True(t, reply.Error)
	assert.Contains(t, reply.Exception, "missing ']'")
}

func TestNetInfoAndHealth(t *testing.T) {
	srv := server(t)
	resp, err := http.Get(srv.URL + NetInfoPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var ni NetInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ni))
	assert.Equal(t, "v1.75.3", ni.Fortio)
	assert.Positive(t, ni.Cores)
	var lo *Interface
	for i := range ni.Interfaces {
		if ni.Interfaces[i].Name == "lo" {
			lo = &ni.Interfaces[i]
		}
	}
	require.NotNil(t, lo, "%+v", ni.Interfaces)
	assert.Positive(t, lo.MTU)

	before := time.Now()
	resp, err = http.Get(srv.URL + HealthPath)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok\n", string(b))
	ns, err := strconv.ParseInt(resp.Header.Get(TimeHeader), 10, 64)
	require.NoError(t, err)
	assert.WithinRange(t, time.Unix(0, ns), before, time.Now())
}

func TestFlags(t *testing.T) {
	err := run([]string{"-loglevel", "loud"})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "-loglevel"), err.Error())
	assert.Error(t, run([]string{"-listen", "256.0.0.1:0"}))
	err = run([]string{"-listen", "127.0.0.1:0", "-grpc-listen", "256.0.0.1:0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-grpc-listen 256.0.0.1:0")
}
