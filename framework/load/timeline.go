package load

import (
	"context"
	"fmt"
	"math"
	"time"

	"fortio.org/fortio/periodic"
)

// Timeline counts a window's requests per time bucket, by completion
// time: successes, failures, and the latency of the successes. Faults are
// judged on it: when requests started failing, when they succeeded again,
// and when the rate was back.
type Timeline struct {
	// Start is the start of bucket 0; Bucket the width of every bucket.
	Start  time.Time     `json:"start"`
	Bucket time.Duration `json:"bucket"`
	// OK counts the successes completed in each bucket.
	OK []int64 `json:"ok"`
	// Failed counts the failures completed in each bucket.
	Failed []int64 `json:"failed"`
	// LatencySum and LatencyMax are over the successes, seconds.
	LatencySum []float64 `json:"latencySumSeconds"`
	LatencyMax []float64 `json:"latencyMaxSeconds"`
}

// timeline is the access logger that fills a Timeline: one set of buckets
// per fortio thread, so the hot path takes no lock, summed at the end.
type timeline struct {
	start   time.Time
	bucket  time.Duration
	threads []Timeline
}

func newTimeline(start time.Time, bucket, span time.Duration, threads int) *timeline {
	n := int(span/bucket) + 1
	t := &timeline{start: start, bucket: bucket, threads: make([]Timeline, threads)}
	for i := range t.threads {
		t.threads[i] = Timeline{OK: make([]int64, n), Failed: make([]int64, n), LatencySum: make([]float64, n), LatencyMax: make([]float64, n)}
	}
	return t
}

var _ periodic.AccessLogger = (*timeline)(nil)

// Start does nothing: requests are counted when they complete, in Report
// (periodic.AccessLogger).
func (t *timeline) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

// Report counts one request in the bucket of its completion.
func (t *timeline) Report(_ context.Context, id periodic.ThreadID, _ int64, start time.Time, latency float64, ok bool, _ string) {
	if int(id) < 0 || int(id) >= len(t.threads) {
		return
	}
	th := &t.threads[id]
	end := start.Add(time.Duration(latency * float64(time.Second)))
	b := int(end.Sub(t.start) / t.bucket)
	if b < 0 || b >= len(th.OK) {
		return
	}
	if !ok {
		th.Failed[b]++
		return
	}
	th.OK[b]++
	th.LatencySum[b] += latency
	th.LatencyMax[b] = max(th.LatencyMax[b], latency)
}

// Info is "meshbench timeline" (periodic.AccessLogger).
func (t *timeline) Info() string { return "meshbench timeline" }

// sum adds every thread's buckets into one Timeline, trimmed after the
// last bucket with a request.
func (t *timeline) sum() *Timeline {
	out := &Timeline{Start: t.start, Bucket: t.bucket}
	last := -1
	for _, th := range t.threads {
		for b := range th.OK {
			if th.OK[b]+th.Failed[b] > 0 {
				last = max(last, b)
			}
		}
	}
	n := last + 1
	out.OK, out.Failed, out.LatencySum, out.LatencyMax = make([]int64, n), make([]int64, n), make([]float64, n), make([]float64, n)
	for _, th := range t.threads {
		for b := range n {
			out.OK[b] += th.OK[b]
			out.Failed[b] += th.Failed[b]
			out.LatencySum[b] += th.LatencySum[b]
			out.LatencyMax[b] = max(out.LatencyMax[b], th.LatencyMax[b])
		}
	}
	return out
}

// MergeTimelines adds shards' timelines bucket by bucket, aligned on their
// start times (to the bucket). Nil timelines are skipped.
func MergeTimelines(ts ...*Timeline) *Timeline {
	var out *Timeline
	for _, t := range ts {
		if t == nil {
			continue
		}
		if out == nil {
			out = &Timeline{Start: t.Start, Bucket: t.Bucket}
		}
		if t.Start.Before(out.Start) {
			out.shift(int(out.Start.Sub(t.Start) / out.Bucket))
			out.Start = t.Start
		}
		off := int(t.Start.Sub(out.Start) / out.Bucket)
		for b := range t.OK {
			out.grow(off + b + 1)
			out.OK[off+b] += t.OK[b]
			out.Failed[off+b] += t.Failed[b]
			out.LatencySum[off+b] += t.LatencySum[b]
			out.LatencyMax[off+b] = max(out.LatencyMax[off+b], t.LatencyMax[b])
		}
	}
	return out
}

func (t *Timeline) grow(n int) {
	for len(t.OK) < n {
		t.OK, t.Failed = append(t.OK, 0), append(t.Failed, 0)
		t.LatencySum, t.LatencyMax = append(t.LatencySum, 0), append(t.LatencyMax, 0)
	}
}

func (t *Timeline) shift(k int) {
	t.OK = append(make([]int64, k), t.OK...)
	t.Failed = append(make([]int64, k), t.Failed...)
	t.LatencySum = append(make([]float64, k), t.LatencySum...)
	t.LatencyMax = append(make([]float64, k), t.LatencyMax...)
}

// Recovery is what a fault did to the load, from a Timeline. Durations are
// from the fault, at the timeline's bucket resolution; -1 means "never
// within the window".
type Recovery struct {
	// At is when the fault happened, from the start of the window.
	At time.Duration `json:"at"`
	// Failed counts the failed requests after the fault.
	Failed int64 `json:"failed"`
	// PreRate is the successful rate before the fault, req/s.
	PreRate float64 `json:"preRate"`
	// FirstFailure is when requests started failing.
	FirstFailure time.Duration `json:"firstFailure"`
	// FirstSuccess is the first success after the first failure.
	FirstSuccess time.Duration `json:"firstSuccess"`
	// Recovered is when the successful rate was back within Tolerance of
	// the rate it is judged against, over a window of RecoveryWindow: the
	// lower of PreRate and SettledRate, or PreRate when the load settled
	// below SettleFloor of it.
	Recovered time.Duration `json:"recovered"`
	// SettledRate is the successful rate over the last third of the time
	// from the first success to the window's end, req/s (0 without a
	// success). On a machine whose speed wanders it can settle below
	// PreRate with nothing wrong, or a restarted proxy can be slower: the
	// run cannot tell which, so a recovery judged against it says so.
	SettledRate float64 `json:"settledRate,omitempty"`
	// MeanLatency and MaxLatency are of the successes between the fault and
	// the recovery (to the end of the window when it never recovered).
	MeanLatency time.Duration `json:"meanLatency"`
	MaxLatency  time.Duration `json:"maxLatency"`
}

// Recovery thresholds: "recovered" is back within 10 % of the rate before
// the fault, held over 250 ms; or, when the load settled lower than that
// but at half of it or more, within 10 % of the settled rate (a machine
// whose speed wanders 2× within minutes, as the 2-core CI machine's does,
// can settle 30 % under a 2 s pre-fault rate with nothing wrong).
const (
	RecoveryTolerance = 0.10
	RecoveryWindow    = 250 * time.Millisecond
	SettleFloor       = 0.5
)

// Settled says whether the recovery was judged against a settled rate
// under the rate before the fault, and what fraction of it that was.
func (r Recovery) Settled() (float64, bool) {
	if r.PreRate <= 0 || r.SettledRate <= 0 {
		return 0, false
	}
	f := r.SettledRate / r.PreRate
	return f, f < 1-RecoveryTolerance
}

// JudgedRate is the rate the recovery is judged against: the lower of
// PreRate and SettledRate, or PreRate when the load settled below
// SettleFloor of it.
func (r Recovery) JudgedRate() float64 {
	if r.SettledRate >= SettleFloor*r.PreRate {
		return min(r.PreRate, r.SettledRate)
	}
	return r.PreRate
}

// Recovery judges a fault that happened at `at` (an instant within the
// timeline).
func (t *Timeline) Recovery(at time.Time) Recovery {
	fb := max(0, int(at.Sub(t.Start)/t.Bucket))
	r := Recovery{At: at.Sub(t.Start), FirstFailure: -1, FirstSuccess: -1, Recovered: -1}
	if fb > 0 {
		r.PreRate = t.rate(0, fb)
	}
	since := func(b int) time.Duration { return max(0, t.Start.Add(time.Duration(b)*t.Bucket).Sub(at)) }
	ffb, fsb := t.firstFailureAndSuccess(fb)
	if ffb >= 0 {
		r.FirstFailure = since(ffb)
	}
	if fsb >= 0 {
		r.FirstSuccess = since(fsb)
		r.SettledRate = t.settledRate(fsb)
	}
	hold := max(1, int(RecoveryWindow/t.Bucket))
	need := r.JudgedRate() * (1 - RecoveryTolerance) * float64(hold) * t.Bucket.Seconds()
	var lat float64
	var n int64
	for b := fb; b < len(t.OK); b++ {
		r.Failed += t.Failed[b]
		if r.Recovered >= 0 {
			continue
		}
		lat += t.LatencySum[b]
		n += t.OK[b]
		r.MaxLatency = max(r.MaxLatency, time.Duration(t.LatencyMax[b]*float64(time.Second)))
		if fsb >= 0 && b >= fsb && t.okOver(b, hold) >= need {
			r.Recovered = since(b)
		}
	}
	if r.FirstFailure < 0 {
		r.FirstSuccess, r.Recovered = 0, 0 // nothing failed: nothing to recover from
	}
	if n > 0 {
		r.MeanLatency = time.Duration(lat / float64(n) * float64(time.Second))
	}
	return r
}

// firstFailureAndSuccess are the buckets, from fb on, of the first failure
// and of the first success after it; -1 when there is none.
func (t *Timeline) firstFailureAndSuccess(fb int) (ffb, fsb int) {
	ffb, fsb = -1, -1
	for b := fb; b < len(t.OK); b++ {
		if ffb < 0 && t.Failed[b] > 0 {
			ffb = b
		} else if ffb >= 0 && t.OK[b] > 0 {
			return ffb, b
		}
	}
	return ffb, fsb
}

// settledRate is the successful rate over the last third of the buckets
// from fsb, at least one bucket, leaving out a last bucket that a window
// ends in part of (a timeline one bucket longer than a whole number of
// them).
func (t *Timeline) settledRate(fsb int) float64 {
	end := len(t.OK)
	if end-fsb > 3 {
		end-- // the last bucket may hold only the window's last instants
	}
	if end <= fsb {
		return 0
	}
	return t.rate(max(fsb, end-max(1, (end-fsb)/3)), end)
}

// rate is the successful rate over buckets [a, z), req/s.
func (t *Timeline) rate(a, z int) float64 {
	var s int64
	for b := a; b < z && b < len(t.OK); b++ {
		s += t.OK[b]
	}
	return float64(s) / (float64(z-a) * t.Bucket.Seconds())
}

// okOver sums the successes of k buckets from b; short of k buckets left,
// it returns -1.
func (t *Timeline) okOver(b, k int) float64 {
	if b+k > len(t.OK) {
		return -1
	}
	var s int64
	for i := b; i < b+k; i++ {
		s += t.OK[i]
	}
	return float64(s)
}

// String reads like the closing line of a fault report.
func (r Recovery) String() string {
	dur := func(d time.Duration) string {
		if d < 0 {
			return "never (within the window)"
		}
		return d.Round(time.Millisecond).String()
	}
	against := fmt.Sprintf("%.0f req/s", math.Round(r.PreRate))
	if f, _ := r.Settled(); r.JudgedRate() < r.PreRate {
		against = fmt.Sprintf("%.0f req/s, where the load settled, %.0f%% of the %.0f before", math.Round(r.SettledRate), f*100, math.Round(r.PreRate))
	}
	return fmt.Sprintf("%d failed requests; first failure after %s, first success after %s, recovered (within %.0f%% of %s) after %s; latency meanwhile mean %v max %v",
		r.Failed, dur(r.FirstFailure), dur(r.FirstSuccess), RecoveryTolerance*100, against, dur(r.Recovered),
		r.MeanLatency.Round(time.Microsecond), r.MaxLatency.Round(time.Microsecond))
}

// TimelineRecorder is the periodic.AccessLogger that fills a Timeline, for
// a loadgen that runs fortio itself (cmd/mbloadgen); Measure records one
// when Options.Timeline is set.
type TimelineRecorder struct{ *timeline }

// NewTimelineRecorder counts requests completing from start on, in
// buckets of width bucket over span, for threads fortio threads.
func NewTimelineRecorder(start time.Time, bucket, span time.Duration, threads int) *TimelineRecorder {
	return &TimelineRecorder{newTimeline(start, bucket, span, max(threads, 1))}
}

// Timeline sums the threads' buckets once the run is over.
func (r *TimelineRecorder) Timeline() *Timeline { return r.sum() }

// Loggers hands every request to several access loggers, in order.
func Loggers(ls ...periodic.AccessLogger) periodic.AccessLogger {
	if len(ls) == 1 {
		return ls[0]
	}
	return accessLoggers(ls)
}
