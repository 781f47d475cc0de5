package history

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
)

// Metric names a figure history follows.
type Metric string

// The metrics, each read from report.Compare's comparison of a run's
// meshed and baseline arms (the figures the run's own report shows).
const (
	// P50Ratio and P99Ratio are the meshed/baseline latency ratios: the
	// median over repeat pairs of meshed p50 (p99) over baseline p50
	// (p99), as Comparison.P50Pct and P99Pct hold them in percent.
	P50Ratio Metric = "p50Ratio"
	P99Ratio Metric = "p99Ratio"
	// ThroughputRatio is meshed/baseline achieved throughput, 1 less the
	// throughput loss (Comparison.QPSLossPct).
	ThroughputRatio Metric = "throughputRatio"
	// SidecarCPUPer1k is the sidecars' CPU per 1000 requests, CPU-ms
	// (ArmStats.CPUPer1k of the meshed arm, the gate's sidecarCPUPer1kReq).
	SidecarCPUPer1k Metric = "sidecarCPUPer1kReq"
	// P99 is the meshed arm's p99 latency, ms (ArmStats.P99).
	P99 Metric = "p99"
)

// Metrics are the metrics history follows, in the order it shows them.
var Metrics = []Metric{P50Ratio, P99Ratio, ThroughputRatio, SidecarCPUPer1k, P99}

var metricInfo = map[Metric]struct {
	label, unit string
	worse       gate.Direction
}{
	P50Ratio:        {"p50 meshed/baseline", "×", gate.HigherIsWorse},
	P99Ratio:        {"p99 meshed/baseline", "×", gate.HigherIsWorse},
	ThroughputRatio: {"throughput meshed/baseline", "×", gate.LowerIsWorse},
	SidecarCPUPer1k: {"sidecar CPU per 1k req", "CPU-ms", gate.HigherIsWorse},
	P99:             {"meshed p99", "ms", gate.HigherIsWorse},
}

// Label is how m reads in a table, e.g. "p99 meshed/baseline".
func (m Metric) Label() string { return metricInfo[m].label }

// Unit is m's unit: "×" for a ratio, "CPU-ms", "ms".
func (m Metric) Unit() string { return metricInfo[m].unit }

// Worse is the direction in which m gets worse.
func (m Metric) Worse() gate.Direction { return metricInfo[m].worse }

// value is m's figure in one comparison, if it has one.
func (m Metric) value(c report.Comparison) (float64, bool) {
	var s stats.Summary
	switch m {
	case P50Ratio, P99Ratio, ThroughputRatio:
		if len(c.Problems) > 0 {
			return 0, false // no overhead without both arms
		}
		s = map[Metric]stats.Summary{P50Ratio: c.P50Pct, P99Ratio: c.P99Pct, ThroughputRatio: c.QPSLossPct}[m]
		if s.N == 0 {
			return 0, false
		}
		if m == ThroughputRatio {
			return 1 - s.Median/100, true
		}
		return 1 + s.Median/100, true
	case SidecarCPUPer1k:
		if c.Meshed.CPUInvalid > 0 {
			return 0, false // a run's CPU counters were diluted: no figure
		}
		s = c.Meshed.CPUPer1k[measure.RoleSidecar]
	case P99:
		s = c.Meshed.P99
	}
	return s.Median, s.N > 0 && s.Median > 0
}

// Point is one run's figure in a series.
type Point struct {
	// Run is the run's index in its group's Runs.
	Run int `json:"run"`
	// Value is the run's figure in the metric's unit: a ratio (unitless),
	// CPU-ms per 1000 requests, or ms.
	Value float64 `json:"value"`
}

// Change is a change point of a series, with what a reader needs to act on
// it.
type Change struct {
	Split
	// Run is the group's index of the first run after the change; File and
	// Started name it.
	Run     int       `json:"run"`
	File    string    `json:"file"`
	Started time.Time `json:"started"`
	// Percent is the change of the mean, (after/before - 1) × 100.
	Percent float64 `json:"percent"`
	// Interval is the ratio after/before of the two segments' geometric
	// means with its 95 % Welch interval (stats.UnpairedLogRatio); nil
	// when a segment has fewer than two runs (or a value ≤ 0).
	Interval *stats.RatioInterval `json:"interval,omitempty"`
	// Worse says the change is in the metric's bad direction.
	Worse bool `json:"worse"`
}

// IntervalLevel is the confidence level of a change's interval.
const IntervalLevel = 0.95

// Series is one metric of one scenario over a group's runs.
type Series struct {
	// Scenario is named as the gate names it (gate.ScenarioName), e.g.
	// "benchmark=BenchmarkOneHop/c=8/path=one-hop".
	Scenario string `json:"scenario"`
	// Metric is the figure followed.
	Metric Metric `json:"metric"`
	// Points are the runs' figures, oldest first.
	Points []Point `json:"points"`
	// Changes are the series' change points, oldest first.
	Changes []Change `json:"changes,omitempty"`
}

// scenarioName is gate.ScenarioName for a comparison.
func scenarioName(c report.Comparison) string {
	if len(c.Labels) == 0 {
		return fmt.Sprintf("%s/path=%s/c=%d", c.Benchmark, c.Path, c.Concurrency)
	}
	ls := c.Labels
	if _, ok := ls.Get(labels.Path); !ok {
		ls = ls.With(labels.Path, string(c.Path))
	}
	return ls.String()
}

// collect builds g's series from its runs, leaving out (with a note) the
// scenarios of a run with an invalid repeat.
func (g *Group) collect() {
	points := map[string]map[Metric][]Point{}
	var order []string
	for i, in := range g.Runs {
		for _, c := range report.Compare(in.Results.Records) {
			name := scenarioName(c)
			if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
				g.Notes = append(g.Notes, fmt.Sprintf("run %d (%s): %s left out: %d invalid run(s)", i+1, in.File, name, n))
				continue
			}
			if points[name] == nil {
				points[name] = map[Metric][]Point{}
				order = append(order, name)
			}
			for _, m := range Metrics {
				if v, ok := m.value(c); ok {
					points[name][m] = append(points[name][m], Point{Run: i, Value: v})
				}
			}
		}
	}
	for _, name := range order {
		for _, m := range Metrics {
			if ps := points[name][m]; len(ps) > 0 {
				g.Series = append(g.Series, Series{Scenario: name, Metric: m, Points: ps})
			}
		}
	}
}

// detect finds s's change points and describes each.
func (s *Series) detect(g *Group, o Options) error {
	xs := s.values()
	splits, err := Detect(xs, o)
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.Scenario, s.Metric, err)
	}
	s.Changes = nil
	for i, sp := range splits {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = splits[i-1].Index
		}
		if i+1 < len(splits) {
			hi = splits[i+1].Index
		}
		in := g.Runs[s.Points[sp.Index].Run]
		c := Change{Split: sp, Run: s.Points[sp.Index].Run, File: in.File, Started: in.Results.Started, Percent: (sp.Ratio() - 1) * 100}
		if iv, err := stats.UnpairedLogRatio(xs[lo:sp.Index], xs[sp.Index:hi], IntervalLevel); err == nil {
			c.Interval = &iv
		}
		c.Worse = (s.Metric.Worse() == gate.HigherIsWorse) == (c.Percent > 0) && c.Percent != 0
		s.Changes = append(s.Changes, c)
	}
	return nil
}

func (s Series) values() []float64 {
	xs := make([]float64, len(s.Points))
	for i, p := range s.Points {
		xs[i] = p.Value
	}
	return xs
}

// History is runs grouped and their series analysed.
type History struct {
	// Options are the detection's settings, defaults filled in.
	Options Options `json:"options"`
	// FollowVersion is Config.FollowVersion.
	FollowVersion bool `json:"followVersion"`
	// Groups are the runs' groups, in ID order.
	Groups []*Group `json:"groups"`
	// Skipped are runs left out whole: the same run read twice (a journal
	// beside the results file it became).
	Skipped []string `json:"skipped,omitempty"`
}

// Config is how Build groups and detects.
type Config struct {
	Options
	// FollowVersion keeps the runs of one mesh in one group across its
	// versions and sidecar variants (version, threads, the sidecar and
	// the candidate may change; each change is noted at the run it happens).
	FollowVersion bool
}

// Build groups the runs, orders each group by start time and finds the
// change points of every series.
func Build(ins []report.Input, cfg Config) (*History, error) {
	o, err := cfg.Normalize()
	if err != nil {
		return nil, err
	}
	h := &History{Options: o, FollowVersion: cfg.FollowVersion}
	ins, h.Skipped = dedupe(ins)
	h.Groups = group(ins, cfg.FollowVersion)
	for _, g := range h.Groups {
		g.noteSidecars()
		g.collect()
		for i := range g.Series {
			if err := g.Series[i].detect(g, o); err != nil {
				return nil, fmt.Errorf("group %d: %w", g.ID, err)
			}
		}
	}
	return h, nil
}

// dedupe keeps one input per run (RunID), a results file over its
// journal, and says which it left out.
func dedupe(ins []report.Input) ([]report.Input, []string) {
	byID := map[string]int{}
	var out []report.Input
	var skipped []string
	for _, in := range ins {
		id := in.Results.RunID()
		i, seen := byID[id]
		switch {
		case !seen:
			byID[id] = len(out)
			out = append(out, in)
		case isJournal(out[i].File) && !isJournal(in.File):
			skipped = append(skipped, fmt.Sprintf("%s: run %s, read from %s", out[i].File, id, in.File))
			out[i] = in
		default:
			skipped = append(skipped, fmt.Sprintf("%s: run %s, read from %s", in.File, id, out[i].File))
		}
	}
	return out, skipped
}

func isJournal(file string) bool { return strings.HasSuffix(file, report.JournalExt) }

// noteSidecars notes each run where the sidecar differs from the run
// before (only a group that follows a version has any).
func (g *Group) noteSidecars() {
	for i := 1; i < len(g.Runs); i++ {
		if a, b := Sidecar(g.Runs[i-1].Results), Sidecar(g.Runs[i].Results); a != b {
			g.Notes = append(g.Notes, fmt.Sprintf("run %d (%s): sidecar %s, after %s", i+1, g.Runs[i].File, b, a))
		}
	}
}

// Regression is a series whose newest run sits after a change point in
// the bad direction.
type Regression struct {
	// Group is the group's ID, Series the series and Change its last
	// change point.
	Group  int
	Series Series
	Change Change
}

// Regressions returns every series whose last change point is worse by
// more than pct percent (for throughput: a drop of more than pct
// percent): its newest run sits after that change.
func (h *History) Regressions(pct float64) []Regression {
	var out []Regression
	for _, g := range h.Groups {
		for _, s := range g.Series {
			if len(s.Changes) == 0 {
				continue
			}
			c := s.Changes[len(s.Changes)-1]
			if c.Worse && math.Abs(c.Percent) > pct {
				out = append(out, Regression{Group: g.ID, Series: s, Change: c})
			}
		}
	}
	return out
}

// Runs counts the runs in all groups.
func (h *History) Runs() int {
	n := 0
	for _, g := range h.Groups {
		n += len(g.Runs)
	}
	return n
}

// scenarios are g's scenarios in the order of their first series.
func (g *Group) scenarios() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range g.Series {
		if !seen[s.Scenario] {
			seen[s.Scenario] = true
			out = append(out, s.Scenario)
		}
	}
	return out
}
