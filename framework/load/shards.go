package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/validity"
)

// Split divides o over at most n loadgens: each gets an equal share of the
// connections (the first ones one more when they do not divide evenly) and
// of the rate in proportion to its connections. With fewer connections
// than loadgens, only as many loadgens as connections are used, one
// connection each. A flow's users and spawn rate are split the same way.
func Split(o Options, n int) []Options {
	if o.Flow != nil && o.Concurrency == 0 {
		o.Concurrency = max(o.Flow.Users, 1) // a flow's concurrency is its users
	}
	k := min(n, o.Concurrency)
	if k < 1 {
		k = 1
	}
	out := make([]Options, k)
	for i := range out {
		s := o
		s.Concurrency = o.Concurrency / k
		if i < o.Concurrency%k {
			s.Concurrency++
		}
		if !o.ClosedLoop() {
			s.QPS = o.QPS * float64(s.Concurrency) / float64(o.Concurrency)
		}
		if o.Flow != nil {
			f := o.Flow.clone()
			f.Users = s.Concurrency
			f.SpawnRate = o.Flow.SpawnRate * float64(s.Concurrency) / float64(o.Concurrency)
			s.Flow = f
		}
		if k > 1 {
			s.Labels = strings.TrimSpace(fmt.Sprintf("%s shard %d/%d", o.Labels, i+1, k))
		}
		out[i] = s
	}
	return out
}

// Merge sums the shards of one load into one result: counts and rates are
// added and the latency histograms, fortio's and HDR's, merged bucket by bucket (never their
// percentiles averaged). The result is invalid when the merged load is,
// when any shard is (each reason names the shard), or when the shards did
// not run together.
func Merge(o Options, shards []*Result, names []string) (*Result, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shard results")
	}
	h, hdr, err := mergeHistograms(o, shards)
	if err != nil {
		return nil, err
	}
	m := &Result{Options: o, TargetQPS: o.QPS, Codes: map[int]int64{}, Latency: h, HDR: hdr}
	first, last := addShards(m, shards)
	tls := make([]*Timeline, len(shards))
	for i, s := range shards {
		tls[i] = s.Timeline
	}
	m.Timeline = MergeTimelines(tls...)
	if m.Steps, err = mergeSteps(o, shards, names); err != nil {
		return nil, err
	}
	m.Invalid = append(o.Judge(m), judgeSteps(m)...)
	if len(shards) > 1 {
		judgeShards(m, shards, names, last.Sub(first))
	}
	return m, nil
}

// mergeHistograms merges the shards' fortio histograms, and their HDR
// histograms count by count: the merge has them only when every shard
// has.
func mergeHistograms(o Options, shards []*Result) (*fstats.HistogramData, *Latencies, error) {
	hs := make([]*fstats.HistogramData, 0, len(shards))
	hdrs := make([]*Latencies, 0, len(shards))
	for _, s := range shards {
		hs = append(hs, s.Latency)
		hdrs = append(hdrs, s.HDR)
	}
	h, err := stats.Merge(o.Resolution, hs...)
	if err != nil {
		return nil, nil, fmt.Errorf("merge loadgen histograms: %w", err)
	}
	hdr, err := MergeLatencies(hdrs...)
	if err != nil {
		return nil, nil, fmt.Errorf("merge loadgen HDR histograms: %w", err)
	}
	return h, hdr, nil
}

// addShards sums the shards' counts and rates into m, whose window runs
// from the first shard's start to the last shard's end; it returns the
// first and the last start.
func addShards(m *Result, shards []*Result) (first, last time.Time) {
	first, last = shards[0].Start, shards[0].Start
	var end time.Time
	for _, s := range shards {
		if s.Start.Before(first) {
			first = s.Start
		}
		if s.Start.After(last) {
			last = s.Start
		}
		if e := s.Start.Add(s.Elapsed); e.After(end) {
			end = e
		}
		m.AchievedQPS += s.AchievedQPS
		m.Requests += s.Requests
		m.Errors += s.Errors
		for c, n := range s.Codes {
			m.Codes[c] += n
		}
	}
	m.Start, m.Elapsed = first, end.Sub(first)
	return first, last
}

// judgeShards invalidates m for each shard's own reasons, and when the
// shards' starts spread over more than a twentieth of the window (at
// least 100 ms): the merged histogram would mix different loads.
func judgeShards(m *Result, shards []*Result, names []string, spread time.Duration) {
	for i, s := range shards {
		for _, why := range s.Invalid {
			m.Invalid.Add(why.Kind, "loadgen shard %d (%s): %s", i+1, names[i], why.Detail)
		}
	}
	tol := max(100*time.Millisecond, m.Options.Duration/20)
	if spread > tol {
		m.Invalid.Add(validity.ShardsApart, "loadgen shards did not run together: their starts spread over %v (tolerance %v), so the merged histogram mixes different loads",
			spread.Round(time.Millisecond), tol)
	}
}

// mergeSteps merges a flow's shards step by step.
func mergeSteps(o Options, shards []*Result, names []string) ([]*Result, error) {
	steps := make([]*Result, len(shards[0].Steps))
	for i, first := range shards[0].Steps {
		parts := make([]*Result, len(shards))
		for j, s := range shards {
			if len(s.Steps) != len(steps) || s.Steps[i].Step != first.Step {
				return nil, fmt.Errorf("merge: loadgen shard %d ran other flow steps than shard 1", j+1)
			}
			parts[j] = s.Steps[i]
		}
		so := first.Options
		so.Concurrency = o.Concurrency
		m, err := Merge(so, parts, names)
		if err != nil {
			return nil, fmt.Errorf("flow step %s: %w", first.Step, err)
		}
		m.Step = first.Step
		steps[i] = m
	}
	return steps, nil
}

// WarmAll warms every shard at once (see Warm).
func WarmAll(ctx context.Context, shards []Options) error {
	_, err := all(ctx, shards, func(ctx context.Context, o Options) (*Result, error) { return nil, Warm(ctx, o) })
	return err
}

// Session is a load ready for its measured window: every shard warmed up
// (Warm), or, for a flow, every shard's users ramped up and still running
// (Spawn), so that the window continues their load.
type Session struct {
	shards []Options
	swarms []*Swarm
}

// Start readies every shard at once for Session.Measure. Close the
// session when done.
func Start(ctx context.Context, shards []Options) (*Session, error) {
	s := &Session{shards: shards}
	if len(shards) == 0 || shards[0].Flow == nil {
		return s, WarmAll(ctx, shards)
	}
	sw, err := all(ctx, shards, Spawn)
	s.swarms = sw
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Measure measures every shard's window at once and returns each shard's
// result; Merge makes them one.
func (s *Session) Measure(ctx context.Context) ([]*Result, error) {
	if s.swarms == nil {
		return MeasureAll(ctx, s.shards)
	}
	return each(len(s.swarms), func(i int) (*Result, error) { return s.swarms[i].Measure(ctx) })
}

// Close stops a flow's users; it does nothing for other loads.
func (s *Session) Close() {
	for _, sw := range s.swarms {
		if sw != nil {
			sw.Stop()
		}
	}
}

// MeasureAll measures every shard's window at once, in-process, and
// returns each shard's result (see Measure); Merge makes them one.
func MeasureAll(ctx context.Context, shards []Options) ([]*Result, error) {
	return all(ctx, shards, Measure)
}

// all runs f on every shard at once. On error it returns what the other
// shards returned too, so that the caller can undo it.
func all[T any](ctx context.Context, shards []Options, f func(context.Context, Options) (T, error)) ([]T, error) {
	return each(len(shards), func(i int) (T, error) { return f(ctx, shards[i]) })
}

// each runs f(0) … f(n-1) at once (see all).
func each[T any](n int, f func(i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = f(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("loadgen shard %d/%d: %w", i+1, n, err)
		}
	}
	return out, nil
}
