package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// speed is a machine the local fixture must hold on, simulated from the
// recorded runs (report.Slower).
type speed struct {
	name   string
	slower float64
}

var speeds = []speed{{"as recorded", 1}, {"×1.6 slower", 1.6}, {"×1.6 faster", 1 / 1.6}}

// regression is a meshed arm gone bad, and the limits that must catch it.
type regression struct {
	name     string
	change   report.Change
	caughtBy []verdict.Metric
}

var regressions = []regression{
	{"sidecar CPU per request ×2", report.Change{CPU: 2, Roles: []measure.Role{measure.RoleSidecar}},
		[]verdict.Metric{verdict.SidecarCPUOverBaselineCPU}},
	// Every meshed latency doubles, so its p99 does.
	{"meshed p99 ×2", report.Change{Latency: 2}, []verdict.Metric{verdict.MeshedP99OverBaselineP50, verdict.P99DeltaPct}},
	{"meshed throughput ×0.5", report.Change{Throughput: 0.5}, []verdict.Metric{verdict.ThroughputLossPct}},
}

// caught are the points where v breached a limit that catches r.
func (r regression) caught(v verdict.Verdict) map[string]bool {
	out := map[string]bool{}
	for _, b := range v.Breaches {
		if slices.Contains(r.caughtBy, b.Metric) {
			out[b.Scenario] = true
		}
	}
	return out
}

// judgedRuns are the n results files of fixtures/thresholds/judged/ that
// glob names (without .json.gz), and the local fixture to judge them by.
func judgedRuns(t *testing.T, glob string, n int) ([]report.Input, *verdict.Thresholds) {
	t.Helper()
	files, err := filepath.Glob("../../fixtures/thresholds/judged/" + glob + ".json.gz")
	require.NoError(t, err)
	require.Len(t, files, n)
	ins, err := report.Open(files...)
	require.NoError(t, err)
	th, err := verdict.Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	return ins, th
}

// localRuns are the nine quiet local runs the local fixture was calibrated
// on: three of 2026-12-02 and six of 2026-12-07.
func localRuns(t *testing.T) []report.Input {
	t.Helper()
	files, err := filepath.Glob("../../fixtures/thresholds/calibration/*-local.json.gz")
	require.NoError(t, err)
	require.Len(t, files, 9)
	ins, err := report.Open(files...)
	require.NoError(t, err)
	return ins
}

// judged is the verdict of th on in's records, on a machine s, with the
// meshed arm changed by bad when given.
func judged(t *testing.T, th *verdict.Thresholds, in report.Input, s speed, bad ...report.Change) judgement {
	t.Helper()
	recs, err := report.Simulate(in.Results.Records, report.Slower(s.slower))
	require.NoError(t, err)
	for _, ch := range bad {
		recs, err = report.Simulate(recs, ch, testbed.Meshed)
		require.NoError(t, err)
	}
	return judge(th, in.File, recs, io.Discard)
}

// absoluteFixture is the local fixture as it was before its limits were
// made relative: `meshbench calibrate -absolute` of the same runs.
func absoluteFixture(t *testing.T, ins []report.Input) *verdict.Thresholds {
	t.Helper()
	_, runs, err := calibrationRuns(ins, io.Discard)
	require.NoError(t, err)
	c, err := verdict.Calibrate("local", metric.MachineUnits, runs...)
	require.NoError(t, err)
	th, err := verdict.Parse("absolute.yaml", c.YAML("the local fixture in ms and CPU-ms"))
	require.NoError(t, err)
	return th
}

// breachesOf counts a verdict's breaches per metric.
func breachesOf(v verdict.Verdict) map[verdict.Metric]int {
	out := map[verdict.Metric]int{}
	for _, b := range v.Breaches {
		out[b.Metric]++
	}
	return out
}

// TestLocalFixtureTravels re-judges the three recorded local runs against
// the shipped local fixture, as recorded and as a machine ×1.6 slower and
// ×1.6 faster would have measured them (every latency and CPU figure of
// both arms scaled alike): the relative limits pass on all three machines,
// undecided only where the fixture says it is tight, while the absolute
// limits of before fail the slower machine at most of its limits.
func TestLocalFixtureTravels(t *testing.T) {
	ins := localRuns(t)
	th, err := verdict.Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	tight := tightMetrics(t, ins)
	abs := absoluteFixture(t, ins)
	short := shortWindows(t, ins)
	// Run by run, in file order: the limits undecided, the same on every
	// machine, and the absolute limits breached on the slower one (of 25
	// points each), none on the others.
	// (3 of each run's undecided are the latency limits of the rate
	// ladder's rung past the knee: qps=4000 on 2026-12-02, 8000 on
	// 2026-12-07; 2026-12-07T00:08's and 00:17's are undecided on the
	// 4000 req/s rung's tight p99 too.)
	// The runs of 2026-12-02 have 25 points, those of 2026-12-07 30 (the
	// connection churn's four, and the rate ladder's 8000 req/s).
	checked := []int{150, 150, 150, 180, 180, 180, 180, 180, 180}
	// (2026-12-02's runs are undecided too where a run's CPU counted too
	// few ticks.)
	undecided := []int{11, 9, 10, 7, 5, 6, 4, 4, 4}
	slowerBreaches := []map[verdict.Metric]int{
		{verdict.P50DeltaMs: 24, verdict.MeshedP99Ms: 16, verdict.SidecarCPUPer1kReqMs: 19},
		{verdict.P50DeltaMs: 11, verdict.MeshedP99Ms: 8, verdict.SidecarCPUPer1kReqMs: 10},
		{verdict.P50DeltaMs: 17, verdict.MeshedP99Ms: 12, verdict.SidecarCPUPer1kReqMs: 16},
		{verdict.P50DeltaMs: 29, verdict.MeshedP99Ms: 24, verdict.SidecarCPUPer1kReqMs: 30},
		{verdict.P50DeltaMs: 28, verdict.MeshedP99Ms: 20, verdict.SidecarCPUPer1kReqMs: 30},
		{verdict.P50DeltaMs: 29, verdict.MeshedP99Ms: 23, verdict.SidecarCPUPer1kReqMs: 30},
		{verdict.P50DeltaMs: 18, verdict.MeshedP99Ms: 8, verdict.SidecarCPUPer1kReqMs: 22},
		{verdict.P50DeltaMs: 18, verdict.MeshedP99Ms: 11, verdict.SidecarCPUPer1kReqMs: 26},
		{verdict.P50DeltaMs: 20, verdict.MeshedP99Ms: 14, verdict.SidecarCPUPer1kReqMs: 28},
	}
	for _, s := range speeds {
		for i, in := range ins {
			name := fmt.Sprintf("%s, %s", s.name, filepath.Base(in.File))
			j := judged(t, th, in, s)
			assert.NoError(t, j.verdict.Err(), name)
			assert.Equal(t, checked[i], j.verdict.Checked, "%s: 6 limits a point", name)
			assert.Len(t, j.verdict.Undecided, undecided[i], name)
			undecidedOnlyWhereTight(t, name, in.File, j.verdict.Undecided, tight, short[in.File])
			old := breachesOf(judged(t, abs, in, s).verdict)
			if s.slower > 1 {
				assert.Equal(t, slowerBreaches[i], old, "%s: the absolute limits fail the slower machine", name)
			} else {
				assert.Empty(t, old, name)
			}
		}
	}
}

// undecidedOnlyWhereTight: a quiet run of the calibration (file) is
// undecided only where the fixture is tight, past the ladder's knee, on
// CPU read in too few ticks, or on the p99 of a point it measured in
// shorter windows than the calibration's longest (short).
func undecidedOnlyWhereTight(t *testing.T, name, file string, undecided []*verdict.Undecided, tight map[string][]verdict.Metric, short map[string]bool) {
	t.Helper()
	for _, u := range undecided {
		if strings.Contains(u.Why, "past the rate ladder's knee") {
			// The rate ladder's meshed arm missed 4000 req/s on
			// 2026-12-02 and 8000 on 2026-12-07: there its
			// latency is not judged (verdict.Observation.PastKnee).
			assert.Contains(t, []string{"BenchmarkRateLadder/qps=4000/c=16", "BenchmarkRateLadder/qps=8000/c=16"}, u.Scenario, name)
			assert.True(t, verdict.IsLatency(u.Metric), name)
			continue
		}
		if strings.Contains(u.Why, "CPU read in 10 ms ticks") {
			// 2026-12-02 read CPU in ticks: a run whose process
			// counted too few is not judged on CPU (cpu-coarse).
			assert.Contains(t, file, "20261202T", name)
			assert.Contains(t, []verdict.Metric{verdict.SidecarCPUOverBaselineCPU, verdict.SidecarCPUPer1kReqMs, verdict.MeshCores}, u.Metric, name)
			continue
		}
		if short[u.Scenario] && verdict.IsLatency(u.Metric) {
			// The ladder's 1000 and 2000 req/s in 1 s windows, as
			// before MinRequests: the p99 of 1000 or 2000
			// requests, calibrated by its medians alone.
			continue
		}
		assert.Contains(t, tight[u.Scenario], u.Metric, "%s: undecided only where tight: %v", name, u)
	}
}

// TestLocalFixtureLeavesOneOut judges each quiet run against the fixture
// calibrated from the other eight: a quiet rerun the calibration has not
// seen, as a newcomer's main job is. None breaches a limit. Two did with
// tight limits at the geometric mean between the quiet runs' highest low
// end and a doubling of the lowest (2026-12-07T20:40's BenchmarkUserFlow
// p50 delta, 214–242 % against ≤ 210 %, the first main job of a freshly
// booted machine), and one with the rate ladder's 4000 req/s rung
// calibrated from the latency of runs past its knee too (2026-12-07T00:08's
// meshed p99 over the baseline p50, 12.6–21.6× against ≤ 12).
func TestLocalFixtureLeavesOneOut(t *testing.T) {
	ins := localRuns(t)
	require.Len(t, ins, 9)
	_, runs, err := calibrationRuns(ins, io.Discard)
	require.NoError(t, err)
	var breached []string
	for i, in := range ins {
		others := slices.Delete(slices.Clone(runs), i, i+1)
		c, err := verdict.Calibrate("local", metric.BaselineUnits, others...)
		require.NoError(t, err)
		th, err := verdict.Parse("others.yaml", c.YAML("the other eight"))
		require.NoError(t, err)
		for _, b := range judge(th, in.File, in.Results.Records, io.Discard).verdict.Breaches {
			breached = append(breached, fmt.Sprintf("%s: %s %s", filepath.Base(in.File), b.Scenario, b.Metric))
		}
	}
	assert.Empty(t, breached)
}

// shortWindows are, per quiet run, the points it measured in shorter
// windows than another run did (verdict.LongestWindows), which calibrate
// counts by their medians alone.
func shortWindows(t *testing.T, ins []report.Input) map[string]map[string]bool {
	t.Helper()
	_, runs, err := calibrationRuns(ins, io.Discard)
	require.NoError(t, err)
	longest := verdict.LongestWindows(runs...)
	out := map[string]map[string]bool{}
	for i, run := range runs {
		out[ins[i].File] = map[string]bool{}
		for _, o := range run {
			out[ins[i].File][o.Scenario] = o.Window < longest[o.Scenario]
		}
	}
	return out
}

// tightMetrics are, per point, the metrics the local calibration marks
// tight: where a quiet run may be undecided.
func tightMetrics(t *testing.T, ins []report.Input) map[string][]verdict.Metric {
	t.Helper()
	_, runs, err := calibrationRuns(ins, io.Discard)
	require.NoError(t, err)
	c, err := verdict.Calibrate("local", metric.BaselineUnits, runs...)
	require.NoError(t, err)
	out := map[string][]verdict.Metric{}
	for _, p := range c.Points {
		out[p.Scenario] = slices.Concat(p.Tight, p.Toothless)
	}
	return out
}

// TestLocalFixtureCatchesRegressionsOnEveryMachine: on each of the three
// machines, a doubled sidecar CPU per request, a doubled meshed p99 and a
// halved meshed throughput each fail every point of every recorded run,
// on a limit of theirs, with the whole interval beyond it; the p99 every
// point but the rate ladder's rung past the knee, whose latency is not
// judged. The absolute
// limits of before miss a doubled sidecar CPU on the faster machine at
// most points.
func TestLocalFixtureCatchesRegressionsOnEveryMachine(t *testing.T) {
	ins := localRuns(t)
	th, err := verdict.Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	abs := absoluteFixture(t, ins)
	short := shortWindows(t, ins)
	for _, s := range speeds {
		for _, in := range ins {
			for _, r := range regressions {
				j := judged(t, th, in, s, r.change)
				caught := r.caught(j.verdict)
				missed := missedPoints(t, in.File, j.obs, r, caught, short[in.File])
				assert.Empty(t, missed, "%s, %s, %s", s.name, filepath.Base(in.File), r.name)
				points := 25 // 2026-12-02; 2026-12-07 adds the connection churn's four and the ladder's 8000 req/s
				if strings.HasPrefix(filepath.Base(in.File), "20261207") {
					points = 30
				}
				assert.Len(t, j.obs, points)
			}
			// On the faster machine a doubled sidecar CPU per request
			// stays within the absolute limits at most points.
			if s.slower < 1 {
				old := judged(t, abs, in, s, regressions[0].change)
				caught := map[string]bool{}
				for _, b := range old.verdict.Breaches {
					caught[b.Scenario] = true
				}
				assert.Less(t, len(caught), len(old.obs)/2, "%s, %s: the absolute limits miss %s at most points", s.name, filepath.Base(in.File), regressions[0].name)
			}
		}
	}
}

// missedPoints are the points of a quiet run (file) whose observations
// obs, with regression r applied, no limit caught, but for those the
// fixture cannot judge on r's metric: a rung past the knee, a p99 of
// shorter windows than the calibration's (short), CPU read in too few
// ticks, or a point acrossDays excepts.
func missedPoints(t *testing.T, file string, obs []verdict.Observation, r regression, caught, short map[string]bool) []string {
	t.Helper()
	var missed []string
	for _, o := range obs {
		if o.PastKnee != "" && verdict.IsLatency(r.caughtBy[0]) {
			// A rate ladder's rung past the knee judges no
			// latency: a queue's.
			assert.Contains(t, o.Scenario, "BenchmarkRateLadder/")
			continue
		}
		if short[o.Scenario] && verdict.IsLatency(r.caughtBy[0]) {
			// Measured in shorter windows than the main job's
			// now (the ladder's 1000 req/s rung before
			// MinRequests): calibrated by its medians, judged
			// on its wider interval.
			continue
		}
		if _, unjudged := o.Unjudged[r.caughtBy[0]]; unjudged {
			// CPU read in too few ticks (cpu-coarse) is judged
			// by no limit, doubled or not.
			assert.Contains(t, file, "20261202T")
			continue
		}
		switch acrossDays["../../fixtures/thresholds/local.yaml"][o.Scenario] {
		case p99Twice:
			if verdict.IsLatency(r.caughtBy[0]) {
				continue // no teeth across the two days (acrossDays)
			}
		case cpuTwice:
			if r.caughtBy[0] == verdict.SidecarCPUOverBaselineCPU {
				continue
			}
		}
		if !caught[o.Scenario] {
			missed = append(missed, o.Scenario)
		}
	}
	return missed
}

// TestLocalFixtureOnOtherMachines judges the main jobs recorded beside the
// calibration (fixtures/thresholds/judged/): two quiet ones of 2026-12-03,
// a slower day on another processor, one pinned to one core (taskset -c
// 0), one of 2026-12-07 capped at 1.25 of the 2 cores by a CPU quota,
// three quiet ones of 2026-12-07 on an AMD EPYC, a faster machine (whose
// ladder windows hold 4000 requests; docs/measurements.md), and three
// quiet ones of 2026-12-08 on an AMD EPYC, a slower one (its ladder's
// meshed arm missed 4000 req/s). The relative limits breach a few points
// of them, the absolute limits of the same calibration many times more on
// the slower ones (the faster AMD breaches neither; it breached a tight
// p99 increase before calibrate spared it): the breaches per run, in file
// order.
func TestLocalFixtureOnOtherMachines(t *testing.T) {
	others, th := judgedRuns(t, "*-local*", 10)
	abs := absoluteFixture(t, localRuns(t))
	// The fourth ran in a cgroup capped at 1.25 cores (cpu.cfs_quota_us),
	// whose throttling stretches the meshed arm's tail: all its breaches
	// but one are p99 limits. (Against the one-day fixture of 2026-12-02
	// the relative limits breached 2, 2, 14 and 34, and its absolute
	// limits 28, 32 and 60 of the first three.) The absolute limits are
	// calibrated without 2026-12-02's CPU read in too few ticks, and judge
	// no such CPU of 2026-12-03's runs (cpu-coarse).
	relative, absolute := []int{0, 0, 12, 36, 0, 0, 0, 0, 0, 0}, []int{25, 19, 58, 44, 0, 0, 0, 48, 31, 45}
	for i, in := range others {
		name := filepath.Base(in.File)
		assert.Len(t, judge(th, in.File, in.Results.Records, io.Discard).verdict.Breaches, relative[i], name)
		assert.Len(t, judge(abs, in.File, in.Results.Records, io.Discard).verdict.Breaches, absolute[i], name)
	}
}

// TestLocalFixtureTeethOnAnotherCPU measures how far the fixture's teeth
// carry to the AMD EPYC's six quiet main jobs: the points where each
// required regression stays within a limit or is undecided (its whole
// interval not beyond), per run in file order. On 2026-12-07's the
// sidecar cost ×0.77 of what it does on the calibration machine against
// the same run's baseline (the geometric mean over the points of its
// ratio to the limit: 0.53–0.55 against the calibration runs'
// 0.67–0.75), so a doubling there lands near the limits; on 2026-12-08's,
// ×0.88 (0.60–0.62), and the teeth carry at all but a few points. The
// fixture says to calibrate on the machine you gate on.
func TestLocalFixtureTeethOnAnotherCPU(t *testing.T) {
	ins, th := judgedRuns(t, "*-local-amd", 6)
	want := map[string][]int{
		"sidecar CPU per request ×2": {13, 15, 17, 2, 2, 4},
		"meshed p99 ×2":              {12, 13, 8, 1, 1, 3},
		"meshed throughput ×0.5":     {11, 12, 12, 3, 0, 3},
	}
	// The ladders of 2026-12-08's runs stopped at 4000 req/s, past the
	// knee (the second's at 2000, where one window's p99 broke the SLO).
	points := []int{30, 30, 30, 29, 28, 29}
	for i, in := range ins {
		for _, r := range regressions {
			j := judged(t, th, in, speeds[0], r.change)
			caught := r.caught(j.verdict)
			missed := 0
			for _, o := range j.obs {
				if !caught[o.Scenario] && (o.PastKnee == "" || !verdict.IsLatency(r.caughtBy[0])) {
					missed++
				}
			}
			assert.Len(t, j.obs, points[i])
			assert.Equal(t, want[r.name][i], missed, "%s, %s", filepath.Base(in.File), r.name)
		}
	}
}
