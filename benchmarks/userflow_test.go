package benchmarks

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// BenchmarkUserFlow is "To mesh or not to mesh": Locust users ramp up at a
// spawn rate, think between requests, and go through a BFF that calls the
// backend for them; the article read the average response time each user
// saw, with and without the mesh (to-mesh-or-not-to-mesh). Here 20 users
// start at 20 a second and each, 100 ms apart, opens the home page (one
// backend call) then the cart (three backend calls, in parallel). The ramp
// is the warm-up; the window reports the mean and p50/p95/p99 per step.
// Its windows are at least 3 s: a 1 s window held about 400 requests, and
// its p99 moved from 10.5 to 33 ms between repeats.
func BenchmarkUserFlow(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Path: testbed.TwoHop, MinWindow: 3 * time.Second, Flow: &load.Flow{
		Users: 20, SpawnRate: 20, Think: 100 * time.Millisecond,
		Steps: []load.Step{
			{Name: "home", Path: "/"},
			{Name: "cart", Path: "/cart", Fanout: 3},
		},
	}})
}
