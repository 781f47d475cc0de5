package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
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
