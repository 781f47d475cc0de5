package benchmarks

import (
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/target"
)

// BenchmarkOneHop is loadgen → backend, baseline against meshed, across the
// concurrency sweep: the per-hop figure vendors quote, at every c.
func BenchmarkOneHop(b *testing.B) { mb.Sweep(b, suite.Scenario{Path: target.OneHop}) }

// BenchmarkTwoHop is loadgen → frontend → backend. The summary prints it
// minus BenchmarkOneHop, at each c, as the cost of one more meshed hop
// (linkerd-86pct-throughput: two sidecars per extra hop, not one).
func BenchmarkTwoHop(b *testing.B) { mb.Sweep(b, suite.Scenario{Path: target.TwoHop}) }
