package report

import (
	"fmt"
	"math"
	"slices"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Change is what a simulation does to one recorded run: the figures that
// a slower or faster machine, or a regressed mesh, would have recorded.
// A zero factor leaves its figures as they were.
type Change struct {
	// Latency multiplies every latency of the run (its histograms, HDR
	// and fortio's): 1.6 is a machine 1.6 times slower.
	Latency float64
	// CPU multiplies the CPU the roles in Roles used (every role when
	// Roles is empty), and so their CPU per request.
	CPU   float64
	Roles []measure.Role
	// Throughput multiplies the achieved rate, req/s.
	Throughput float64
}

// Slower is a machine k times slower than the one that recorded (k < 1: a
// faster one): every latency and every role's CPU per request times k,
// the rate divided by k.
func Slower(k float64) Change { return Change{Latency: k, CPU: k, Throughput: 1 / k} }

// Simulate returns copies of records with ch applied to the runs of arms
// (every arm when none is given), for re-judging recorded results as
// another machine or a regressed mesh would have measured them. The
// records and their runs are not modified.
func Simulate(records []Record, ch Change, arms ...testbed.Arm) ([]Record, error) {
	if err := ch.check(); err != nil {
		return nil, err
	}
	out := make([]Record, len(records))
	for i, r := range records {
		out[i] = r
		if r.Run == nil || (len(arms) > 0 && !slices.Contains(arms, r.Arm)) {
			continue
		}
		run, err := ch.apply(*r.Run)
		if err != nil {
			return nil, fmt.Errorf("simulate %s repeat %d: %w", r.Name(), r.Repeat, err)
		}
		out[i].Run = &run
	}
	return out, nil
}

// check refuses a factor that is negative, NaN or infinite.
func (ch Change) check() error {
	for _, f := range []struct {
		name string
		k    float64
	}{{"latency", ch.Latency}, {"CPU", ch.CPU}, {"throughput", ch.Throughput}} {
		if f.k < 0 || math.IsNaN(f.k) || math.IsInf(f.k, 0) {
			return fmt.Errorf("simulate: %s ×%g: want a finite factor > 0, or 0 to leave it", f.name, f.k)
		}
	}
	return nil
}

// apply changes a copy of run.
func (ch Change) apply(run testbed.Run) (testbed.Run, error) {
	if run.Load != nil {
		l := *run.Load
		if ch.Throughput != 0 {
			l.AchievedQPS *= ch.Throughput
		}
		if ch.Latency != 0 {
			if err := scaleLatency(&l, ch.Latency); err != nil {
				return run, err
			}
		}
		run.Load = &l
	}
	if ch.CPU != 0 {
		run.Resources.Usage = slices.Clone(run.Resources.Usage)
		for i, u := range run.Resources.Usage {
			if len(ch.Roles) == 0 || slices.Contains(ch.Roles, u.Role) {
				run.Resources.Usage[i].MilliCores *= ch.CPU
				run.Resources.Usage[i].CPUSeconds *= ch.CPU
			}
		}
	}
	return run, nil
}

// scaleLatency multiplies every latency l holds by k.
func scaleLatency(l *load.Result, k float64) error {
	l.Latency = scaleFortio(l.Latency, k)
	if l.HDR == nil {
		return nil
	}
	h := *l.HDR
	var err error
	if h.Uncorrected, err = h.Uncorrected.Scaled(k); err != nil {
		return fmt.Errorf("uncorrected latencies: %w", err)
	}
	if h.Corrected, err = h.Corrected.Scaled(k); err != nil {
		return fmt.Errorf("corrected latencies: %w", err)
	}
	l.HDR = &h
	return nil
}

// scaleFortio returns a copy of h with every value times k: its
// percentiles (interpolated within buckets) scale alike.
func scaleFortio(h *fstats.HistogramData, k float64) *fstats.HistogramData {
	if h == nil {
		return nil
	}
	s := *h
	s.Min, s.Max, s.Sum, s.Avg, s.StdDev = h.Min*k, h.Max*k, h.Sum*k, h.Avg*k, h.StdDev*k
	s.Data = slices.Clone(h.Data)
	for i := range s.Data {
		s.Data[i].Start *= k
		s.Data[i].End *= k
	}
	s.Percentiles = slices.Clone(h.Percentiles)
	for i := range s.Percentiles {
		s.Percentiles[i].Value *= k
	}
	return &s
}
