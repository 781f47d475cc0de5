package suite

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// Ladder is Nighthawk's adaptive load as an axis: open-loop rates from
// Start, multiplied by Factor at every rung, for at most Rungs rungs,
// until the meshed arm misses its rate or its p99 breaks the SLO. That
// rung is kept, marked as past the knee (its misses are the finding, not a
// failed run), and the sweep stops: the records are the latency against
// throughput curve, and the summary names the highest rate each arm held
// within the SLO.
func Ladder(start, factor float64, rungs int, slo time.Duration) Axis {
	a := Rates()
	rate := start
	for range rungs {
		a.Values = append(a.Values, rateValue(math.Round(rate)))
		rate *= factor
	}
	a.Stop = func(ps []Point) (bool, string) {
		for _, p := range ps {
			if p.Arm == testbed.Baseline {
				continue
			}
			if why := beyondSLO(p.Run, slo); why != "" {
				return true, fmt.Sprintf("the %s arm %s", p.Arm, why)
			}
		}
		return false, ""
	}
	ladder := &ladderSLO{slo: slo}
	a.ladder = ladder
	for i, v := range a.Values {
		apply := v.Apply
		a.Values[i].Apply = func(s *Scenario) { apply(s); s.ladder = ladder }
	}
	return a
}

// ladderSLO is the latency objective of a ladder's rungs.
type ladderSLO struct{ slo time.Duration }

// beyondSLO says why a run is past the knee: a missed rate, or a p99
// over the SLO; "" when it held.
func beyondSLO(r *testbed.Run, slo time.Duration) string {
	if missed := r.Invalid.Of(validity.MissedRate); len(missed) > 0 {
		return "missed its rate: " + missed[0].Detail
	}
	if p99 := time.Duration(r.Load.Percentile(99) * float64(time.Second)); p99 > slo {
		return fmt.Sprintf("broke the SLO: p99 %v > %v at %.0f req/s", p99.Round(time.Microsecond), slo, r.Load.TargetQPS)
	}
	return ""
}

func rateValue(q float64) Value {
	return Value{Label: strconv.FormatFloat(q, 'f', -1, 64), Apply: func(s *Scenario) {
		prev := s.Window
		s.Window = func(w *testbed.Window) {
			if prev != nil {
				prev(w)
			}
			w.QPS = q
		}
	}}
}

// logKnees prints, per arm, the highest rate of a ladder held within its
// SLO.
func (s *Suite) logKnees(b *testing.B, sc Scenario, ax Axis) {
	knees := s.knees(s.points(b.Name(), sc), ax.ladder.slo)
	var parts []string
	for _, arm := range slices.Sorted(maps.Keys(knees)) {
		parts = append(parts, fmt.Sprintf("%s %.0f req/s", arm, knees[arm]))
	}
	if len(parts) == 0 {
		parts = []string{"none: every arm missed the first rung"}
	}
	s.logf("%s: highest rate held within p99 ≤ %v: %s", label(b, sc), ax.ladder.slo, strings.Join(parts, ", "))
}

// knees names, per arm, the highest rate of a ladder whose every run held
// the rate within the SLO, from its points.
func (s *Suite) knees(points []Point, slo time.Duration) map[testbed.Arm]float64 {
	held := map[testbed.Arm]float64{}
	broke := map[testbed.Arm]map[string]bool{}
	for _, p := range points {
		q := p.Label.Value(labels.QPS)
		if beyondSLO(p.Run, slo) != "" {
			if broke[p.Arm] == nil {
				broke[p.Arm] = map[string]bool{}
			}
			broke[p.Arm][q] = true
		}
	}
	for _, p := range points {
		q := p.Label.Value(labels.QPS)
		if v, err := strconv.ParseFloat(q, 64); err == nil && !broke[p.Arm][q] {
			held[p.Arm] = max(held[p.Arm], v)
		}
	}
	return held
}
