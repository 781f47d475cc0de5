package suite

import (
	"cmp"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Scenario is one benchmark's method: the workload to deploy, the load to
// drive, the axes to sweep, and what to do to an arm during the window.
// The zero value is the default one-hop sweep.
type Scenario struct {
	// Name names the scenario in results when the benchmark has no name of
	// its own (testing.Benchmark); go test's benchmark name wins otherwise.
	Name string
	// Path is the route measured; a shorthand for Workload.Path.
	Path testbed.Path
	// Workload is what the target deploys and drives; zero fields are the
	// flags' values (-payload, -protocol, -sidecar-threads …).
	Workload testbed.Workload
	// Flow is a shorthand for Workload.Flow: users running a flow (see
	// load.Flow) instead of connections. Its sub-benchmarks are named
	// users=N rather than c=N, -concurrency and -qps do not apply, and
	// each step's latency is reported beside the whole flow's.
	Flow *load.Flow
	// Window, when set, adjusts each run's window (after the flags): its
	// rate, its durations. It must not change Concurrency: sweep that
	// with Concurrency. What the client sends is the Workload's.
	Window func(*testbed.Window)
	// Concurrency is this scenario's default sweep; -concurrency, when
	// given, wins. Default: -concurrency's default (1, 2, 4, 8, 16, 32).
	Concurrency []int
	// Axes are swept outside c, outermost first, each value a sub-benchmark
	// named key=value: BenchmarkPayload/payload=16KiB/c=8/arm=meshed.
	Axes []Axis
	// Arms are the arms interleaved at every point. Default baseline and
	// meshed.
	Arms []testbed.Arm
	// Fault, when set, happens in every arm that has the process, During
	// the window; the run is then in expected-disruption mode (errors are
	// measured, and the recovery is reported).
	Fault *testbed.Fault
	// MinWindow is the shortest window its runs need, when the default
	// window (1 s locally) is too short for them: a slow backend serves
	// too few requests in it for a p99 or a CPU figure per request. A
	// shorter window (the default, -duration or -benchtime) is lengthened
	// to it, and the run says so. A fault's scenario needs no MinWindow:
	// its window is at least the fault's After plus 2 s to recover.
	MinWindow time.Duration
	// MinRequests is the fewest requests an open-loop window needs: at a
	// rate that gives fewer, the window is lengthened to MinRequests over
	// the rate, and the plan says so. A p99 of 1000 requests is set by
	// its 10 slowest; at 4000 by its 40, and its spread over repeats at
	// 1000 req/s narrowed from ×3.3 to ×1.5 (docs/measurements.md). A
	// closed-loop window's rate is not known before it runs: it is not
	// lengthened.
	MinRequests int
	// Requires lists what the scenario needs beyond what the target
	// supports; the scenario is skipped, with the reason, without it.
	Requires []Requirement

	// trail is the axes' labels so far, for names under testing.Benchmark,
	// whose sub-benchmarks have no names.
	trail labels.Set
	// ladder is set on a rate ladder's rungs.
	ladder *ladderSLO
	// openLoop is set on a point that runs open loop at a rate known only
	// once it runs (GateLoad's open point), for the gate's plan.
	openLoop bool
	// planned is set once the run's plan has fitted the scenario to its
	// time (planScenario); window, when set, is the shorter window it
	// runs with instead of -duration.
	planned bool
	window  time.Duration
}

// withShorthands moves the scenario's shorthands into its workload: the
// path (one-hop when none is given) and the user flow.
func (sc Scenario) withShorthands() Scenario {
	sc.Workload.Path = cmp.Or(sc.Workload.Path, sc.Path, testbed.OneHop)
	if sc.Workload.Flow == nil {
		sc.Workload.Flow = sc.Flow
	}
	return sc
}

// Axis is one swept dimension: a label and its values.
type Axis struct {
	Key    string  // the label's key in the sub-benchmark's name, e.g. "payload"
	Values []Value // swept in order, outermost axis first
	// Stop, when set, ends the sweep after a value whose records it
	// rejects, with the reason (a rate ladder stops at the rung the meshed
	// arm cannot hold). The records of that value are kept, as the knee.
	Stop func(rs []Point) (stop bool, why string)

	// ladder is a rate ladder's SLO, for the knees printed after it.
	ladder *ladderSLO
}

// Value is one point of an axis: its label value, and what it changes.
type Value struct {
	Label string          // the label's value, e.g. "16KiB"
	Apply func(*Scenario) // changes the scenario for this point
}

// Point is what an axis' Stop sees of one arm's run.
type Point struct {
	Arm   testbed.Arm  // the run's arm
	Run   *testbed.Run // the run as measured
	Label labels.Set   // its labels, the arm's included
}

// Requirement is something a scenario needs of the target or the machine.
type Requirement interface {
	// Check returns why tg cannot serve the scenario, naming what is
	// missing and how to get it; nil when it can.
	Check(tg testbed.Target) error
}

// RequireFunc adapts a function to Requirement.
type RequireFunc func(tg testbed.Target) error

// Check implements Requirement.
func (f RequireFunc) Check(tg testbed.Target) error { return f(tg) }

// OnPath requires a program on PATH; hint says how to install it.
func OnPath(program, hint string) Requirement {
	return RequireFunc(func(testbed.Target) error {
		if _, err := exec.LookPath(program); err != nil {
			return fmt.Errorf("%s is not on PATH (%s)", program, hint)
		}
		return nil
	})
}

// LoadgenURLs requires a target that hands out its loadgen addresses, so
// that another loadgen than the built-in one can be pointed at them.
var LoadgenURLs Requirement = RequireFunc(func(tg testbed.Target) error {
	if _, ok := tg.(urlTarget); !ok {
		return fmt.Errorf("target %s does not expose loadgen URLs: only the local target does", tg.Name())
	}
	return nil
})

// check runs the target's own support check and every requirement.
func (sc Scenario) check(tg testbed.Target) error {
	var errs []error
	if sp, ok := tg.(testbed.Supporter); ok {
		if err := sp.Supports(sc.Workload, sc.Fault); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range sc.Requires {
		if err := r.Check(tg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Payloads sweeps the response size, labelled like 128B, 1KiB, 16KiB.
func Payloads(sizes ...int) Axis {
	a := Axis{Key: labels.Payload}
	for _, n := range sizes {
		a.Values = append(a.Values, Value{Label: Bytes(n), Apply: func(s *Scenario) { s.Workload.ResponseSize = n }})
	}
	return a
}

// Rates sweeps the open-loop rate, in req/s.
func Rates(qps ...float64) Axis {
	a := Axis{Key: labels.QPS}
	for _, q := range qps {
		a.Values = append(a.Values, rateValue(q))
	}
	return a
}

// Threads sweeps the proxies' worker threads; 0 is labelled "default".
func Threads(ns ...int) Axis {
	a := Axis{Key: labels.Threads}
	for _, n := range ns {
		l := strconv.Itoa(n)
		if n == 0 {
			l = "default"
		}
		a.Values = append(a.Values, Value{Label: l, Apply: func(s *Scenario) { s.Workload.Threads = n }})
	}
	return a
}

// Paths sweeps the route: one-hop, two-hop, Chain(n).
func Paths(ps ...testbed.Path) Axis {
	a := Axis{Key: labels.Path}
	for _, p := range ps {
		a.Values = append(a.Values, Value{Label: string(p), Apply: func(s *Scenario) { s.Workload.Path, s.Path = p, p }})
	}
	return a
}

// Placement is one loadgen set-up: where, and how many shards.
type Placement struct {
	Where    testbed.Placement // in-mesh or out-of-mesh
	Loadgens int               // the loadgen shards
	// C is the total concurrency, split over the shards.
	C int
}

// Placements sweeps loadgen set-ups, labelled like in-mesh-x4; each value
// fixes its concurrency, so a scenario with Placements sweeps no c.
func Placements(ps ...Placement) Axis {
	a := Axis{Key: labels.Placement}
	for _, p := range ps {
		l := string(p.Where)
		if p.Loadgens > 1 {
			l += fmt.Sprintf("-x%d", p.Loadgens)
		}
		a.Values = append(a.Values, Value{Label: l, Apply: func(s *Scenario) {
			s.Workload.Placement, s.Workload.Loadgens, s.Concurrency = p.Where, p.Loadgens, []int{p.C}
		}})
	}
	return a
}

// ServiceTimes sweeps the backend's service time, the same in every arm.
func ServiceTimes(ds ...time.Duration) Axis {
	a := Axis{Key: labels.ServiceTime}
	for _, d := range ds {
		a.Values = append(a.Values, Value{Label: d.String(), Apply: func(s *Scenario) { s.Workload.ServiceTime = d }})
	}
	return a
}

// Protocols sweeps the loadgen's protocol.
func Protocols(ps ...load.Protocol) Axis {
	a := Axis{Key: labels.Protocol}
	for _, p := range ps {
		a.Values = append(a.Values, Value{Label: string(p), Apply: func(s *Scenario) { s.Workload.Protocol = p }})
	}
	return a
}

// Bytes labels a size: 128B, 1KiB, 16KiB, 1MiB; sizes that are not a whole
// number of KiB or MiB keep bytes.
func Bytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
