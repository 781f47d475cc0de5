package load

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"fortio.org/fortio/periodic"

	"github.com/meshbench/meshbench/framework/stats"
)

// Latencies are the HDR histograms of one measured window, in nanoseconds
// at stats.HDR's layout (3 significant digits from 1 µs to 60 s). In a
// results file each is a string: HDR's compact encoding.
type Latencies struct {
	// Uncorrected holds every request sent in the window, from the moment
	// it was sent to its answer: fortio's samples, at 3 significant digits.
	Uncorrected *stats.HDR `json:"uncorrected"`
	// Corrected is set for open-loop runs only. It holds every request of
	// the run's schedule measured from its intended send time, as wrk2 and
	// Nighthawk measure (coordinated-omission correction):
	//   - a request that was sent counts from its intended send time to its
	//     answer, so a request sent late counts its wait;
	//   - a request fortio skipped (NoCatchUp: its time had passed when
	//     the previous request on its connection was answered) counts from
	//     its intended send time to that answer, or 0 when the answer came
	//     before it: a lower bound of what it would have waited had it been
	//     sent (HdrHistogram's recordCorrectedValue fills in the same
	//     values), so every iteration up to the last one sent is counted;
	//   - after the last request sent, the iterations scheduled while it was
	//     out count their wait for it, and the rest (the window ended, or
	//     the run was stopped) are not counted.
	// Its count is thus the scheduled requests, at most.
	Corrected *stats.HDR `json:"corrected,omitempty"`
}

// MergeLatencies merges the Latencies of several threads, load generators
// or repeats without loss. The result has a histogram only where every
// input has one: it is nil when an input is nil (a shard of an older
// mbloadgen, say), and has no Corrected when an input has none.
func MergeLatencies(ls ...*Latencies) (*Latencies, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	var unc, cor []*stats.HDR
	for _, l := range ls {
		if l == nil || l.Uncorrected == nil {
			return nil, nil
		}
		unc = append(unc, l.Uncorrected)
		cor = append(cor, l.Corrected)
	}
	out := &Latencies{}
	var err error
	if out.Uncorrected, err = stats.MergeHDR(unc...); err != nil {
		return nil, fmt.Errorf("merge uncorrected latencies: %w", err)
	}
	for _, c := range cor {
		if c == nil {
			return out, nil
		}
	}
	if out.Corrected, err = stats.MergeHDR(cor...); err != nil {
		return nil, fmt.Errorf("merge corrected latencies: %w", err)
	}
	return out, nil
}

// Recorder is the periodic.AccessLogger that fills Latencies. fortio calls
// it after every request on the request's own thread; each thread records
// into its own histograms, with no lock and no allocation per request, and
// Latencies merges them once the run is over.
//
// For open-loop runs it knows fortio's schedule: thread t sends its
// request i at start + (i + i/(n-1))/q, where q is the thread's rate and n
// its number of calls (periodic.runOne), or, when its time passed while
// the previous answer was out, as soon as that answer comes (catching up,
// as meshbench's runs do), or with NoCatchUp skips it. fortio does not hand the start to an
// AccessLogger, but its Run calls Info right after taking it (and once
// before); the Recorder takes the time of the last Info call before the
// first request as the start of the schedule, typically less than a
// microsecond late (a request is never counted from after it was sent).
// Latencies checks it against the run's StartTime.
type Recorder struct {
	threads []*threadRecorder
	sched   schedule
	// base is the monotonic origin of every offset below.
	base time.Time
	// anchor is the time of the latest Info call, in ns after base; 0
	// before the first.
	anchor atomic.Int64
}

// threadRecorder is one fortio thread's share; only that thread touches it
// during the run.
type threadRecorder struct {
	uncorrected, corrected *stats.HDR
	started                bool
	// origin is the schedule's start, in ns after base.
	origin int64
	// last is the iteration of the last request answered, lastDone when
	// it was answered (ns after base).
	last, lastDone int64
	// The padding keeps two threads' hot fields off one cache line.
	_ [64]byte
}

// NewRecorder returns a Recorder for a run with options ro (before or after
// fortio normalizes them). Set it as ro.AccessLogger.
func NewRecorder(ro *periodic.RunnerOptions) *Recorder {
	n := ro.NumThreads
	if n == 0 {
		n = periodic.DefaultRunnerOptions.NumThreads
	}
	r := &Recorder{sched: newSchedule(ro), base: time.Now(), threads: make([]*threadRecorder, max(n, 1))}
	for i := range r.threads {
		t := &threadRecorder{uncorrected: stats.NewHDR(), last: -1}
		if r.sched.open {
			t.corrected = stats.NewHDR()
		}
		r.threads[i] = t
	}
	return r
}

// Info implements periodic.AccessLogger. fortio's Run calls it once before
// and once right after it takes the run's start time; the last call marks
// the start of the schedule.
func (r *Recorder) Info() string {
	r.anchor.Store(max(int64(time.Since(r.base)), 1))
	return "meshbench HDR latency recorder"
}

// Start implements periodic.AccessLogger; it does nothing, as any work here
// would count in the request's latency.
func (r *Recorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

// Report implements periodic.AccessLogger: it records request iter of
// thread id, sent at sent and answered latency seconds later.
func (r *Recorder) Report(_ context.Context, id periodic.ThreadID, iter int64, sent time.Time, latency float64, _ bool, _ string) {
	if int(id) < 0 || int(id) >= len(r.threads) {
		return
	}
	t := r.threads[id]
	ns := int64(latency*1e9 + 0.5)
	t.uncorrected.Record(ns)
	if !r.sched.open {
		return
	}
	at := int64(sent.Sub(r.base))
	if !t.started {
		t.started = true
		t.origin = r.anchor.Load()
		if t.origin <= 0 { // no Info call: the thread's first send is the best guess
			t.origin = at - r.sched.offset(iter)
		}
	}
	r.backfill(t, iter, false)
	done := at + ns
	t.corrected.Record(done - min(t.origin+r.sched.offset(iter), at))
	t.last, t.lastDone = iter, done
}

// backfill records the iterations after t's last answered one and before
// upTo, which fortio skipped: from each one's intended send time to that
// answer, or 0 when it came first. With busyOnly it stops at the first
// iteration due after the answer.
func (r *Recorder) backfill(t *threadRecorder, upTo int64, busyOnly bool) {
	if t.last < 0 {
		return
	}
	for j := t.last + 1; j < upTo; j++ {
		wait := t.lastDone - (t.origin + r.sched.offset(j))
		if wait <= 0 && busyOnly {
			break // later iterations are later still
		}
		t.corrected.Record(wait) // a wait below 0 is recorded as 0
	}
}

// Latencies merges the threads' histograms once the run is over. start is
// the run's StartTime as fortio reports it: the iterations skipped at the
// end of the schedule are filled in, and the schedule's origin is checked
// against it. It returns an error when the origin does not follow start,
// which would mean fortio no longer calls Info as this Recorder expects.
func (r *Recorder) Latencies(start time.Time) (*Latencies, error) {
	if r.sched.open {
		a := r.anchor.Load()
		if a <= 0 {
			return nil, fmt.Errorf("coordinated-omission correction: fortio never called the access logger's Info, so the schedule's start is unknown")
		}
		// Wall clocks: start may come from JSON, without its monotonic reading.
		if origin := r.base.Add(time.Duration(a)); origin.Round(0).Before(start.Round(0).Add(-time.Millisecond)) {
			return nil, fmt.Errorf("coordinated-omission correction: the schedule's start (fortio's last Info call, %s) precedes the run's start %s: fortio's periodic runner changed",
				origin.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
		}
		for _, t := range r.threads {
			r.backfill(t, r.sched.calls, true)
			t.last = max(t.last, r.sched.calls-1)
		}
	}
	ls := make([]*Latencies, len(r.threads))
	for i, t := range r.threads {
		ls[i] = &Latencies{Uncorrected: t.uncorrected, Corrected: t.corrected}
	}
	return MergeLatencies(ls...)
}

// schedule is fortio's open-loop schedule for one thread (periodic's
// runQPSSetup and runOne), or nothing (open == false) for closed loops and
// for modes meshbench does not use (exact counts, jitter, uniform starts,
// runs without a duration).
type schedule struct {
	open bool
	// perThreadQPS is each thread's rate, calls its number of iterations.
	perThreadQPS float64
	calls        int64
}

func newSchedule(ro *periodic.RunnerOptions) schedule {
	qps, threads, d := ro.QPS, ro.NumThreads, ro.Duration
	if qps == 0 {
		qps = periodic.DefaultRunnerOptions.QPS
	}
	if threads == 0 {
		threads = periodic.DefaultRunnerOptions.NumThreads
	}
	if d == 0 {
		d = periodic.DefaultRunnerOptions.Duration
	}
	if qps <= 0 || d <= 0 || ro.Exactly > 0 || ro.Jitter || ro.Uniform {
		return schedule{}
	}
	threads = max(threads, 1)
	// As periodic's runQPSSetup: at least 2 calls, at least 2 per thread.
	calls := int64(qps * d.Seconds())
	if calls < 2 {
		calls, threads = 2, 1
	}
	if int64(2*threads) > calls {
		threads = int(calls / 2)
	}
	calls /= int64(threads)
	return schedule{open: true, perThreadQPS: qps / float64(threads), calls: calls}
}

// offset is iteration i's intended send time after the start, in ns,
// computed with the same float expression as periodic's runOne.
func (s schedule) offset(i int64) int64 {
	return int64((float64(i) + float64(i)/float64(s.calls-1)) / s.perThreadQPS * 1e9)
}
