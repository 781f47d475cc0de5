package kube

import (
	"fmt"
	"strings"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/stats"
)

// split divides o over at most n loadgens: each gets an equal share of the
// connections (the first ones one more when they do not divide evenly) and
// of the rate in proportion to its connections. With fewer connections
// than loadgens, only as many loadgens as connections are used, one
// connection each.
func split(o load.Options, n int) []load.Options {
	k := min(n, o.Concurrency)
	if k < 1 {
		k = 1
	}
	out := make([]load.Options, k)
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

// shardResult turns one loadgen's fortio result into a load.Result for
// the shard's options o.
func shardResult(o load.Options, fr *fortioResult) *load.Result {
	r := load.NewResult(o, fr.StartTime, fr.ActualDuration, fr.ActualQPS, fr.RetCodes, fr.DurationHistogram)
	r.HDR = fr.MeshbenchHDR
	if r.Elapsed < o.Duration*9/10 {
		r.Invalid = append(r.Invalid, fmt.Sprintf("stopped early: ran %v of %v", r.Elapsed.Round(time.Millisecond), o.Duration))
	}
	return r
}

// merge sums the shards of one load into one result: counts and rates are
// added and the latency histograms, fortio's and HDR's, merged bucket by
// bucket (never their percentiles averaged). The merge has HDR histograms
// only when every shard has them. The result is invalid when the merged load is,
// when any shard is (each reason names the shard), or when the shards did
// not run together.
func merge(o load.Options, shards []*load.Result, names []string) (*load.Result, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shard results")
	}
	hs := make([]*fstats.HistogramData, 0, len(shards))
	hdrs := make([]*load.Latencies, 0, len(shards))
	for _, s := range shards {
		hs = append(hs, s.Latency)
		hdrs = append(hdrs, s.HDR)
	}
	h, err := stats.Merge(o.Resolution, hs...)
	if err != nil {
		return nil, fmt.Errorf("merge loadgen histograms: %w", err)
	}
	hdr, err := load.MergeLatencies(hdrs...)
	if err != nil {
		return nil, fmt.Errorf("merge loadgen HDR histograms: %w", err)
	}
	m := &load.Result{Options: o, TargetQPS: o.QPS, Codes: map[int]int64{}, Latency: h, HDR: hdr}
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
