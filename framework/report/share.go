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

// Gaps is where a run's wall time outside its measured windows went, by
// where the gap fell: before the first window (building, starting and
// deploying), between two windows of one benchmark (each run's warm-up,
// its counters, proofs and records, and the other arm's start in a
// round), between the last window of one benchmark and the first of the
// next (stopping one scenario's processes and starting the next's), and
// after the last window (until the results were written). With the
// measured time they add up to the run's wall time.
type Gaps struct {
	Before, Within, Between, After time.Duration
	// WithinGaps and BetweenGaps count the gaps summed in Within and
	// Between.
	WithinGaps, BetweenGaps int
	// Warmups counts the windows that began with a warm-up (their load's
	// Warmup > 0), of Windows, and Warmup is those warm-ups' time: part
	// of the gaps above.
	Warmups, Windows int
	Warmup           time.Duration
}

// MeasuredGaps splits the run's time outside its windows (Gaps). Windows
// that overlap (a duet's two halves) count as one span, of the benchmark
// that started it. Records without a load are skipped.
func MeasuredGaps(recs []Record, started, finished time.Time) Gaps {
	type span struct {
		window
		bench string
	}
	var spans []span
	for _, r := range recs {
		if r.Run != nil && r.Load != nil {
			spans = append(spans, span{window{r.Load.Start, r.Load.Start.Add(r.Load.Elapsed)}, r.Benchmark})
		}
	}
	var g Gaps
	g.Warmups, g.Windows, g.Warmup = warmups(recs)
	if len(spans) == 0 {
		g.Before = finished.Sub(started)
		return g
	}
	slices.SortStableFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	g.Before = max(spans[0].from.Sub(started), 0)
	end, bench := spans[0].to, spans[0].bench
	for _, s := range spans[1:] {
		if gap := s.from.Sub(end); gap > 0 {
			if s.bench == bench {
				g.Within += gap
				g.WithinGaps++
			} else {
				g.Between += gap
				g.BetweenGaps++
			}
		}
		end, bench = maxTime(end, s.to), s.bench
	}
	g.After = max(finished.Sub(end), 0)
	return g
}

// warmups counts the windows with a load, those of them that began with
// a warm-up, and the warm-ups' time.
func warmups(recs []Record) (warmed, windows int, total time.Duration) {
	for _, r := range recs {
		if r.Run == nil || r.Load == nil {
			continue
		}
		windows++
		if w := r.Load.Options.Warmup; w > 0 {
			warmed++
			total += w
		}
	}
	return warmed, windows, total
}

// String prints the gaps as one line: "outside the windows: 20.1 s
// before the first, 80.4 s between a benchmark's windows (0.62 s each
// of 129), 35.0 s between benchmarks (2.69 s each of 13), 2.1 s after
// the last; warm-ups 16.2 s (54 of 143 windows began with one)".
func (g Gaps) String() string {
	each := func(d time.Duration, n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f s each of %d)", d.Seconds()/float64(n), n)
	}
	return fmt.Sprintf("outside the windows: %.1f s before the first, %.1f s between a benchmark's windows%s, %.1f s between benchmarks%s, %.1f s after the last; warm-ups %.1f s (%d of %d windows began with one)",
		g.Before.Seconds(), g.Within.Seconds(), each(g.Within, g.WithinGaps), g.Between.Seconds(), each(g.Between, g.BetweenGaps), g.After.Seconds(),
		g.Warmup.Seconds(), g.Warmups, g.Windows)
}
