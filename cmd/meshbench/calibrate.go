package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/verdict"
)

// calibrateCmd writes a threshold fixture from quiet runs' results files:
// each point's limits between what the quiet runs reached and what a
// doubling (or halved throughput) would reach, relative to the same run's
// baseline, or with -absolute in ms and CPU-ms; see verdict.Calibrate.
func calibrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "fixture file to write (default: standard output)")
	note := fs.String("note", "", "a line for the fixture's header: the machine and how the runs were made")
	as := fs.String("target", "", "write the fixture for this target instead of the runs' own: local, kind, or a mesh's name for a remote cluster, whose fixtures are per mesh (kind runs as a first fixture for -mesh=sidecar on remote clusters: -target sidecar); the header says so")
	absolute := fs.Bool("absolute", false, "limit the p50 delta, the meshed p99 and the sidecar CPU in ms and CPU-ms of the machine measured, which judge the machine as much as the mesh, rather than relative to the same run's baseline")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("calibrate: no results file given\n" + usage)
	}
	ins, err := report.Open(fs.Args()...)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	tgt, runs, err := calibrationRuns(ins, stderr)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if tgt == "remote" {
		// a remote cluster's fixtures are per mesh (fixtures/thresholds/<mesh>.yaml)
		tgt = ins[0].Results.Environment.Mesh.Name
	}
	measured := tgt
	switch {
	case *as == "" || *as == tgt:
	case *as == "local" || *as == "kind" || slices.Contains(mesh.Names(), *as):
		tgt = *as
	default:
		return fmt.Errorf("calibrate: -target=%s: want local, kind, or a mesh for a remote cluster (%s)", *as, strings.Join(mesh.Names(), ", "))
	}
	units := metric.BaselineUnits
	if *absolute {
		units = metric.MachineUnits
	}
	c, err := verdict.Calibrate(tgt, units, runs...)
	if err != nil {
		return err
	}
	c.CalibratedOn = cpuModels(ins)
	data := c.YAML(calibrationHeader(tgt, measured, units, fs.Args(), *note))
	if _, err := verdict.Parse("calibrated", data); err != nil {
		return fmt.Errorf("calibrate: the fixture written does not read back (a bug): %w", err)
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := report.WriteAtomic(*out, data, 0o644); err != nil {
		return fmt.Errorf("calibrate: -o: %w", err)
	}
	fmt.Fprintf(stderr, "calibrate: %s: %d points, %d without teeth in some metric\n", *out, len(c.Points), toothless(c))
	return nil
}

// calibrationRuns recompares each file's records and returns its
// observations, leaving out the points with invalid runs (said on
// stderr). Every file must be of one target, and not an upgrade gate's.
func calibrationRuns(ins []report.Input, stderr io.Writer) (string, [][]verdict.Observation, error) {
	tgt := ""
	var runs [][]verdict.Observation
	for _, in := range ins {
		t := in.Results.Environment.Target
		switch {
		case tgt != "" && t != tgt:
			return "", nil, fmt.Errorf("%s: target %s, but %s is of target %s; calibrate one target at a time", in.File, t, ins[0].File, tgt)
		case in.Results.GateDecisions != nil:
			return "", nil, fmt.Errorf("%s: an upgrade gate's run; calibrate thresholds from runs of the meshed arm against its baseline", in.File)
		}
		tgt = t
		var obs []verdict.Observation
		for _, c := range report.Compare(in.Results.Records) {
			if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
				fmt.Fprintf(stderr, "calibrate: %s: %s left out: %d invalid run(s)\n", in.File, c.Scenario(), n)
				continue
			}
			obs = append(obs, c.Observation())
		}
		runs = append(runs, obs)
	}
	return tgt, runs, nil
}

// cpuModels are the runs' CPU models, each once, sorted; a run that
// recorded none adds none.
func cpuModels(ins []report.Input) []string {
	var out []string
	for _, in := range ins {
		if m := in.Results.Environment.CPUModel; m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// calibrationHeader says what the fixture is, where it came from and how
// its limits were set.
func calibrationHeader(tgt, measured string, units metric.Units, files []string, note string) string {
	var b strings.Builder
	flags := ""
	if units == metric.MachineUnits {
		flags = " -absolute"
	}
	fmt.Fprintf(&b, "Thresholds for target %s, calibrated by `meshbench calibrate%s` on %s from:\n", tgt, flags, time.Now().UTC().Format("2006-01-02"))
	if measured != tgt {
		b.Reset()
		fmt.Fprintf(&b, "Thresholds for target %s, calibrated on target %s (not where they apply: a first fixture, to be recalibrated on your own) by `meshbench calibrate%s -target %s` on %s from:\n",
			tgt, measured, flags, tgt, time.Now().UTC().Format("2006-01-02"))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "  %s\n", filepath.Base(f))
	}
	if note != "" {
		fmt.Fprintf(&b, "%s\n", note)
	}
	if units == metric.BaselineUnits {
		b.WriteString(relativeHeader)
		return b.String()
	}
	fmt.Fprintf(&b, `
Each point's limit sits at the geometric mean of the highest end of its
quiet runs' intervals and %g times the lowest end, on the metric's own
scale (p50 delta, CPU and RSS as they are; p99 as meshed/baseline; the
throughput loss as baseline/meshed). So the quiet runs pass, and a meshed
arm whose p50 delta, p99, sidecar CPU or RSS doubles, or whose throughput
halves, fails at that point by the same factor.
%s
Regenerate with the same command; recalibrate on another machine.
%s`, verdict.Regression, limitsDecide, rulesOrder)
	return b.String()
}

// limitsDecide says how a check decides against a limit, and where the
// quiet runs leave a limit tight or without teeth.
var limitsDecide = fmt.Sprintf(`Checks decide on the interval over repeats: wholly above a limit fails,
holding it is undecided. Where the quiet intervals' high ends leave no
room (×%g) below %g times their lowest end, the limit sits a factor √%g
below that, above their low ends ("tight": a quiet run may be undecided
there, never failed); where even the low ends leave none, it only keeps
the quiet runs passing ("no teeth").`, verdict.MinRoom, verdict.Regression, verdict.MinRoom)

// rulesOrder says which rule applies to a scenario.
const rulesOrder = `
Rules: the first rule whose match, path and concurrency select a
scenario applies; the last rules cover scenarios not calibrated here.`

// relativeHeader says how a fixture relative to the baseline was set.
var relativeHeader = fmt.Sprintf(`
The limits are in units of the same run's interleaved baseline, which a
slower or faster machine moves alike in both arms: the p50 delta in percent
of the baseline p50 (p50DeltaPct); the meshed p99 over the baseline p50
(meshedP99OverBaselineP50: the baseline's median measures the machine and
is far steadier than its tail) and over the baseline p99 (p99DeltaPct);
the sidecars' CPU per request over the whole baseline arm's, apps and load
generator (sidecarCPUOverBaselineCPU); the throughput loss. Only the
sidecar RSS stays absolute, in MiB: memory does not scale with the
machine's speed, and the baseline arm has no sidecar to measure it by.

Each point's limit sits at the geometric mean of the highest end of its
quiet runs' intervals and %g times the lowest end, on the metric's own
scale (the p99 increase as meshed/baseline, the throughput loss as
baseline/meshed, the others as they are). So the quiet runs pass, and a
meshed arm whose p50 delta, p99, sidecar CPU per request or RSS doubles,
or whose throughput halves, fails at that point by the same factor.
%s
Regenerate with the same command; re-judge results against it, also as
a slower or faster machine would have measured them, with
meshbench judge -thresholds FIXTURE -slower 1.6 RESULTS...
%s`, verdict.Regression, limitsDecide, rulesOrder)

func toothless(c *verdict.Calibration) int {
	n := 0
	for _, p := range c.Points {
		if len(p.Toothless) > 0 {
			n++
		}
	}
	return n
}
