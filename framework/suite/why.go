package suite

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// explainCPU says where the CPU went at a point whose gate decision
// failed on sidecar CPU: once the point is decided, one extra round, not
// scored, runs the reference and the candidate with a CPU profile of
// their sidecars over the measured window (profiling costs CPU, so no
// scored window ever carries it), writes each arm's merged profile beside
// the results, and keeps their differential top-N for the report. A
// target that cannot profile (a proxy that is not a Go program with a
// pprof endpoint) is noted instead, with why.
func (s *Suite) explainCPU(b *testing.B, tg testbed.Target, sc Scenario, c int, runs map[testbed.Arm][]report.Record, per time.Duration) {
	d, ok := s.failedOnCPU(runs)
	if !ok {
		return
	}
	why := fmt.Errorf("%s on the %s target is not a Go program with a pprof endpoint", tg.Environment().Mesh.Name, tg.Name())
	if p, ok := tg.(testbed.Profiler); ok {
		why = p.CanProfile()
	}
	if s.ref != nil {
		why = errors.New("the reference is a stored run, whose sidecars are not running to be profiled")
	}
	if why == nil && !s.beforeRound(2*per) {
		why = errors.New("no time was left for a profiled round")
	}
	if why == nil {
		var pt cpuprofile.Point
		if pt, why = s.profilePoint(b, tg, sc, c, d); why == nil {
			s.mu.Lock()
			s.why.Points = append(s.why.Points, pt)
			s.mu.Unlock()
			return
		}
	}
	s.logf("%s: no CPU profile: %v", label(b, sc), why)
	s.mu.Lock()
	s.why.None = cmp.Or(s.why.None, "no CPU profile: "+why.Error())
	s.mu.Unlock()
}

// failedOnCPU is the decision on sidecar CPU per request at the point
// whose runs are runs, when it failed.
func (s *Suite) failedOnCPU(runs map[testbed.Arm][]report.Record) (gate.Decision, bool) {
	if s.gate == nil {
		return gate.Decision{}, false
	}
	ms := s.pointMeasurements(runs)
	if len(ms) == 0 {
		return gate.Decision{}, false
	}
	v, err := s.decide(ms)
	if err != nil {
		return gate.Decision{}, false
	}
	for _, d := range v.Decisions {
		if (d.Metric == gate.SidecarCPUPer1kReq || d.Metric == gate.SidecarCPUOverWorkloadCPU) && d.Outcome == gate.Fail {
			return d, true
		}
	}
	return gate.Decision{}, false
}

// profilePoint runs the profiled round at a point, writes the arms'
// merged profiles beside the results and diffs them.
func (s *Suite) profilePoint(b *testing.B, tg testbed.Target, sc Scenario, c int, d gate.Decision) (cpuprofile.Point, error) {
	ref, cand := s.Config.gateArms()
	pt := cpuprofile.Point{Scenario: d.Scenario.String(), Metric: d.Metric.Label(),
		Reference: cpuprofile.Arm{Spec: ref}, Candidate: cpuprofile.Arm{Spec: cand}}
	stem := (&report.Results{Started: s.started, Environment: tg.Environment()}).RunID()
	// The point as go test names it, "UpgradeGate_load=max_c=8".
	point := strings.ReplaceAll(strings.TrimPrefix(runLabels(b, sc, c).String(), "Benchmark"), "/", "_")
	merged := map[testbed.Arm]*profile.Profile{}
	for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		s.logf("%s/arm=%s: the gate failed on sidecar CPU here: one more round, not scored, with a CPU profile of the sidecars", label(b, sc), arm)
		spec, err := s.spec(sc, c, arm)
		if err != nil {
			return pt, err
		}
		spec.CPUProfile = true
		run, err := tg.Run(s.ctx, spec)
		if err != nil {
			return pt, fmt.Errorf("profiled round, %s: %w", arm, err)
		}
		a := &pt.Reference
		if arm == testbed.Candidate {
			a = &pt.Candidate
		}
		a.File = fmt.Sprintf("%s.%s.%s.pprof", stem, arm, point)
		if run.Load != nil {
			a.Requests = run.Load.Requests
		}
		var secs float64
		if merged[arm], secs, err = s.writeProfile(run.CPUProfiles, a); err != nil {
			return pt, fmt.Errorf("profiled round, %s: %w", arm, err)
		}
		pt.Seconds = max(pt.Seconds, secs)
	}
	rp, cp := merged[testbed.Reference], merged[testbed.Candidate]
	pt.Flat = cpuprofile.DiffPerRequest(rp, cp, pt.Reference.Requests, pt.Candidate.Requests, cpuprofile.Flat, cpuprofile.TopN)
	pt.Cumulative = cpuprofile.DiffPerRequest(rp, cp, pt.Reference.Requests, pt.Candidate.Requests, cpuprofile.Cumulative, cpuprofile.TopN)
	if len(pt.Flat) == 0 {
		return pt, errors.New("the profiled round served no request, or its profiles hold no CPU")
	}
	return pt, nil
}

// writeProfile merges one arm's sidecar profiles and writes them to
// a.File in the results directory, filling in a's counts. It returns the
// merged profile and the longest profile's seconds.
func (s *Suite) writeProfile(raw []testbed.CPUProfile, a *cpuprofile.Arm) (*profile.Profile, float64, error) {
	if len(raw) == 0 {
		return nil, 0, errors.New("the target returned no profile")
	}
	var ps []*profile.Profile
	var secs float64
	for _, r := range raw {
		p, err := cpuprofile.Parse(r.Data)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", r.Process, err)
		}
		ps = append(ps, p)
		secs = max(secs, time.Duration(p.DurationNanos).Seconds())
	}
	m, err := cpuprofile.Merge(ps)
	if err != nil {
		return nil, 0, err
	}
	a.Sidecars = len(ps)
	for _, smp := range m.Sample {
		a.Samples += smp.Value[0]
	}
	var buf bytes.Buffer
	if err := cpuprofile.Write(&buf, m); err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(s.Config.ResultsDir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("create results directory: %w", err)
	}
	if err := report.WriteAtomic(filepath.Join(s.Config.ResultsDir, a.File), buf.Bytes(), 0o644); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", a.File, err)
	}
	return m, secs, nil
}
