package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

func TestFitWindow(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name           string
		left           time.Duration
		runs           int
		overhead, want time.Duration
		ok             bool
	}{
		{"fits as asked", 100 * s, 10, 400 * time.Millisecond, 3 * s, true},                       // 34 s of 100
		{"exactly", 34 * s, 10, 400 * time.Millisecond, 3 * s, true},                              // 10 × 3.4 s
		{"shortened", 20 * s, 10, 400 * time.Millisecond, 1600 * time.Millisecond, true},          // 2 s a run, less 0.4
		{"truncated to 0.1 s", 25 * s, 12, 400 * time.Millisecond, 1600 * time.Millisecond, true}, // 2.083 s a run
		{"at the least", 14 * s, 10, 400 * time.Millisecond, 1000 * time.Millisecond, true},       // 1.4 s a run
		{"under the least: skipped", 13 * s, 10, 400 * time.Millisecond, 0, false},                // 1.3 s a run
		{"nothing left", -5 * s, 10, 400 * time.Millisecond, 0, false},                            // past the end
		{"no runs", 0, 0, 400 * time.Millisecond, 3 * s, true},                                    // nothing to fit
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := fitWindow(tc.left, tc.runs, tc.overhead, 3*s, s)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTopLevelOfABenchPattern(t *testing.T) {
	for pattern, want := range map[string]string{
		".":                       ".",
		"OneHop$":                 "OneHop$",
		"OneHop$/c=8":             "OneHop$",
		"Upgrade[/]Gate/c=8":      "Upgrade[/]Gate",
		`One\/Hop/c=1`:            `One\/Hop`,
		"(OneHop|TwoHop/x)/c=1":   "(OneHop|TwoHop/x)",
		"^BenchmarkUpgradeGate$/": "^BenchmarkUpgradeGate$",
	} {
		assert.Equal(t, want, topLevel(pattern), pattern)
	}
}

// The planner counts the runs a sweep will make: a placement's own c
// replaces the concurrency sweep (it counted 72 runs for BenchmarkPlacement's
// 18, and shortened its windows for nothing), and a flow runs at its users.
func TestScenarioRunsApplyEachAxisValue(t *testing.T) {
	s := NewWithConfig(&Config{Target: "local", Concurrency: []int{1, 4, 16, 32}, Repeats: 3})
	placement := Scenario{Axes: []Axis{Placements(
		Placement{Where: testbed.InMesh, Loadgens: 1, C: 32},
		Placement{Where: testbed.OutOfMesh, Loadgens: 1, C: 32},
		Placement{Where: testbed.InMesh, Loadgens: 4, C: 32},
	)}}
	assert.Equal(t, 18, s.scenarioRuns(placement, 2), "3 placements × 1 c × 2 arms × 3 rounds")
	assert.Equal(t, 24, s.scenarioRuns(Scenario{}, 2), "4 c × 2 arms × 3 rounds")
	payloads := Scenario{Concurrency: []int{8}, Axes: []Axis{Payloads(128, 1<<10), Threads(1, 2, 0)}}
	assert.Equal(t, 36, s.scenarioRuns(payloads, 2), "2 payloads × 3 thread counts × 1 c × 2 arms × 3 rounds")
	flow := Scenario{Flow: &load.Flow{Users: 20, SpawnRate: 20, Steps: []load.Step{{Name: "home", Path: "/"}}}}
	assert.Equal(t, 6, s.scenarioRuns(flow, 2), "one point at its users × 2 arms × 3 rounds")
}

// A fault needs its After and time to recover inside the window; a slow
// scenario names its own least window; the default 1 s window is
// lengthened to it (the 1 s default left BenchmarkProxyKilled's fault, 1 s
// in, no time to recover: "no recovery within the window").
func TestLeastWindowLengthensTheDefault(t *testing.T) {
	killed := Scenario{Fault: &testbed.Fault{Action: testbed.Kill, Workload: "backend", Sidecar: true, After: time.Second}}
	assert.Equal(t, 3*time.Second, killed.leastWindow())
	assert.Equal(t, 3*time.Second, Scenario{MinWindow: 3 * time.Second}.leastWindow())
	assert.Equal(t, time.Duration(0), Scenario{}.leastWindow())

	s := NewWithConfig(&Config{Target: "local", Duration: MainJobWindow, Repeats: 3})
	assert.Equal(t, 3*time.Second, s.lengthenWindow("BenchmarkProxyKilled", killed).window)
	assert.Equal(t, time.Duration(0), s.lengthenWindow("BenchmarkOneHop", Scenario{}).window)
	s.Config.Duration = 5 * time.Second
	assert.Equal(t, time.Duration(0), s.lengthenWindow("BenchmarkProxyKilled", killed).window, "a longer -duration stands")
}

// A rate ladder's low rungs hold MinRequests: at 1000 req/s a 1 s window
// held 1000 requests, and its p99 was its 10 slowest. The window of a run
// at a rate is lengthened to MinRequests over it, rounded up to 100 ms;
// a longer window stands, and a closed-loop run is never lengthened. The
// plan counts the time it adds.
func TestMinRequestsLengthensAnOpenLoopWindow(t *testing.T) {
	ladder := Scenario{Concurrency: []int{16}, MinRequests: 4000, Axes: []Axis{Rates(1000, 3000, 8000)}}
	assert.Equal(t, 4*time.Second, ladder.enough(1000))
	assert.Equal(t, 1400*time.Millisecond, ladder.enough(3000), "1.333 s, rounded up")
	assert.Equal(t, 500*time.Millisecond, ladder.enough(8000))
	assert.Equal(t, time.Duration(0), ladder.enough(0), "closed loop: the rate is not known before the run")
	assert.Equal(t, time.Duration(0), Scenario{}.enough(1000), "no MinRequests")

	s := NewWithConfig(&Config{Target: "local", Duration: MainJobWindow, Repeats: 3})
	for qps, want := range map[float64]time.Duration{1000: 4 * time.Second, 3000: 1400 * time.Millisecond, 8000: time.Second} {
		spec, err := s.spec(ladder.at(Rates(qps).Values[0]), 16, testbed.Meshed)
		require.NoError(t, err)
		assert.Equal(t, want, spec.Window.Duration, "%v req/s", qps)
		assert.Equal(t, qps, spec.Window.QPS)
	}
	closed, err := s.spec(Scenario{MinRequests: 4000}, 16, testbed.Meshed)
	require.NoError(t, err)
	assert.Equal(t, MainJobWindow, closed.Window.Duration)
	// 2 arms × 3 rounds: 3 s more at 1000 req/s, 0.4 s more at 3000
	assert.Equal(t, 6*3400*time.Millisecond, s.scenarioLonger(ladder, 2, time.Second))
	s.Config.Duration = 5 * time.Second
	spec, err := s.spec(ladder.at(Rates(1000).Values[0]), 16, testbed.Meshed)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, spec.Window.Duration, "a longer -duration stands")
}
