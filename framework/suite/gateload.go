package suite

import (
	"errors"
	"fmt"
	"slices"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// DefaultGateFraction is the default gate's open-loop rate, as a fraction
// of the slower meshed arm's capacity at maximum rate. At c connections
// and capacity C, each connection ran one request per c/C at maximum rate
// (Little's law), and has one per c/(fraction·C) at the open point: a
// quarter gives it four times the mean time a request took at maximum
// rate. The headroom keeps the p99 the proxies' and not a queue's. It was
// also chosen while fortio's open loop skipped the slot of a late answer
// (NoCatchUp, until 2026-12-04; runs now catch up, load.runnerOptions):
// then, at a half, every meshed open-loop run of a local A/A gate at c=8
// missed its rate by 5-8 % (1761-1824 of 1924 req/s, one request per
// 4.2 ms on each connection against a p99 of 7-10 ms); at a quarter all 12
// ran at 830-833 of 833 req/s.
const DefaultGateFraction = 0.25

// GateLoad is the upgrade gate's load as an axis, key "load": first at
// maximum rate ("max", closed loop: throughput, and CPU per request), then
// at a fixed open-loop rate of fraction of the capacity the slower meshed
// arm just showed ("open"), below saturation, where the p99 is the
// proxies' and not a queue's. The open point's rate is only known once the
// max point has run; it is in its records (load options).
func GateLoad(fraction float64) Axis {
	capacity := 0.0
	a := Axis{Key: "load", Values: []Value{
		{Label: "max"},
		{Label: "open", Apply: func(s *Scenario) {
			s.openLoop = true // its rate is known only after the max point
			prev := s.Window
			s.Window = func(w *testbed.Window) {
				if prev != nil {
					prev(w)
				}
				w.QPS, w.RateFraction = fraction*capacity, fraction
			}
		}},
	}}
	a.Stop = func(ps []Point) (bool, string) {
		if capacity > 0 {
			return false, "" // after the open point: nothing left
		}
		c, err := meshCapacity(ps)
		if err != nil {
			return true, "no open-loop point: " + err.Error()
		}
		capacity = c
		return false, ""
	}
	return a
}

// meshCapacity is the lowest, over the meshed arms (reference and
// candidate, or meshed), of the median rate their valid runs achieved at
// maximum rate: a fraction of it is below saturation for every arm. The
// baseline's capacity is no guide: on 2 cores a sidecar serves a tenth of
// it.
func meshCapacity(ps []Point) (float64, error) {
	byArm := map[testbed.Arm][]float64{}
	for _, p := range ps {
		if p.Arm != testbed.Baseline && p.Run.Valid() && p.Run.Load != nil {
			byArm[p.Arm] = append(byArm[p.Arm], p.Run.Load.AchievedQPS)
		}
	}
	capacity := 0.0
	for _, qps := range byArm {
		if m := stats.Summarize(qps).Median; capacity == 0 || m < capacity {
			capacity = m
		}
	}
	if capacity == 0 {
		return 0, errors.New("no valid meshed run at maximum rate")
	}
	return capacity, nil
}

// GateArms are the arms an upgrade gate interleaves. With -candidate they
// are the reference and the candidate alone: no decision reads the
// baseline, and without it a round is two runs instead of three, in ABBA
// order, so that neither arm always runs beside the same neighbour (with
// the baseline first, the reference always ran in the middle). Against a
// stored reference (-reference) they are the default arms. Call it from a
// benchmark, after the flags are parsed.
func (s *Suite) GateArms() []testbed.Arm {
	if s.Config.Candidate != "" {
		return []testbed.Arm{testbed.Reference, testbed.Candidate}
	}
	return nil
}

// UpgradeGateRun requires a run that gates an upgrade: a candidate arm
// (-candidate), or a stored reference (-reference), or one that stores
// the reference a later run is gated against (-store-reference). The
// gate's scenario is not part of an ordinary overhead sweep.
func (s *Suite) UpgradeGateRun() Requirement {
	return RequireFunc(func(tg testbed.Target) error {
		if s.Config.Reference != "" || s.Config.StoreReference {
			return nil
		}
		if a, ok := tg.(testbed.Armed); ok && slices.Contains(a.Arms(), testbed.Candidate) {
			return nil
		}
		return fmt.Errorf("an upgrade-gate scenario: run it with -candidate (e.g. -sidecar=caddy@v2.10.2 -candidate=caddy@v2.11.9; on kind -candidate=IMAGE or -candidate=+no-keepalive, with -mesh=istio -candidate=rev=NAME) or -reference results/<file>.json, or with -store-reference to store such a file")
	})
}
