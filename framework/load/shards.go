package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/stats"
)

// Split divides o over at most n loadgens: each gets an equal share of the
// connections (the first ones one more when they do not divide evenly) and
// of the rate in proportion to its connections. With fewer connections
// than loadgens, only as many loadgens as connections are used, one
// connection each.
func Split(o Options, n int) []Options {
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
		if k > 1 {
			s.Labels = strings.TrimSpace(fmt.Sprintf("%s shard %d/%d", o.Labels, i+1, k))
		}
		out[i] = s
	}
	return out
}

// Merge sums the shards of one load into one result: counts and rates are
// added and the latency histograms merged bucket by bucket (never their
// percentiles averaged). The result is invalid when the merged load is,
// when any shard is (each reason names the shard), or when the shards did
// not run together.
func Merge(o Options, shards []*Result, names []string) (*Result, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shard results")
	}
	hs := make([]*fstats.HistogramData, 0, len(shards))
	for _, s := range shards {
		hs = append(hs, s.Latency)
	}
	h, err := stats.Merge(o.Resolution, hs...)
	if err != nil {
		return nil, fmt.Errorf("merge loadgen histograms: %w", err)
	}
	m := &Result{Options: o, TargetQPS: o.QPS, Codes: map[int]int64{}, Latency: h}
	first, last := shards[0].Start, shards[0].Start
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
	tls := make([]*Timeline, len(shards))
	for i, s := range shards {
		tls[i] = s.Timeline
	}
	m.Timeline = MergeTimelines(tls...)
	m.Invalid = o.Judge(m)
	if len(shards) > 1 {
		for i, s := range shards {
			for _, why := range s.Invalid {
				m.Invalid = append(m.Invalid, fmt.Sprintf("loadgen shard %d (%s): %s", i+1, names[i], why))
			}
		}
		tol := max(100*time.Millisecond, o.Duration/20)
		if spread := last.Sub(first); spread > tol {
			m.Invalid = append(m.Invalid, fmt.Sprintf("loadgen shards did not run together: their starts spread over %v (tolerance %v), so the merged histogram mixes different loads",
				spread.Round(time.Millisecond), tol))
		}
	}
	return m, nil
}

// WarmAll warms every shard at once (see Warm).
func WarmAll(ctx context.Context, shards []Options) error {
	_, err := all(ctx, shards, func(ctx context.Context, o Options) (*Result, error) { return nil, Warm(ctx, o) })
	return err
}

// MeasureAll measures every shard's window at once, in-process, and
// returns each shard's result (see Measure); Merge makes them one.
func MeasureAll(ctx context.Context, shards []Options) ([]*Result, error) {
	return all(ctx, shards, Measure)
}

func all(ctx context.Context, shards []Options, f func(context.Context, Options) (*Result, error)) ([]*Result, error) {
	out := make([]*Result, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, o := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = f(ctx, o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("loadgen shard %d/%d: %w", i+1, len(shards), err)
		}
	}
	return out, nil
}
