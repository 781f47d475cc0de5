package suite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// The default gate's points, known before its first run: maximum rate
// (closed loop) and the open-loop point, whose rate is set only once the
// first has run. The shipped fixture gates CPU, throughput and RSS on the
// first and CPU, p99 and RSS on the second: a family of 6 decisions.
func TestGatePointsOfTheDefaultGate(t *testing.T) {
	s := NewWithConfig(&Config{Candidate: "caddy+access-log", Concurrency: []int{1, 4}})
	s.gate = testGateFixture(t)
	sc := Scenario{Concurrency: []int{8}, Axes: []Axis{GateLoad(DefaultGateFraction)}}
	points := s.gatePoints(sc, "BenchmarkUpgradeGate")
	assert.Equal(t, []gate.Labels{
		{"benchmark": "BenchmarkUpgradeGate", "load": "max", "c": "8", "path": "one-hop", "loop": "closed"},
		{"benchmark": "BenchmarkUpgradeGate", "load": "open", "c": "8", "path": "one-hop", "loop": "open"},
	}, points)
	n := 0
	for _, l := range points {
		n += len(s.gate.Gated(l))
	}
	assert.Equal(t, 6, n)
}

// A rule that matches on a label none of the gated benchmark's points
// has stops it before it measures, naming the file, line and field.
func TestGateLabelsCheckedBeforeTheFirstRun(t *testing.T) {
	g, err := gate.Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {lop: open}\n    maxIncreasePct: 15\n"))
	require.NoError(t, err)
	s := NewWithConfig(&Config{Candidate: "caddy+access-log"})
	s.gate = g
	points := s.gatePoints(Scenario{Concurrency: []int{8}, Axes: []Axis{GateLoad(DefaultGateFraction)}}, "BenchmarkUpgradeGate")
	err = g.CheckLabels(points)
	var fe *verdict.FixtureError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 3, fe.Line, "the rule's line")
	assert.Equal(t, "rules[0].match.lop", fe.Field)
}

// The points the gate decides on are kept for the results, before the
// first run, so that `meshbench gate` can tell a run that decided them
// all from one cut short; a point the fixture gates nothing on is not
// among them. The run's own failures go beside them.
func TestGatePlanAndFailureGoIntoTheResults(t *testing.T) {
	g, err := gate.Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {loop: open}\n    maxIncreasePct: 15\n"))
	require.NoError(t, err)
	s := NewWithConfig(&Config{Candidate: "caddy+access-log"})
	s.gate = g
	points := s.gatePoints(Scenario{Concurrency: []int{8}, Axes: []Axis{GateLoad(DefaultGateFraction)}}, "BenchmarkUpgradeGate")
	assert.Equal(t, 1, s.notePlanned("BenchmarkUpgradeGate", points))
	plan, failed := s.plannedAndFailed(nil)
	assert.Equal(t, []map[string]string{{"benchmark": "BenchmarkUpgradeGate", "load": "open", "c": "8", "path": "one-hop", "loop": "open"}}, plan)
	assert.Empty(t, failed)

	s.failed = true // an invalid run fails go test, not the gate
	_, failed = s.plannedAndFailed(nil)
	assert.Empty(t, failed)
	s.fatal = true
	_, failed = s.plannedAndFailed(errors.New("thresholds broken: p99"))
	assert.Equal(t, "a benchmark stopped on a fatal error (its FAIL line is in the log); thresholds broken: p99", failed)
}

// The gate's decisions are about the points it planned, label for label:
// the labels a real run's records carry (parsed from go test's
// sub-benchmark names) give the same scenarios as gatePoints, so that a
// whole run leaves none of its planned points undecided.
func TestGateDecisionsAreAboutThePlannedPoints(t *testing.T) {
	s := NewWithConfig(&Config{Candidate: "caddy+access-log", Concurrency: []int{1, 4}})
	s.gate = testGateFixture(t)
	points := s.gatePoints(Scenario{Concurrency: []int{8}, Axes: []Axis{GateLoad(DefaultGateFraction)}}, "BenchmarkUpgradeGate")
	var recs []report.Record
	for _, point := range []string{"max", "open"} {
		for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
			run := &testbed.Run{Arm: arm, Path: testbed.OneHop, Load: &load.Result{}}
			if point == "open" {
				run.Load.Options.QPS = 500
			}
			recs = append(recs, report.Record{Labels: labels.Parse("BenchmarkUpgradeGate/load=" + point + "/c=8/arm=" + string(arm)), Concurrency: 8, Run: run})
		}
	}
	var decided []gate.Labels
	for _, m := range gateMeasurements(s.gate, recs) {
		if !slices.ContainsFunc(decided, func(l gate.Labels) bool { return l.String() == m.Scenario.String() }) {
			decided = append(decided, m.Scenario)
		}
	}
	assert.Equal(t, points, decided)
}

// A gate rule whose value no point can take (loop: opn) is refused when
// the fixture is loaded, before anything is set up or measured, and so
// is one naming a benchmark the package does not have; a typo used to
// ungate p99 with exit 0.
func TestGateRuleValuesRefusedBeforeMeasuring(t *testing.T) {
	file := filepath.Join(t.TempDir(), "g.yaml")
	require.NoError(t, os.WriteFile(file, []byte("target: local\nrules:\n  - metric: p99\n    match: {loop: opn}\n    maxIncreasePct: 15\n"+
		"  - metric: throughput\n    match: {benchmark: BenchmarkUpgradeGat}\n    maxDecreasePct: 5\n"), 0o644))
	s := NewWithConfig(&Config{Candidate: "caddy+access-log", Gate: file, Target: "local"})
	s.plan.all = []string{"BenchmarkOneHop", "BenchmarkUpgradeGate"}
	err := s.loadGate()
	assert.EqualError(t, err, file+":3: rules[0].match.loop: \"opn\" matches no value of loop, so the rule gates nothing; did you mean open?\n"+
		file+":6: rules[1].match.benchmark: \"BenchmarkUpgradeGat\" matches no value of benchmark, so the rule gates nothing; did you mean BenchmarkUpgradeGate?")
	assert.Nil(t, s.gate)
}

// The default gate fixture is the mesh's own where the module has one:
// istio-proxyless on kind gates the workload's CPU, not the agent's; every
// other mesh gets the target's. Both shipped files load for kind and gate
// the default gate's points.
func TestDefaultGateIsTheMeshsOwn(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "fixtures/gates/kind-istio-proxyless.yaml"), defaultGate(root, "kind", "istio-proxyless"))
	assert.Equal(t, filepath.Join(root, "fixtures/gates/kind.yaml"), defaultGate(root, "kind", "sidecar"))
	assert.Equal(t, filepath.Join(root, "fixtures/gates/kind.yaml"), defaultGate(root, "kind", ""))
	assert.Equal(t, filepath.Join(root, "fixtures/gates/local.yaml"), defaultGate(root, "local", "istio-proxyless"))

	g, err := gate.Load(defaultGate(root, "kind", "istio-proxyless"))
	require.NoError(t, err)
	require.NoError(t, g.CheckTarget("kind"))
	max := gate.Labels{"benchmark": "BenchmarkUpgradeGate", "load": "max", "c": "8", "path": "one-hop", "loop": "closed"}
	open := gate.Labels{"benchmark": "BenchmarkUpgradeGate", "load": "open", "c": "8", "path": "one-hop", "loop": "open"}
	assert.Equal(t, []gate.Metric{gate.Throughput, gate.WorkloadCPUPer1kReq}, g.Gated(max))
	assert.Equal(t, []gate.Metric{gate.P99, gate.WorkloadCPUPer1kReq}, g.Gated(open))
}
