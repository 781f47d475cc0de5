package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// SMPVersion is the smp_version the SMP export writes: the spec's own
// name for its version (smps.yaml's SMPSVersion).
const SMPVersion = "smps/v1"

// SMPResult is one Service Mesh Performance result: the
// PerformanceTestResult message of the spec's
// protos/service_mesh_performance.proto, with its fields named as the
// proto names them (which protobuf's JSON and YAML readers accept), and
// meshbench's own figures under the one extra key meshbench_extension.
// The SMP export writes one per scenario and arm.
type SMPResult struct {
	// SMPVersion is the spec's version, SMPVersion.
	SMPVersion string `yaml:"smp_version"`
	// ID names the result: the run's id (Results.RunID), then the
	// sub-benchmark name with its arm.
	ID string `yaml:"id"`
	// Labels are the scenario's labels plus arm, path, target, mesh and
	// meshVersion.
	Labels map[string]string `yaml:"labels"`
	// StartTime and EndTime bound the arm's measured windows, UTC.
	StartTime time.Time `yaml:"start_time"`
	EndTime   time.Time `yaml:"end_time"`
	// LatenciesMs are the arm's latencies, ms.
	LatenciesMs SMPLatency `yaml:"latencies_ms"`
	// ActualQPS is the achieved req/s, the median over repeats.
	ActualQPS float64 `yaml:"actual_QPS"`
	// DetailsURI is unset: meshbench has no page per result.
	DetailsURI string `yaml:"details_uri"`
	// TestID is the sub-benchmark name with its arm.
	TestID string `yaml:"testId"`
	// MeshConfigID is the mesh's name and version, e.g. "istio 1.24.0".
	MeshConfigID string `yaml:"meshConfigId"`
	// EnvID is the target the run measured on (local, kind …).
	EnvID string `yaml:"envId"`
	// Meshbench holds what SMP has no field for. A strict protobuf reader
	// must be told to discard unknown fields to read past it.
	Meshbench SMPExtension `yaml:"meshbench_extension"`
}

// SMPLatency is PerformanceTestResult.Latency, in milliseconds: p50, p90
// and p99 are the medians over repeats, as the report prints them; min,
// average and max are of every repeat's histogram merged.
type SMPLatency struct {
	Min     float64 `yaml:"min"`
	Average float64 `yaml:"average"`
	P50     float64 `yaml:"p50"`
	P90     float64 `yaml:"p90"`
	P99     float64 `yaml:"p99"`
	Max     float64 `yaml:"max"`
}

// SMPExtension is meshbench's part of an SMP result.
type SMPExtension struct {
	// Schema is the results file's schema the figures come from.
	Schema string `yaml:"schema"`
	// Scenario is the comparison's name (Comparison.Scenario).
	Scenario string `yaml:"scenario"`
	// Arm is the arm the result is of.
	Arm testbed.Arm `yaml:"arm"`
	// Path is the scenario's request path.
	Path testbed.Path `yaml:"path"`
	// Concurrency is the load's number of connections.
	Concurrency int `yaml:"concurrency"`
	// Repeats is how many repeats the figures summarise, Invalid how many
	// of them were invalid.
	Repeats int `yaml:"repeats"`
	Invalid int `yaml:"invalid"`
	// P999Ms is the p99.9 latency, ms, median over repeats.
	P999Ms float64 `yaml:"p999_ms"`
	// Intervals are each figure's median and interval over repeats
	// (stats.Summary: the interval is the one the report prints), by name:
	// p50_ms, p90_ms, p99_ms, p999_ms, qps, and for the meshed arm the
	// paired overheads p50_delta_ms, p99_delta_pct, throughput_loss_pct.
	Intervals map[string]SMPInterval `yaml:"intervals"`
	// CPUMsPer1k is each role's CPU-ms per 1000 requests, median over
	// repeats.
	CPUMsPer1k map[string]float64 `yaml:"cpu_ms_per_1k"`
	// CPUInvalid is how many of the repeats have CPU figures that are not
	// valid (testbed.Run.CPUInvalid: counters diluted by idle time, or read
	// in too few ticks);
	// CPUMsPer1k includes them.
	CPUInvalid int `yaml:"cpu_invalid,omitempty"`
	// PerRepeat are the individual repeats, in repeat order.
	PerRepeat []SMPRepeat `yaml:"per_repeat"`
}

// SMPInterval is a median with its interval over N repeats.
type SMPInterval struct {
	// Median, Lo and Hi are in the figure's unit (its name's suffix: ms,
	// pct, or req/s for qps); N is the number of repeats (or pairs).
	Median float64 `yaml:"median"`
	Lo     float64 `yaml:"lo"`
	Hi     float64 `yaml:"hi"`
	N      int     `yaml:"n"`
}

// SMPRepeat is one repeat of an arm.
type SMPRepeat struct {
	// Repeat is the -count iteration, from 0.
	Repeat int `yaml:"repeat"`
	// P50Ms, P99Ms and P999Ms are the repeat's latency percentiles, ms.
	P50Ms  float64 `yaml:"p50_ms"`
	P99Ms  float64 `yaml:"p99_ms"`
	P999Ms float64 `yaml:"p999_ms"`
	// QPS is the achieved rate, req/s.
	QPS float64 `yaml:"qps"`
	// Valid says the run passed its checks.
	Valid bool `yaml:"valid"`
	// CPUInvalid are the reasons its CPU figures alone are not valid;
	// empty when they are.
	CPUInvalid []string `yaml:"cpu_invalid,omitempty"`
}

// SMP writes the SMP results of every input as a YAML stream, one
// document per scenario and arm, in sweep order.
func SMP(w io.Writer, ins []Input) error {
	if len(ins) == 0 {
		return fmt.Errorf("smp export: no results")
	}
	enc := yaml.NewEncoder(w)
	for _, in := range ins {
		for _, r := range SMPResults(in.Results) {
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("smp export: %s: %w", in.File, err)
			}
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("smp export: %w", err)
	}
	return nil
}

// SMPResults are the SMP results of one run: one per scenario and arm
// that ran.
func SMPResults(res *Results) []SMPResult {
	records := upgradeArms(res.Records)
	var out []SMPResult
	for _, c := range Compare(res.Records) {
		byArm := map[testbed.Arm]map[int]Record{}
		for _, rec := range records {
			if rec.Path == c.Path && rec.key().Key() == c.Labels.Key() {
				if byArm[rec.Arm] == nil {
					byArm[rec.Arm] = map[int]Record{}
				}
				byArm[rec.Arm][rec.Repeat] = rec
			}
		}
		for i, a := range arms {
			st := a.Stats(c)
			if st.Repeats == 0 {
				continue
			}
			// The repeats the figures summarise: those of both arms when
			// both ran (Compare pairs them), else the arm's own.
			other := byArm[arms[1-i].Name]
			var rs []Record
			for _, rep := range slices.Sorted(maps.Keys(byArm[a.Name])) {
				if _, paired := other[rep]; paired || len(other) == 0 || arms[1-i].Stats(c).Repeats == 0 {
					rs = append(rs, byArm[a.Name][rep])
				}
			}
			out = append(out, smpResult(res, c, a.Name, st, rs))
		}
	}
	return out
}

func smpResult(res *Results, c Comparison, arm testbed.Arm, st ArmStats, rs []Record) SMPResult {
	env := res.Environment
	name := c.Labels.With(labels.Arm, string(arm)).String()
	r := SMPResult{SMPVersion: SMPVersion, ID: res.RunID() + "/" + name, TestID: name,
		MeshConfigID: env.Mesh.Name + " " + env.Mesh.Version, EnvID: env.Target,
		Labels: c.Labels.Map(), ActualQPS: st.QPS.Median,
		LatenciesMs: SMPLatency{P50: st.P50.Median, P90: st.P90.Median, P99: st.P99.Median}}
	maps.Copy(r.Labels, map[string]string{labels.Arm: string(arm), labels.Path: string(c.Path), "target": env.Target,
		"mesh": env.Mesh.Name, "meshVersion": env.Mesh.Version})
	if h := st.Merged; h != nil {
		r.LatenciesMs.Min, r.LatenciesMs.Average, r.LatenciesMs.Max = h.Min*1e3, h.Avg*1e3, h.Max*1e3
	}
	x := SMPExtension{Schema: res.Schema, Scenario: c.Scenario(), Arm: arm, Path: c.Path, Concurrency: c.Concurrency,
		Repeats: st.Repeats, Invalid: st.Invalid, CPUInvalid: st.CPUInvalid, P999Ms: st.P999.Median, CPUMsPer1k: map[string]float64{},
		Intervals: map[string]SMPInterval{"p50_ms": interval(st.P50), "p90_ms": interval(st.P90), "p99_ms": interval(st.P99),
			"p999_ms": interval(st.P999), "qps": interval(st.QPS)}}
	if arm == testbed.Meshed && len(c.Problems) == 0 {
		x.Intervals["p50_delta_ms"], x.Intervals["p99_delta_pct"] = interval(c.P50Delta), interval(c.P99Pct)
		x.Intervals["throughput_loss_pct"] = interval(c.QPSLossPct)
	}
	for role, s := range st.CPUPer1k {
		x.CPUMsPer1k[string(role)] = s.Median
	}
	for _, rec := range rs {
		l := rec.Load
		if r.StartTime.IsZero() || l.Start.Before(r.StartTime) {
			r.StartTime = l.Start.UTC()
		}
		if end := l.Start.Add(l.Elapsed).UTC(); end.After(r.EndTime) {
			r.EndTime = end
		}
		x.PerRepeat = append(x.PerRepeat, SMPRepeat{Repeat: rec.Repeat, P50Ms: l.Percentile(50) * 1e3, P99Ms: l.Percentile(99) * 1e3,
			P999Ms: l.Percentile(99.9) * 1e3, QPS: l.AchievedQPS, Valid: rec.Valid(), CPUInvalid: rec.CPUInvalid.Strings()})
	}
	r.Meshbench = x
	return r
}

func interval(s stats.Summary) SMPInterval {
	return SMPInterval{Median: s.Median, Lo: s.Lo, Hi: s.Hi, N: s.N}
}
