package suite

import (
	"os/exec"
	"testing"

	"github.com/meshbench/meshbench/framework/load/ceiling"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// urlTarget is a target that can hand out its loadgen addresses.
type urlTarget interface {
	URL(testbed.Arm, testbed.Path) string
}

// LoadgenCeiling measures the in-process fortio loadgen's maximum rate at
// concurrency c against the baseline backend alone, interleaved with wrk's
// against the same backend, with each loadgen's own CPU: how far the
// loadgen is from being the bottleneck. fortio runs twice per repeat, with
// and without HDR recording (testbed.Window.NoHDR), in alternating order, to
// show what recording every latency costs, and a bare Go loop (ceiling.GoFloor)
// runs beside wrk, to show what any Go loadgen lacks against it.
// Sub-benchmarks: loadgen=fortio, loadgen=fortio-nohdr, loadgen=go-floor
// and loadgen=wrk (benchstat -col /loadgen). It skips when wrk is not on
// PATH.
func (s *Suite) LoadgenCeiling(b *testing.B, c int) {
	tg, err := s.target()
	if err != nil {
		b.Fatalf("target %s: %v", s.Config.Target, err)
	}
	sc := Scenario{Requires: []Requirement{OnPath("wrk", "Debian: apt-get install wrk"), LoadgenURLs}}
	if err := sc.check(tg); err != nil {
		b.Skipf("%s: skipped on the %s target: %v", b.Name(), tg.Name(), err)
	}
	wrk, _ := exec.LookPath("wrk")
	url := tg.(urlTarget).URL(testbed.Baseline, testbed.OneHop)
	reps := s.reps()
	var fortio, noHDR, floor, wrks []ceiling.Result
	for rep := range reps {
		s.logf("%s: fortio with and without HDR, then wrk at c=%d, repeat %d/%d", b.Name(), c, rep+1, reps)
		win := s.Config.window(c)
		win.QPS = 0
		for i := range 2 {
			win.NoHDR = (rep+i)%2 == 1 // ABBA: neither goes first every time
			r, err := s.fortioCeiling(tg, win)
			if err != nil {
				b.Fatal(err)
			}
			if win.NoHDR {
				noHDR = append(noHDR, r)
			} else {
				fortio = append(fortio, r)
			}
		}
		w, err := ceiling.Wrk(s.ctx, wrk, url, c, win.Duration)
		if err != nil {
			b.Fatal(err)
		}
		wrks = append(wrks, w)
		g, err := ceiling.GoFloor(s.ctx, url, c, win.Duration)
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, g)
	}
	for _, side := range []struct {
		name string
		runs []ceiling.Result
	}{{"fortio", fortio}, {"fortio-nohdr", noHDR}, {"go-floor", floor}, {"wrk", wrks}} {
		b.Run("loadgen="+side.name, func(b *testing.B) {
			r := side.runs[min(s.repeatIndex(b), len(side.runs)-1)]
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.QPS, "req/s")
			b.ReportMetric(r.MilliCores, "loadgen-mcpu")
			b.ReportMetric(r.CPUPer1k, "loadgen-cpu-ms/kreq")
			if r.NodePercent > 0 {
				b.ReportMetric(r.NodePercent, "node-cpu-%")
			}
		})
	}
	s.logCeiling(b, fortio, noHDR, floor, wrks)
}

// fortioCeiling runs the in-process fortio loadgen at maximum rate against
// the baseline one-hop backend and takes its CPU.
func (s *Suite) fortioCeiling(tg testbed.Target, win testbed.Window) (ceiling.Result, error) {
	run, err := tg.Run(s.ctx, testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{Path: testbed.OneHop}, Window: win})
	if err != nil {
		return ceiling.Result{}, err
	}
	lg, _ := run.Resources.Role(measure.RoleLoadgen)
	return ceiling.Result{QPS: run.Load.AchievedQPS, MilliCores: lg.MilliCores, NodePercent: run.Resources.NodeUtilisation["local"],
		CPUPer1k: run.CPUPer1k(lg.MilliCores)}, nil
}

// logCeiling prints each repeat's figures, and what HDR recording cost in
// req/s over the repeats, paired (the goal is at most 3 %).
func (s *Suite) logCeiling(b *testing.B, fortio, noHDR, floor, wrks []ceiling.Result) {
	var with, without, goQPS, wrkQPS []float64
	for i := range fortio {
		s.logf("%s repeat %d: fortio %.0f req/s using %.0fm (without HDR %.0f req/s using %.0fm); wrk %.0f req/s using %.0fm; a bare Go loop %.0f req/s using %.0fm; fortio/wrk = %.2f, go/wrk = %.2f",
			b.Name(), i+1, fortio[i].QPS, fortio[i].MilliCores, noHDR[i].QPS, noHDR[i].MilliCores, wrks[i].QPS, wrks[i].MilliCores, floor[i].QPS, floor[i].MilliCores,
			fortio[i].QPS/wrks[i].QPS, floor[i].QPS/wrks[i].QPS)
		with, without = append(with, fortio[i].QPS), append(without, noHDR[i].QPS)
		goQPS, wrkQPS = append(goQPS, floor[i].QPS), append(wrkQPS, wrks[i].QPS)
	}
	if r, err := stats.PairedRatio(without, with); err == nil {
		s.logf("%s: HDR recording costs %s %% of fortio's req/s", b.Name(), r.PercentLoss())
	}
	if r, err := stats.PairedRatio(wrkQPS, goQPS); err == nil {
		s.logf("%s: a bare Go loop reaches %s of wrk's req/s: what any Go loadgen lacks against wrk", b.Name(), r)
	}
}
