package gate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	meas "github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
)

// IncomparableError is one field on which a stored reference and this run
// differ so that their figures cannot be compared.
type IncomparableError struct {
	Field     string // e.g. "settings.duration" or "environment.cores"
	Reference string // the stored run's value
	Candidate string // this run's value
	// Detail, when set, says how they differ instead.
	Detail string
}

// Error returns e.g. "settings.duration differs: reference 3s, this run 10s".
func (e *IncomparableError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s differ: %s", e.Field, e.Detail)
	}
	return fmt.Sprintf("%s differs: reference %s, this run %s", e.Field, e.Reference, e.Candidate)
}

// runSettings are the harness settings that must match, decoded from
// Results.Settings (the suite's Config, or the map a stored file decodes
// to) by their JSON names.
type runSettings struct {
	Target       string        `json:"target"`
	Concurrency  []int         `json:"concurrency"`
	Duration     time.Duration `json:"duration"`
	Warmup       time.Duration `json:"warmup"`
	QPS          float64       `json:"qps"`
	Protocol     string        `json:"protocol"`
	ResponseSize int           `json:"responseSize"`
	RequestSize  int           `json:"requestSize"`
	Placement    string        `json:"placement"`
	Loadgens     int           `json:"loadgens"`
}

// Comparable checks that a stored reference run and this run can be
// compared figure by figure: same target, scenarios, concurrency, load
// settings (duration, warm-up, rate, protocol, payload and request size,
// and per scenario the load each run really used), loadgen placement and
// count, cores and nodes. It returns every difference as an
// [*IncomparableError], joined, naming the field. Differences that shift
// figures without breaking the comparison (CPU model, kernel, Kubernetes,
// Go, OS image, memory) come back as warnings, one line each.
func Comparable(ref, run *report.Results) (warnings []string, err error) {
	warnings, err = ComparableSettings(ref, run)
	return warnings, errors.Join(err, ComparableScenarios(ref.Records, run.Records))
}

// ComparableSettings is [Comparable] without the records: what two runs
// can be checked on before this run has measured anything (target,
// settings, cores and nodes), with the same warnings.
func ComparableSettings(ref, run *report.Results) (warnings []string, err error) {
	rs, err := settingsOf(ref)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	cs, err := settingsOf(run)
	if err != nil {
		return nil, fmt.Errorf("this run: %w", err)
	}
	var errs []error
	differ := func(field string, a, b any) {
		if fa, fb := fmt.Sprint(a), fmt.Sprint(b); fa != fb {
			errs = append(errs, &IncomparableError{Field: field, Reference: fa, Candidate: fb})
		}
	}
	re, ce := ref.Environment, run.Environment
	differ("environment.target", re.Target, ce.Target)
	differ("settings.concurrency", rs.Concurrency, cs.Concurrency)
	differ("settings.duration", rs.Duration, cs.Duration)
	differ("settings.warmup", rs.Warmup, cs.Warmup)
	differ("settings.qps", rs.QPS, cs.QPS)
	differ("settings.protocol", rs.Protocol, cs.Protocol)
	differ("settings.responseSize", rs.ResponseSize, cs.ResponseSize)
	differ("settings.requestSize", rs.RequestSize, cs.RequestSize)
	differ("settings.placement", rs.Placement, cs.Placement)
	differ("settings.loadgens", rs.Loadgens, cs.Loadgens)
	differ("environment.cores", re.Cores, ce.Cores)
	differ("environment.nodes", re.Nodes, ce.Nodes)
	for _, w := range []struct{ field, a, b string }{
		{"environment.cpuModel", re.CPUModel, ce.CPUModel},
		{"environment.kernel", re.Kernel, ce.Kernel},
		{"environment.kubernetes", re.Kubernetes, ce.Kubernetes},
		{"environment.goVersion", re.GoVersion, ce.GoVersion},
		{"environment.osImage", re.OSImage, ce.OSImage},
		{"environment.memoryMiB", fmt.Sprint(re.MemoryMiB), fmt.Sprint(ce.MemoryMiB)},
		// The kubelet's cached counters dilute a short window's CPU.
		{"environment.cpuCounters", re.CPUCounters, ce.CPUCounters},
	} {
		if w.a != w.b {
			warnings = append(warnings, fmt.Sprintf("%s differs: reference %s, this run %s; figures may shift with it", w.field, orNone(w.a), orNone(w.b)))
		}
	}
	return warnings, errors.Join(errs...)
}

func settingsOf(r *report.Results) (runSettings, error) {
	var s runSettings
	data, err := json.Marshal(r.Settings)
	if err != nil {
		return s, fmt.Errorf("encode settings: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("decode settings: %w", err)
	}
	return s, nil
}

// loadKey is what a scenario's runs must share across the two results: the
// load each really ran with (a scenario may set its own rate). A rate set
// as a fraction of the capacity the run had just measured (the upgrade
// gate's open-loop point) is compared by that fraction: each run derives
// its own rate from its own capacity, and the two are equal only by chance.
type loadKey struct {
	QPS          float64
	RateFraction float64
	Duration     time.Duration
	Warmup       time.Duration
	Protocol     string
	RequestSize  int
}

// ComparableScenarios checks that both runs measured the same scenarios
// (every label but the arm, and the path) with the same load, and returns
// each difference as an [*IncomparableError], joined.
func ComparableScenarios(ref, run []report.Record) error {
	rl, cl := scenarioLoads(ref), scenarioLoads(run)
	var errs []error
	only := func(a, b map[string]loadKey) []string {
		var out []string
		for k := range a {
			if _, ok := b[k]; !ok {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	if ro, co := only(rl, cl), only(cl, rl); len(ro)+len(co) > 0 {
		errs = append(errs, &IncomparableError{Field: "scenarios", Detail: fmt.Sprintf("only the reference has %s; only this run has %s",
			orNone(strings.Join(ro, ", ")), orNone(strings.Join(co, ", ")))})
	}
	for _, k := range slices.Sorted(maps.Keys(rl)) {
		if c, ok := cl[k]; ok && c != rl[k] {
			errs = append(errs, &IncomparableError{Field: "records[" + k + "].load.options",
				Reference: fmt.Sprintf("%+v", rl[k]), Candidate: fmt.Sprintf("%+v", c)})
		}
	}
	if rm, cm := sidecarMemory(ref), sidecarMemory(run); rm != cm {
		errs = append(errs, &IncomparableError{Field: "records[].resources.usage[].memory",
			Detail: fmt.Sprintf("the sidecars' memory is %s in the reference and %s in this run, which do not compare (a cluster's files from before 2026-12-06 hold working sets, page cache included): store the reference again", rm, cm)})
	}
	return errors.Join(errs...)
}

// sidecarMemory says what the sidecars' memory figures of recs measure:
// their measure.MemoryKind values, sorted and joined, "unmarked" for an
// empty one (a process's resident set, or a cluster's working set in a
// file from before the field), "none" without sidecars.
func sidecarMemory(recs []report.Record) string {
	kinds := map[string]bool{}
	for _, r := range recs {
		for _, u := range r.Resources.Usage {
			if u.Role == meas.RoleSidecar {
				kinds[cmp.Or(string(u.Memory), "unmarked")] = true
			}
		}
	}
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(kinds)), " and ")
}

// ScenarioName names the scenario a record belongs to, whatever its arm:
// "BenchmarkOneHop/path=one-hop/c=8" for a record without labels, else its
// labels without the arm and with the path, e.g.
// "BenchmarkPayload/payload=16KiB/c=8/path=one-hop".
func ScenarioName(r report.Record) string {
	if len(r.Labels) == 0 {
		return fmt.Sprintf("%s/path=%s/c=%d", r.Benchmark, r.Path, r.Concurrency)
	}
	ls := r.Labels.Without(labels.Arm)
	if _, ok := ls.Get(labels.Path); !ok {
		ls = ls.With(labels.Path, string(r.Path))
	}
	return ls.String()
}

// scenarioLoads maps each scenario's name (ScenarioName) to the load its
// first record with a load result ran (zero when none has one), with the
// longest warm-up of its records: locally only an arm's first window at a
// load is warmed up, and which record that is depends on what ran before.
func scenarioLoads(recs []report.Record) map[string]loadKey {
	out := map[string]loadKey{}
	warm := map[string]time.Duration{}
	for _, r := range recs {
		if r.Run == nil {
			continue
		}
		name := ScenarioName(r)
		if r.Load != nil {
			warm[name] = max(warm[name], r.Load.Options.Warmup)
		}
		if k, seen := out[name]; seen && k != (loadKey{}) {
			continue
		}
		out[name] = loadKey{}
		if r.Load != nil {
			o := r.Load.Options
			k := loadKey{QPS: o.QPS, RateFraction: o.RateFraction, Duration: o.Duration, Warmup: o.Warmup, Protocol: string(o.Protocol), RequestSize: o.RequestSize}
			if k.RateFraction > 0 {
				k.QPS = 0
			}
			out[name] = k
		}
	}
	for name, k := range out {
		if k != (loadKey{}) {
			k.Warmup = warm[name]
			out[name] = k
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
