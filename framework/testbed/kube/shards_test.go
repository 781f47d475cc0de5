package kube

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func recorded(t *testing.T, name string) *fortioResult {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fortio", name))
	require.NoError(t, err)
	defer f.Close()
	fr, err := decodeResult(f)
	require.NoError(t, err, name)
	return fr
}

func opts(t *testing.T, o load.Options) load.Options {
	t.Helper()
	if o.URL == "" {
		o.URL = "http://backend.ns.svc:8080/"
	}
	require.NoError(t, o.Normalize())
	return o
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		c, n  int
		qps   float64
		conns []int
		rates []float64
	}{
		{c: 8, n: 4, conns: []int{2, 2, 2, 2}},
		{c: 32, n: 1, conns: []int{32}},
		{c: 1, n: 4, conns: []int{1}},
		{c: 2, n: 4, conns: []int{1, 1}},
		{c: 10, n: 4, qps: 1000, conns: []int{3, 3, 2, 2}, rates: []float64{300, 300, 200, 200}},
	} {
		o := opts(t, load.Options{Concurrency: tc.c, QPS: tc.qps, Labels: "x"})
		got := load.Split(o, tc.n)
		var conns []int
		var rates []float64
		var sum float64
		for _, s := range got {
			conns = append(conns, s.Concurrency)
			rates = append(rates, s.QPS)
			sum += s.QPS
			assert.Equal(t, o.Duration, s.Duration)
			assert.Equal(t, o.Resolution, s.Resolution)
		}
		assert.Equal(t, tc.conns, conns, "c=%d over %d", tc.c, tc.n)
		if tc.rates != nil {
			assert.Equal(t, tc.rates, rates)
			assert.InDelta(t, tc.qps, sum, 1e-9, "the shares add up to the rate")
		}
		if len(got) > 1 {
			assert.Contains(t, got[1].Labels, "shard 2/")
		}
	}
}

func TestRunQuery(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 4, QPS: 500, Duration: 30 * time.Second, Timeout: 2 * time.Second,
		RequestSize: 16, Headers: map[string]string{"X-B": "2", "X-A": "1"}})
	q, body, err := runQuery(o, o.Duration)
	require.NoError(t, err)
	assert.Equal(t, "http://backend.ns.svc:8080/", q.Get("url"))
	assert.Equal(t, "4", q.Get("c"))
	assert.Equal(t, "500", q.Get("qps"))
	assert.Equal(t, "30s", q.Get("t"))
	assert.Equal(t, "1e-05", q.Get("r"), "sub-millisecond resolution")
	assert.False(t, q.Has("nocatchup"), "an open loop catches up")
	assert.Equal(t, "2s", q.Get("timeout"))
	var b struct {
		Headers []string
		Payload string
	}
	require.NoError(t, json.Unmarshal(body, &b))
	assert.Equal(t, []string{"X-A: 1", "X-B: 2"}, b.Headers)
	assert.Len(t, b.Payload, 16)

	closed := opts(t, load.Options{})
	q, body, err = runQuery(closed, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "-1", q.Get("qps"), "closed loop is fortio's max speed")
	assert.Nil(t, body)
	assert.Empty(t, q.Get("h2"))

	h2 := opts(t, load.Options{Protocol: load.H2})
	q, _, err = runQuery(h2, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "on", q.Get("h2"), "fortio's h2c")
	assert.Empty(t, q.Get("hdr"), "HDR recorded by default")
	assert.Empty(t, q.Get("connection-reuse"), "keep-alive by default")

	fresh := opts(t, load.Options{NewConnections: true})
	q, _, err = runQuery(fresh, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "1", q.Get("connection-reuse"), "one request per connection")

	noHDR := opts(t, load.Options{NoHDR: true})
	q, _, err = runQuery(noHDR, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "off", q.Get("hdr"))
	assert.Empty(t, q.Get("timeline"), "no timeline unless asked")

	fault := opts(t, load.Options{Timeline: 50 * time.Millisecond})
	q, _, err = runQuery(fault, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "50ms", q.Get("timeline"))
}

// TestShardTimelineOnHarnessClock: a loadgen's timeline is moved from its
// clock to the harness's by the offset its health check measured.
func TestShardTimelineOnHarnessClock(t *testing.T) {
	fr := recorded(t, "closed-c8-shard0.json")
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fr.MeshbenchTimeline = &load.Timeline{Start: start, Bucket: 50 * time.Millisecond, OK: []int64{3}, Failed: []int64{1}, LatencySum: []float64{0.003}, LatencyMax: []float64{0.001}}
	fr.clockOffset = 1500 * time.Millisecond
	r := shardResult(opts(t, load.Options{Concurrency: 2, Duration: 2 * time.Second}), fr)
	require.NotNil(t, r.Timeline)
	assert.Equal(t, start.Add(-1500*time.Millisecond), r.Timeline.Start)
	assert.Equal(t, []int64{3}, r.Timeline.OK)
	assert.Equal(t, start, fr.MeshbenchTimeline.Start, "the loadgen's answer is left alone")
	fr.MeshbenchTimeline = nil
	assert.Nil(t, shardResult(opts(t, load.Options{Concurrency: 2, Duration: 2 * time.Second}), fr).Timeline)
}

func TestArmURL(t *testing.T) {
	plain, sc := &arm{ns: "mb-meshed-x"}, &arm{ns: "mb-meshed-x", sidecar: true}
	// Out of the mesh: the sidecar's permissive port, or the Service's own.
	out, outPlain := &arm{ns: "mb-meshed-x", sidecar: true, placement: OutOfMesh}, &arm{ns: "mb-meshed-x", placement: OutOfMesh}
	for _, c := range []struct {
		a     *arm
		p     testbed.Path
		proto load.Protocol
		want  string
	}{
		{plain, testbed.OneHop, load.HTTP1, "http://backend.mb-meshed-x.svc:8080/"},
		{plain, testbed.TwoHop, load.HTTP1, "http://frontend.mb-meshed-x.svc:8080/"},
		{plain, testbed.OneHop, load.H2, "http://backend.mb-meshed-x.svc:8082/"},
		{plain, testbed.TwoHop, load.H2, "http://frontend.mb-meshed-x.svc:8082/"},
		{sc, testbed.OneHop, load.HTTP1, "http://127.0.0.1:15001/"},
		{sc, testbed.TwoHop, load.HTTP1, "http://127.0.0.1:15002/"},
		{sc, testbed.OneHop, load.H2, "http://127.0.0.1:15011/"},
		{sc, testbed.TwoHop, load.H2, "http://127.0.0.1:15012/"},
		{out, testbed.OneHop, load.HTTP1, "http://backend.mb-meshed-x.svc:8081/"},
		{out, testbed.TwoHop, load.HTTP1, "http://frontend.mb-meshed-x.svc:8081/"},
		{outPlain, testbed.OneHop, load.H2, "http://backend.mb-meshed-x.svc:8082/"},
	} {
		assert.Equal(t, c.want, c.a.url(c.p, c.proto), "sidecar=%v %s %s", c.a.sidecar, c.p, c.proto)
	}
}

// TestMergeRecordedShards merges four loadgens' real fortio answers (see
// testdata/fortio/README.md): counts add up, the histogram is their
// bucket-by-bucket merge, and percentiles are read from it.
func TestMergeRecordedShards(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 8, Duration: 2 * time.Second})
	shardOpts := load.Split(o, 4)
	var shards []*load.Result
	var names []string
	var want int64
	var qps float64
	for i := range 4 {
		fr := recorded(t, "closed-c8-shard"+string(rune('0'+i))+".json")
		s := shardResult(shardOpts[i], fr)
		assert.Empty(t, s.Invalid, "shard %d", i)
		assert.Equal(t, s.Requests, s.Latency.Count)
		want += s.Requests
		qps += s.AchievedQPS
		shards = append(shards, s)
		names = append(names, "loadgen-"+string(rune('a'+i)))
	}
	m, err := load.Merge(o, shards, names)
	require.NoError(t, err)
	assert.Empty(t, m.Invalid)
	assert.Equal(t, want, m.Requests)
	assert.Equal(t, want, m.Codes[200])
	assert.Equal(t, want, m.Latency.Count)
	assert.InDelta(t, qps, m.AchievedQPS, 1e-6)
	assert.Equal(t, o, m.Options, "the merged result carries the total settings")

	// Percentiles of the merge lie within the shards' and come from the
	// merged buckets, not from averaging.
	var lo, hi, avg float64
	for i, s := range shards {
		p := s.Percentile(99)
		if i == 0 || p < lo {
			lo = p
		}
		hi = max(hi, p)
		avg += p / 4
	}
	p99 := m.Percentile(99)
	assert.GreaterOrEqual(t, p99, lo)
	assert.LessOrEqual(t, p99, hi)
	direct, err := stats.Merge(o.Resolution, shards[0].Latency, shards[1].Latency, shards[2].Latency, shards[3].Latency)
	require.NoError(t, err)
	assert.Equal(t, stats.Percentile(direct, 99), p99)
	t.Logf("p99: merged %.6fs, mean of shard p99s %.6fs (not used)", p99, avg)
	assert.Nil(t, m.HDR, "answers of an mbloadgen without HDR")
	assert.Equal(t, load.FromFortio, m.LatencySource())
}

// TestMergeRecordedHDRShards merges two uneven open-loop shards (2 and 1
// connections) whose echo server stalls 0.5 % of the answers for 150 ms
// (see testdata/fortio/README.md): the HDR histograms are merged count by
// count, the percentiles come from the corrected one, and the stalls that
// sent p99 hides show there.
func TestMergeRecordedHDRShards(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 3, QPS: 300, Duration: 2 * time.Second})
	so := load.Split(o, 2)
	var shards []*load.Result
	for i := range 2 {
		s := shardResult(so[i], recorded(t, "hdr-open-qps300-shard"+string(rune('0'+i))+".json"))
		require.NotNil(t, s.HDR, "shard %d", i)
		require.NotNil(t, s.HDR.Corrected, "shard %d: open loop", i)
		assert.Equal(t, s.Requests, s.HDR.Uncorrected.Count(), "shard %d", i)
		shards = append(shards, s)
	}
	m, err := load.Merge(o, shards, []string{"a", "b"})
	require.NoError(t, err)
	require.NotNil(t, m.HDR)
	unc, err := stats.MergeHDR(shards[0].HDR.Uncorrected, shards[1].HDR.Uncorrected)
	require.NoError(t, err)
	cor, err := stats.MergeHDR(shards[0].HDR.Corrected, shards[1].HDR.Corrected)
	require.NoError(t, err)
	assert.True(t, m.HDR.Uncorrected.Equal(unc))
	assert.True(t, m.HDR.Corrected.Equal(cor))
	assert.Equal(t, m.Requests, m.HDR.Uncorrected.Count())
	assert.Equal(t, int64(600), m.HDR.Corrected.Count(), "every request of the 300 req/s × 2 s schedule")
	assert.Equal(t, load.FromCorrected, m.LatencySource())
	assert.Equal(t, cor.Percentile(99), m.Percentile(99))
	assert.Equal(t, unc.Percentile(99), m.UncorrectedPercentile(99))
	assert.Greater(t, m.Percentile(99), 0.1, "corrected p99 shows the 150 ms stalls")
	assert.Less(t, m.UncorrectedPercentile(99), 0.1, "sent p99 hides them")

	// A shard without HDR (an older mbloadgen) leaves the merge without.
	c := opts(t, load.Options{Concurrency: 4, Duration: time.Second})
	cs := load.Split(c, 2)
	m, err = load.Merge(c, []*load.Result{shardResult(cs[0], recorded(t, "hdr-closed-c2.json")), shardResult(cs[1], recorded(t, "closed-c8-shard0.json"))}, []string{"a", "b"})
	require.NoError(t, err)
	assert.Nil(t, m.HDR)
	assert.Equal(t, load.FromFortio, m.LatencySource())
}

func TestMergeOpenLoop(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 4, QPS: 200, Duration: 2 * time.Second})
	so := load.Split(o, 2)
	a := shardResult(so[0], recorded(t, "open-qps200-shard0.json"))
	b := shardResult(so[1], recorded(t, "open-qps200-shard1.json"))
	m, err := load.Merge(o, []*load.Result{a, b}, []string{"a", "b"})
	require.NoError(t, err)
	assert.Empty(t, m.Invalid, "within 5%% of 200 req/s")
	assert.InDelta(t, 191.9, m.AchievedQPS, 0.1)
	assert.Equal(t, 200.0, m.TargetQPS)
}

func TestShardInvalid(t *testing.T) {
	missed := shardResult(opts(t, load.Options{QPS: 200, Duration: time.Second}), recorded(t, "open-missed-rate.json"))
	require.Len(t, missed.Invalid, 1)
	assert.Equal(t, validity.MissedRate, missed.Invalid[0].Kind)
	assert.Contains(t, missed.Invalid[0].Detail, "missed target rate")

	errs := shardResult(opts(t, load.Options{Duration: time.Second}), recorded(t, "errors-503.json"))
	assert.Positive(t, errs.Errors)
	assert.Equal(t, errs.Codes[503], errs.Errors)
	require.Len(t, errs.Invalid, 1)
	assert.Contains(t, errs.Invalid[0].Detail, "503:")

	// In a merge, the shard's reasons are kept and name the shard.
	o := opts(t, load.Options{Concurrency: 2, Duration: time.Second})
	ok := shardResult(load.Split(o, 2)[0], recorded(t, "closed-c8-shard0.json"))
	m, err := load.Merge(o, []*load.Result{ok, errs}, []string{"pod-a", "pod-b"})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(m.Invalid.Strings(), "\n"), "loadgen shard 2 (pod-b): errors:")
	assert.Equal(t, []validity.Kind{validity.Errors, validity.ShardsApart}, m.Invalid.Kinds(), "a shard's reason keeps its kind in the merge")
}

func TestMergeRejectsOtherResolution(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 2, Duration: time.Second})
	so := load.Split(o, 2)
	a := shardResult(so[0], recorded(t, "closed-c8-shard0.json"))
	b := shardResult(so[1], recorded(t, "resolution-1ms.json"))
	_, err := load.Merge(o, []*load.Result{a, b}, []string{"a", "b"})
	var re *stats.ResolutionError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, 1, re.Input)
}

func TestMergeFlagsShardsThatDidNotOverlap(t *testing.T) {
	o := opts(t, load.Options{Concurrency: 4, Duration: 2 * time.Second})
	so := load.Split(o, 2)
	a := shardResult(so[0], recorded(t, "closed-c8-shard0.json"))
	fr := recorded(t, "closed-c8-shard1.json")
	fr.StartTime = fr.StartTime.Add(time.Second)
	b := shardResult(so[1], fr)
	m, err := load.Merge(o, []*load.Result{a, b}, []string{"a", "b"})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(m.Invalid.Strings(), "\n"), "did not run together")
}

func TestDecodeErrors(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "fortio", "init-error.json"))
	require.NoError(t, err)
	defer f.Close()
	_, err = decodeResult(f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing ']' in host")

	_, err = decodeResult(strings.NewReader("<html>404</html>"))
	assert.ErrorContains(t, err, "decode fortio answer")
	_, err = decodeResult(strings.NewReader(`{"RunType":"HTTP"}`))
	assert.ErrorContains(t, err, "without a DurationHistogram")
}

func TestParseStubStatus(t *testing.T) {
	n, err := parseStubStatus("Active connections: 2 \nserver accepts handled requests\n 3 3 31 \nReading: 0 Writing: 1 Waiting: 1 \n")
	require.NoError(t, err)
	assert.EqualValues(t, 31, n)
	_, err = parseStubStatus("<html>")
	assert.Error(t, err)
}
