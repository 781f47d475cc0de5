package suite

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// planThresholds fails a scenario before it measures anything when one of
// its points has no threshold rule: the verdict would fail on it after
// the whole sweep; or when a rule for it names a value of one of its
// axes that it does not sweep (verdict.Thresholds.CheckValues). Scenarios without a meshed arm are never compared, so
// never checked.
func (s *Suite) planThresholds(b *testing.B, sc Scenario) {
	if s.thresholds == nil || len(sc.trail) > 0 || (len(sc.Arms) > 0 && !slices.Contains(sc.Arms, testbed.Meshed)) {
		return
	}
	bench := runLabels(b, sc, 0).Value(labels.Benchmark)
	points := s.gatePoints(sc, bench)
	plain := make([]map[string]string, len(points))
	for i, p := range points {
		plain[i] = p
	}
	if err := s.thresholds.CheckValues(bench, plain, s.ruleDomains()); err != nil {
		s.fatalf(b, "thresholds %s: %v", s.thresholds.File, err)
	}
	for _, p := range points {
		c, _ := strconv.Atoi(p[labels.Concurrency])
		var ls labels.Set
		for _, k := range slices.Sorted(maps.Keys(p)) {
			ls = append(ls, labels.Label{Key: k, Value: p[k]})
		}
		o := verdict.Observation{Labels: ls, Path: verdict.Path(p[labels.Path]), Concurrency: c}
		if _, ok := s.thresholds.MatchObservation(o); !ok {
			s.fatalf(b, "thresholds %s: no rule matches %s at path %s, c=%d, so its verdict would fail after the sweep; add a rule for it, or pass -thresholds none",
				s.thresholds.File, ls.Without(labels.Path, "loop"), o.Path, c)
		}
	}
}
