package benchmarks

import (
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// BenchmarkOneHop is loadgen → backend, baseline against meshed, across the
// concurrency sweep: the per-hop figure vendors quote, at every c.
func BenchmarkOneHop(b *testing.B) { mb.Sweep(b, suite.Scenario{Path: testbed.OneHop}) }

// BenchmarkTwoHop is loadgen → frontend → backend. The summary prints it
// minus BenchmarkOneHop, at each c, as the cost of one more meshed hop
// (linkerd-86pct-throughput: two sidecars per extra hop, not one).
func BenchmarkTwoHop(b *testing.B) { mb.Sweep(b, suite.Scenario{Path: testbed.TwoHop}) }

// BenchmarkUpgradeGate is the default upgrade gate: the candidate against
// the reference at c=8, first at maximum rate (throughput and CPU per
// request), then open loop at a quarter of the capacity the slower meshed
// arm just showed (suite.DefaultGateFraction),
// where p99 is the proxies' and not a queue's. It runs in a gate only
// (-candidate or -reference); fixtures/gates says what each point gates.
func BenchmarkUpgradeGate(b *testing.B) {
	mb.Sweep(b, suite.Scenario{
		Concurrency: []int{8},
		Axes:        []suite.Axis{suite.GateLoad(suite.DefaultGateFraction)},
		Arms:        mb.GateArms(),
		Requires:    []suite.Requirement{mb.UpgradeGateRun()},
	})
}
