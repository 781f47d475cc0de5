package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Share is how much of a span of wall time was measured windows: the
// rest is warm-ups, starting and stopping processes, reading counters
// and proofs, and everything else a run spends outside its windows.
type Share struct {
	Name     string        // "run" or a benchmark
	Measured time.Duration // the wall time the windows covered (summed, overlaps once)
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
// its last window, in the order the benchmarks first ran. Windows that
// ran at the same time (a duet's two halves) count once: Measured is the
// wall time some window covered. Records without a load are skipped.
func MeasuredShares(recs []Record, started, finished time.Time, warmup time.Duration) []Share {
	var order []string
	var all []window
	windows := map[string][]window{}
	for _, r := range recs {
		if r.Run == nil || r.Load == nil {
			continue
		}
		w := window{from: r.Load.Start, to: r.Load.Start.Add(r.Load.Elapsed)}
		if _, ok := windows[r.Benchmark]; !ok {
			order = append(order, r.Benchmark)
		}
		windows[r.Benchmark] = append(windows[r.Benchmark], w)
		all = append(all, w)
	}
	out := []Share{{Name: "run", Wall: finished.Sub(started), Measured: covered(all)}}
	for _, b := range order {
		ws := windows[b]
		from, to := ws[0].from, ws[0].to
		for _, w := range ws[1:] {
			from, to = minTime(from, w.from), maxTime(to, w.to)
		}
		out = append(out, Share{Name: b, Measured: covered(ws), Wall: to.Sub(from.Add(-warmup))})
	}
	return out
}

// window is one measured window's span.
type window struct{ from, to time.Time }

// covered is the wall time some of ws covers, overlaps counted once.
func covered(ws []window) time.Duration {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b window) int { return a.from.Compare(b.from) })
	var total time.Duration
	var end time.Time
	for _, w := range ws {
		if w.from.After(end) {
			end = w.from
		}
		if w.to.After(end) {
			total += w.to.Sub(end)
			end = w.to
		}
	}
	return total
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
