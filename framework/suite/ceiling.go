package suite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/target"
)

// urlTarget is a target that can hand out its loadgen addresses.
type urlTarget interface {
	URL(target.Arm, target.Path) string
}

// LoadgenCeiling measures the in-process fortio loadgen's maximum rate at
// concurrency c against the baseline backend alone, interleaved with wrk's
// against the same backend, with each loadgen's own CPU: how far the
// loadgen is from being the bottleneck. fortio runs twice per repeat, with
// and without HDR recording (load.Options.NoHDR), in alternating order, to
// show what recording every latency costs, and a bare Go loop (goFloor)
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
	url := tg.(urlTarget).URL(target.Baseline, target.OneHop)
	reps := s.reps()
	var fortio, noHDR, floor, wrks []ceilingRun
	for rep := range reps {
		s.logf("%s: fortio with and without HDR, then wrk at c=%d, repeat %d/%d", b.Name(), c, rep+1, reps)
		o := s.Config.loadOptions(c)
		o.QPS = 0
		for i := range 2 {
			o.NoHDR = (rep+i)%2 == 1 // ABBA: neither goes first every time
			r, err := s.fortioCeiling(tg, o)
			if err != nil {
				b.Fatal(err)
			}
			if o.NoHDR {
				noHDR = append(noHDR, r)
			} else {
				fortio = append(fortio, r)
			}
		}
		w, err := runWrk(s.ctx, wrk, url, c, o.Duration)
		if err != nil {
			b.Fatal(err)
		}
		wrks = append(wrks, w)
		g, err := goFloor(s.ctx, url, c, o.Duration)
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, g)
	}
	for _, side := range []struct {
		name string
		runs []ceilingRun
	}{{"fortio", fortio}, {"fortio-nohdr", noHDR}, {"go-floor", floor}, {"wrk", wrks}} {
		b.Run("loadgen="+side.name, func(b *testing.B) {
			r := side.runs[min(s.repeatIndex(b), len(side.runs)-1)]
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.qps, "req/s")
			b.ReportMetric(r.milli, "loadgen-mcpu")
			b.ReportMetric(r.cpuPer1k, "loadgen-cpu-ms/kreq")
			if r.node > 0 {
				b.ReportMetric(r.node, "node-cpu-%")
			}
		})
	}
	s.logCeiling(b, fortio, noHDR, floor, wrks)
}

// fortioCeiling runs the in-process fortio loadgen at maximum rate against
// the baseline one-hop backend and takes its CPU.
func (s *Suite) fortioCeiling(tg target.Target, o load.Options) (ceilingRun, error) {
	run, err := tg.Run(s.ctx, target.Spec{Arm: target.Baseline, Workload: target.Workload{Path: target.OneHop}, Load: o})
	if err != nil {
		return ceilingRun{}, err
	}
	lg, _ := run.Resources.Role(measure.RoleLoadgen)
	return ceilingRun{qps: run.Load.AchievedQPS, milli: lg.MilliCores, node: run.Resources.NodeUtilisation["local"],
		cpuPer1k: run.CPUPer1k(lg.MilliCores)}, nil
}

// logCeiling prints each repeat's figures, and what HDR recording cost in
// req/s over the repeats, paired (the goal is at most 3 %).
func (s *Suite) logCeiling(b *testing.B, fortio, noHDR, floor, wrks []ceilingRun) {
	var with, without, goQPS, wrkQPS []float64
	for i := range fortio {
		s.logf("%s repeat %d: fortio %.0f req/s using %.0fm (without HDR %.0f req/s using %.0fm); wrk %.0f req/s using %.0fm; a bare Go loop %.0f req/s using %.0fm; fortio/wrk = %.2f, go/wrk = %.2f",
			b.Name(), i+1, fortio[i].qps, fortio[i].milli, noHDR[i].qps, noHDR[i].milli, wrks[i].qps, wrks[i].milli, floor[i].qps, floor[i].milli,
			fortio[i].qps/wrks[i].qps, floor[i].qps/wrks[i].qps)
		with, without = append(with, fortio[i].qps), append(without, noHDR[i].qps)
		goQPS, wrkQPS = append(goQPS, floor[i].qps), append(wrkQPS, wrks[i].qps)
	}
	if r, err := stats.PairedRatio(without, with); err == nil {
		s.logf("%s: HDR recording costs %s %% of fortio's req/s", b.Name(), r.PercentLoss())
	}
	if r, err := stats.PairedRatio(wrkQPS, goQPS); err == nil {
		s.logf("%s: a bare Go loop reaches %s of wrk's req/s: what any Go loadgen lacks against wrk", b.Name(), r)
	}
}

// ceilingRun is one loadgen's window.
type ceilingRun struct {
	qps, milli, node float64
	// cpuPer1k is the loadgen's CPU-ms per 1000 requests.
	cpuPer1k float64
}

// runWrk runs wrk for the window and takes its CPU from its rusage: wrk
// has no warm-up, and its connection set-up is a negligible share.
func runWrk(ctx context.Context, wrk, url string, c int, window time.Duration) (ceilingRun, error) {
	secs := max(1, int(window.Seconds()+0.5))
	cmd := exec.CommandContext(ctx, wrk, "-t"+strconv.Itoa(min(c, runtime.NumCPU())), "-c"+strconv.Itoa(c), "-d"+strconv.Itoa(secs)+"s", url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return ceilingRun{}, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	elapsed := time.Since(start).Seconds()
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	var r ceilingRun
	var requests float64
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Requests/sec:"); ok {
			r.qps, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if f := strings.Fields(line); len(f) > 2 && f[1] == "requests" && f[2] == "in" {
			requests, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if r.qps == 0 || requests == 0 {
		return r, fmt.Errorf("wrk printed no Requests/sec or request count:\n%s", out.String())
	}
	r.milli = cpu / elapsed * 1000
	r.cpuPer1k = cpu * 1e3 / (requests / 1e3)
	return r, nil
}
