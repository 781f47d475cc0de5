package report

import (
	"fmt"
	"strings"
	"time"
)

// Share is how much of a span of wall time was measured windows: the
// rest is warm-ups, starting and stopping processes, reading counters
// and proofs, and everything else a run spends outside its windows.
type Share struct {
	Name     string        // "run" or a benchmark
	Measured time.Duration // the windows' lengths, summed
	Wall     time.Duration // the span they were measured in
}

// Pct is Measured as a percentage of Wall, 0 for an empty span.
func (s Share) Pct() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return 100 * s.Measured.Seconds() / s.Wall.Seconds()
}

// String prints the share as "name 12.3 s of 45.6 s (27.0 %)".
func (s Share) String() string {
	return fmt.Sprintf("%s %.1f s of %.1f s (%.1f %%)", s.Name, s.Measured.Seconds(), s.Wall.Seconds(), s.Pct())
}

// MeasuredShares gives the share of the whole run, from started to
// finished, and then of each benchmark, from the start of its first
// window's warm-up (its first window's start less warmup) to the end of
// its last window, in the order the benchmarks first ran. Records without
// a load are skipped.
func MeasuredShares(recs []Record, started, finished time.Time, warmup time.Duration) []Share {
	run := Share{Name: "run", Wall: finished.Sub(started)}
	type span struct {
		from, to time.Time
		measured time.Duration
	}
	var order []string
	spans := map[string]*span{}
	for _, r := range recs {
		if r.Run == nil || r.Load == nil {
			continue
		}
		from, to := r.Load.Start.Add(-warmup), r.Load.Start.Add(r.Load.Elapsed)
		run.Measured += r.Load.Elapsed
		sp, ok := spans[r.Benchmark]
		if !ok {
			sp = &span{from: from, to: to}
			spans[r.Benchmark] = sp
			order = append(order, r.Benchmark)
		}
		sp.from, sp.to = minTime(sp.from, from), maxTime(sp.to, to)
		sp.measured += r.Load.Elapsed
	}
	out := []Share{run}
	for _, b := range order {
		sp := spans[b]
		out = append(out, Share{Name: b, Measured: sp.measured, Wall: sp.to.Sub(sp.from)})
	}
	return out
}

// FormatShares is one line: "measured windows: run 423.7 s of 563.3 s
// (75.2 %); BenchmarkOneHop 72.0 s of 85.9 s (83.8 %); …".
func FormatShares(ss []Share) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return "measured windows: " + strings.Join(parts, "; ")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
