package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/periodic"
	flog "fortio.org/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
)

// simulated drives a Recorder as fortio's runOne would for one thread at
// 100 req/s for 1 s (100 iterations): request i is sent at its intended
// time unless the previous answer came after it; then, with noCatchUp, it
// is skipped, and otherwise it is sent as that answer comes (catching up).
// latency(i) is each sent request's latency. It returns the recorder, the
// schedule's start, and the corrected values expected.
func simulated(t *testing.T, noCatchUp bool, latency func(i int64) time.Duration) (*Recorder, time.Time, *stats.HDR) {
	t.Helper()
	ro := &periodic.RunnerOptions{QPS: 100, Duration: time.Second, NumThreads: 1, NoCatchUp: noCatchUp}
	r := NewRecorder(ro)
	require.Equal(t, schedule{open: true, perThreadQPS: 100, calls: 100}, r.sched)
	r.Info()
	start := r.base.Add(time.Duration(r.anchor.Load()))
	want := stats.NewHDR()
	intended := func(i int64) time.Time {
		return start.Add(time.Duration(int64((float64(i) + float64(i)/99) / 100 * 1e9)))
	}
	var free time.Time // when the connection is free again
	for i := int64(0); i < 100; i++ {
		at := intended(i)
		if at.Before(free) {
			if noCatchUp {
				want.Record(int64(free.Sub(at))) // skipped: waited for the connection
				continue
			}
			at = free // sent late, as the answer came
		}
		l := latency(i)
		r.Report(context.Background(), 0, i, at, l.Seconds(), true, "200")
		want.Record(int64(at.Add(l).Sub(intended(i))))
		free = at.Add(l)
	}
	return r, start, want
}

// TestRecorderCorrectsSkippedRequests: a 205 ms stall at 100 req/s makes
// fortio skip the next 20 iterations; the corrected histogram counts each
// from its intended time to the end of the stall, the uncorrected one only
// what was sent.
func TestRecorderCorrectsSkippedRequests(t *testing.T) {
	r, start, want := simulated(t, true, func(i int64) time.Duration {
		if i == 10 {
			return 205 * time.Millisecond
		}
		return time.Millisecond
	})
	l, err := r.Latencies(start)
	require.NoError(t, err)
	assert.Equal(t, int64(80), l.Uncorrected.Count(), "20 iterations were skipped")
	assert.Equal(t, int64(100), l.Corrected.Count(), "every scheduled request")
	assert.True(t, l.Corrected.Equal(want))
	assert.InEpsilon(t, 0.001, l.Uncorrected.Percentile(90), 1e-3)
	// 10 of 100 scheduled requests waited 100 ms or more.
	assert.Greater(t, l.Corrected.Percentile(90), 0.1)
	assert.InEpsilon(t, 0.205, l.Corrected.Max(), 1e-3)
	assert.InEpsilon(t, 0.205, l.Uncorrected.Max(), 1e-3)
}

// TestRecorderCorrectsTheEndOfTheSchedule: iterations skipped after the
// last answer are filled in by Latencies, once.
func TestRecorderCorrectsTheEndOfTheSchedule(t *testing.T) {
	r, start, want := simulated(t, true, func(i int64) time.Duration {
		if i == 95 {
			return 100 * time.Millisecond
		}
		return 2 * time.Millisecond
	})
	l, err := r.Latencies(start)
	require.NoError(t, err)
	assert.Equal(t, int64(96), l.Uncorrected.Count())
	assert.Equal(t, int64(100), l.Corrected.Count())
	assert.True(t, l.Corrected.Equal(want))
	again, err := r.Latencies(start)
	require.NoError(t, err)
	assert.True(t, again.Corrected.Equal(want), "calling Latencies twice fills in nothing twice")
}

// TestRecorderCorrectsCaughtUpRequests: the same 205 ms stall when the
// loadgen catches up, as meshbench's runs do: the 20 iterations due
// during it are sent one after another as it ends, every scheduled request
// is sent, and each counts from its intended time: the first of them
// 196 ms, each next one 9 ms less, until the schedule is met again.
func TestRecorderCorrectsCaughtUpRequests(t *testing.T) {
	r, start, want := simulated(t, false, func(i int64) time.Duration {
		if i == 10 {
			return 205 * time.Millisecond
		}
		return time.Millisecond
	})
	l, err := r.Latencies(start)
	require.NoError(t, err)
	assert.Equal(t, int64(100), l.Uncorrected.Count(), "nothing skipped")
	assert.Equal(t, int64(100), l.Corrected.Count(), "every scheduled request, once")
	assert.True(t, l.Corrected.Equal(want))
	assert.InEpsilon(t, 0.001, l.Uncorrected.Percentile(90), 1e-3, "sent late, answered fast")
	assert.Greater(t, l.Corrected.Percentile(90), 0.1, "10 of 100 scheduled requests waited 100 ms or more")
	assert.InEpsilon(t, 0.205, l.Corrected.Max(), 1e-3)
}

// TestRecorderCountsIterationsSkippedByALateLoadgen: an iteration fortio
// skipped although its connection was free (fortio itself was late) counts
// as 0, a lower bound; iterations after the last answer are not counted
// unless they were due while it was out.
func TestRecorderCountsIterationsSkippedByALateLoadgen(t *testing.T) {
	r := NewRecorder(&periodic.RunnerOptions{QPS: 100, Duration: time.Second, NumThreads: 1, NoCatchUp: true})
	r.Info()
	start := r.base.Add(time.Duration(r.anchor.Load()))
	at := func(i int64) time.Time { return start.Add(time.Duration(r.sched.offset(i))) }
	ctx := context.Background()
	r.Report(ctx, 0, 0, at(0), 0.001, true, "200")
	r.Report(ctx, 0, 3, at(3).Add(5*time.Millisecond), 0.001, true, "200") // 1 and 2 skipped, sent 5 ms late
	l, err := r.Latencies(start)
	require.NoError(t, err)
	want := stats.NewHDR()
	for _, v := range []int64{1e6, 0, 0, 6e6} {
		want.Record(v)
	}
	assert.True(t, l.Corrected.Equal(want), "p50 %v max %v", l.Corrected.Percentile(50), l.Corrected.Max())
	assert.Equal(t, int64(2), l.Uncorrected.Count())
}

func TestRecorderRefusesAnUnknownScheduleStart(t *testing.T) {
	ro := &periodic.RunnerOptions{QPS: 100, Duration: time.Second, NumThreads: 2}
	_, err := NewRecorder(ro).Latencies(time.Now())
	assert.EqualError(t, err, "coordinated-omission correction: fortio never called the access logger's Info, so the schedule's start is unknown")
	r := NewRecorder(ro)
	r.Info()
	_, err = r.Latencies(time.Now().Add(time.Second))
	assert.ErrorContains(t, err, "precedes the run's start")
	assert.ErrorContains(t, err, "fortio's periodic runner changed")
}

// TestScheduleFollowsFortio: fortio's runQPSSetup rules, which decide each
// thread's rate and number of calls.
func TestScheduleFollowsFortio(t *testing.T) {
	for _, tc := range []struct {
		name string
		ro   periodic.RunnerOptions
		want schedule
	}{
		{"closed loop", periodic.RunnerOptions{QPS: -1, Duration: time.Second, NumThreads: 4}, schedule{}},
		{"even split", periodic.RunnerOptions{QPS: 1000, Duration: 2 * time.Second, NumThreads: 4}, schedule{open: true, perThreadQPS: 250, calls: 500}},
		{"rounded down", periodic.RunnerOptions{QPS: 100, Duration: 1500 * time.Millisecond, NumThreads: 4}, schedule{open: true, perThreadQPS: 25, calls: 37}},
		{"fewer threads than asked", periodic.RunnerOptions{QPS: 5, Duration: time.Second, NumThreads: 8}, schedule{open: true, perThreadQPS: 2.5, calls: 2}},
		{"at least two calls", periodic.RunnerOptions{QPS: 1, Duration: time.Second, NumThreads: 8}, schedule{open: true, perThreadQPS: 1, calls: 2}},
		{"fortio's defaults", periodic.RunnerOptions{}, schedule{open: true, perThreadQPS: 8.0 / 4, calls: 10}},
		{"jitter is not modelled", periodic.RunnerOptions{QPS: 100, Duration: time.Second, Jitter: true}, schedule{}},
		{"exact counts are not modelled", periodic.RunnerOptions{QPS: 100, Exactly: 50}, schedule{}},
	} {
		assert.Equal(t, tc.want, newSchedule(&tc.ro), tc.name)
	}
	assert.Equal(t, 8.0, periodic.DefaultRunnerOptions.QPS, "fortio's default rate, used above")
	assert.Equal(t, 4, periodic.DefaultRunnerOptions.NumThreads)
	assert.Equal(t, 5*time.Second, periodic.DefaultRunnerOptions.Duration)
}

// TestRecorderReportDoesNotAllocate: the per-request path allocates
// nothing, in open and closed loop.
func TestRecorderReportDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	for _, qps := range []float64{-1, 1000} {
		r := NewRecorder(&periodic.RunnerOptions{QPS: qps, Duration: time.Minute, NumThreads: 2})
		r.Info()
		now := time.Now()
		var i int64
		allocs := testing.AllocsPerRun(1000, func() {
			i += 3 // skips two iterations each time, so open loop backfills too
			r.Report(ctx, 1, i, now.Add(time.Duration(i)*time.Millisecond), 0.0042, true, "200")
			_ = r.Start(ctx, 1, i+1, now)
		})
		assert.Zero(t, allocs, "qps %v", qps)
	}
}

func TestMergeLatencies(t *testing.T) {
	h := func(vs ...int64) *stats.HDR {
		x := stats.NewHDR()
		for _, v := range vs {
			x.Record(v)
		}
		return x
	}
	a := &Latencies{Uncorrected: h(1000, 2000), Corrected: h(1000, 2000, 3000)}
	b := &Latencies{Uncorrected: h(5000), Corrected: h(5000)}
	m, err := MergeLatencies(a, b)
	require.NoError(t, err)
	assert.True(t, m.Uncorrected.Equal(h(1000, 2000, 5000)))
	assert.True(t, m.Corrected.Equal(h(1000, 2000, 3000, 5000)))

	m, err = MergeLatencies(a, &Latencies{Uncorrected: h(5000)})
	require.NoError(t, err)
	assert.True(t, m.Uncorrected.Equal(h(1000, 2000, 5000)))
	assert.Nil(t, m.Corrected, "one input has no corrected histogram")

	m, err = MergeLatencies(a, nil)
	require.NoError(t, err)
	assert.Nil(t, m, "an input without HDR leaves the merge without")
	m, err = MergeLatencies()
	require.NoError(t, err)
	assert.Nil(t, m)
}

// spy wraps a Recorder to see what fortio hands it.
type spy struct {
	*Recorder
	mu    sync.Mutex
	sends map[periodic.ThreadID][]sendAt
}

type sendAt struct {
	iter int64
	at   time.Time
}

func (s *spy) Report(ctx context.Context, id periodic.ThreadID, iter int64, at time.Time, latency float64, ok bool, details string) {
	s.mu.Lock()
	s.sends[id] = append(s.sends[id], sendAt{iter, at})
	s.mu.Unlock()
	s.Recorder.Report(ctx, id, iter, at, latency, ok, details)
}

// TestRecorderMatchesFortiosSchedule runs fortio's periodic engine, as
// runHTTP drives it, with the Recorder and checks the order of events the
// correction relies on: the schedule's start lies between fortio's start
// and its first request, no request is sent before the time the Recorder
// computes for it, and no iteration lies beyond the Recorder's count.
func TestRecorderMatchesFortiosSchedule(t *testing.T) {
	fortioLog.Do(func() { flog.SetLogLevelQuiet(flog.Error) })
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	o := Options{URL: srv.URL + "/", Concurrency: 3, QPS: 300, Duration: 500 * time.Millisecond, Resolution: stats.Resolution{Divider: 1e-5}}
	require.NoError(t, o.Normalize())
	ro := runnerOptions(o, o.Duration)
	rec := NewRecorder(&ro)
	s := &spy{Recorder: rec, sends: map[periodic.ThreadID][]sendAt{}}
	ro.AccessLogger = s
	fr, err := runHTTP(context.Background(), o, ro)
	require.NoError(t, err)
	require.Len(t, s.sends, 3)
	origin := rec.base.Add(time.Duration(rec.anchor.Load()))
	assert.False(t, origin.Before(fr.start), "the schedule starts after fortio's start")
	for id, sends := range s.sends {
		require.NotEmpty(t, sends)
		assert.Zero(t, sends[0].iter)
		assert.False(t, sends[0].at.Before(origin), "thread %d: its first request follows the schedule's start", id)
		for _, x := range sends {
			assert.Less(t, x.iter, rec.sched.calls, "thread %d", id)
			intended := fr.start.Add(time.Duration(rec.sched.offset(x.iter)))
			assert.False(t, x.at.Before(intended), "thread %d iteration %d sent %v before its time", id, x.iter, intended.Sub(x.at))
		}
	}
	l, err := rec.Latencies(fr.start)
	require.NoError(t, err)
	assert.Equal(t, fr.latency.Count, l.Uncorrected.Count())
	var upToLast int64
	for _, sends := range s.sends {
		upToLast += sends[len(sends)-1].iter + 1
	}
	assert.GreaterOrEqual(t, l.Corrected.Count(), upToLast, "every iteration up to each thread's last request")
	assert.LessOrEqual(t, l.Corrected.Count(), 3*rec.sched.calls, "no more than scheduled")
}

// TestCoordinatedOmissionWithAStallingServer: the server stalls one request
// for 200 ms in an open-loop run at 200 req/s over 2 connections. The
// stalled connection catches up when the stall ends: the 20 requests due
// on it meanwhile are sent then, one after another, so the run keeps its
// rate (had they been skipped, 580 of 600 would have been sent). Measured
// from when requests were sent, p99 misses the stall (one slow request in
// 600); measured from when they were due, the requests scheduled during
// the stall count their wait and p99 shows it. The assertions are on that
// decision (p99 above or below half the stall), not on timings.
func TestCoordinatedOmissionWithAStallingServer(t *testing.T) {
	const stall = 200 * time.Millisecond
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		if n.Add(1) == 50 {
			time.Sleep(stall) // the server's stall, once, mid-run
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Options{URL: srv.URL + "/", Concurrency: 2, QPS: 200,
		Duration: 3 * time.Second, Warmup: -1, RateTolerance: 0.5})
	require.NoError(t, err)
	require.NotNil(t, res.HDR)
	unc, cor := res.HDR.Uncorrected, res.HDR.Corrected
	require.NotNil(t, cor)
	assert.Equal(t, res.Requests, unc.Count())
	assert.Greater(t, res.Requests, int64(580), "the requests due during the stall were sent when it ended, not skipped")
	assert.GreaterOrEqual(t, unc.Max(), stall.Seconds(), "the stalled request itself")
	assert.GreaterOrEqual(t, cor.Count(), res.Requests, "every request sent is counted")
	assert.LessOrEqual(t, cor.Count(), int64(600), "no more than scheduled")

	t.Logf("%d sent, %d scheduled; p99 uncorrected %.3f ms, corrected %.3f ms", res.Requests, cor.Count(), unc.Percentile(99)*1e3, cor.Percentile(99)*1e3)
	shows := func(p99 float64) bool { return p99 >= stall.Seconds()/2 }
	assert.True(t, shows(cor.Percentile(99)), "corrected p99 %v s shows the stall", cor.Percentile(99))
	assert.False(t, shows(unc.Percentile(99)), "uncorrected p99 %v s hides it", unc.Percentile(99))

	assert.Equal(t, FromCorrected, res.LatencySource())
	assert.Equal(t, cor.Percentile(99), res.Percentile(99), "open loop: the judged percentiles are corrected")
	assert.Equal(t, unc.Percentile(99), res.UncorrectedPercentile(99))
	assert.Equal(t, cor.Max(), res.Max())
}

// TestResultJSONKeepsHDR: a Result written to and read from JSON, as the
// results file does, keeps its HDR histograms in their compact encoding,
// and a Result from before HDR still reads its percentiles from fortio's
// histogram.
func TestResultJSONKeepsHDR(t *testing.T) {
	unc, cor := stats.NewHDR(), stats.NewHDR()
	for i := range 1000 {
		unc.Record(int64(100_000 + i))
		cor.Record(int64(100_000 + 2*i))
	}
	h := stats.DefaultResolution.NewHistogram()
	h.Record(0.0001)
	res := &Result{Options: Options{QPS: 100}, Requests: 1000, Latency: h.Export(), HDR: &Latencies{Uncorrected: unc, Corrected: cor}}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	enc, err := cor.Encode()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"corrected":"`+enc+`"`)
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	require.NotNil(t, back.HDR)
	assert.True(t, back.HDR.Uncorrected.Equal(unc))
	assert.True(t, back.HDR.Corrected.Equal(cor))
	assert.Equal(t, res.Percentile(99), back.Percentile(99))
	assert.Equal(t, FromCorrected, back.LatencySource())

	var old Result
	require.NoError(t, json.Unmarshal([]byte(`{"requests":1,"latency":{"Count":1,"Min":0.0001,"Max":0.0001,"Data":[{"Start":0.0001,"End":0.0001,"Percent":100,"Count":1}]}}`), &old))
	assert.Nil(t, old.HDR)
	assert.Equal(t, FromFortio, old.LatencySource())
	assert.Equal(t, 0.0001, old.Percentile(99))
}

// BenchmarkRecorderReport is the per-request cost of HDR recording, what
// fortio's thread pays after each answer, in closed and open loop.
func BenchmarkRecorderReport(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		qps  float64
	}{{"loop=closed", -1}, {"loop=open", 1e6}} {
		b.Run(tc.name, func(b *testing.B) {
			r := NewRecorder(&periodic.RunnerOptions{QPS: tc.qps, Duration: time.Hour, NumThreads: 1})
			r.Info()
			start := time.Now()
			b.ReportAllocs()
			var i int64
			for b.Loop() {
				at := start.Add(time.Duration(r.sched.offset(i) + i%7*1000))
				r.Report(ctx, 0, i, at, 250e-6+float64(i%1000)*1e-7, true, "200")
				i++
			}
		})
	}
}
