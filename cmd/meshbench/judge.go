package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/verdict"
)

// judgeCmd is `meshbench judge -thresholds FIXTURE [-slower K] RESULTS...`:
// recorded results re-judged offline against a threshold fixture, point by
// point and limit by limit, with each limit's slack, as the run would have
// been judged had it checked that fixture; -slower simulates a machine K
// times slower (below 1: faster) by scaling every latency and CPU figure
// of both arms. It exits 1 when a file breaches the fixture.
func judgeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fixture := fs.String("thresholds", "", "threshold fixture to judge the results against, e.g. fixtures/thresholds/local.yaml")
	slower := fs.Float64("slower", 1, "simulate a machine this many times slower (below 1: faster): every latency and CPU per request of both arms times it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *fixture == "":
		return errors.New("judge: -thresholds: no fixture given\n" + usage)
	case fs.NArg() == 0:
		return errors.New("judge: no results file given\n" + usage)
	case !(*slower > 0) || math.IsInf(*slower, 0):
		return fmt.Errorf("judge: -slower=%g: want a finite factor > 0, e.g. 1.6", *slower)
	}
	th, err := verdict.Load(*fixture)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	ins, err := report.Open(fs.Args()...)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	failed := 0
	for _, in := range ins {
		recs, err := report.Simulate(in.Results.Records, report.Slower(*slower))
		if err != nil {
			return fmt.Errorf("judge: %s: %w", in.File, err)
		}
		j := judge(th, in.File, recs, stderr)
		if why := th.OtherCPU(in.Results.Environment.CPUModel); why != "" {
			fmt.Fprintf(stderr, "judge: %s: %s\n", in.File, why)
		}
		if err := j.print(stdout, *slower); err != nil {
			return fmt.Errorf("judge: %w", err)
		}
		if j.verdict.Err() != nil {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{gate.ExitFail, fmt.Errorf("judge: %d of %d results files breach %s", failed, len(ins), *fixture)}
	}
	return nil
}

// judgement is one results file judged against a fixture.
type judgement struct {
	file    string
	th      *verdict.Thresholds
	obs     []verdict.Observation
	verdict verdict.Verdict
}

// judge compares the records of file again, leaving out the points with
// invalid runs (said on stderr), and checks them against th.
func judge(th *verdict.Thresholds, file string, recs []report.Record, stderr io.Writer) judgement {
	j := judgement{file: file, th: th}
	for _, c := range report.Compare(recs) {
		if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
			fmt.Fprintf(stderr, "judge: %s: %s left out: %d invalid run(s)\n", file, c.Scenario(), n)
			continue
		}
		if o := c.Observation(); len(o.Values) > 0 {
			j.obs = append(j.obs, o)
		}
	}
	j.verdict = th.Check(j.obs)
	return j
}

// print writes one line per point and limit: the figure, the limit, the
// slack (verdict.Slack) and the outcome, under a line that sums them up.
func (j judgement) print(w io.Writer, slower float64) error {
	outcome := map[string]string{}
	for _, b := range j.verdict.Breaches {
		outcome[b.Scenario+" "+string(b.Metric)] = "BREACH"
	}
	for _, u := range j.verdict.Undecided {
		outcome[u.Scenario+" "+string(u.Metric)] = "undecided"
	}
	machine := "as recorded"
	if slower != 1 {
		machine = fmt.Sprintf("simulated on a machine ×%g slower", slower)
	}
	fmt.Fprintf(w, "# %s against %s, %s: %d limits checked, %d breached, %d undecided, %d points uncovered\n",
		filepath.Base(j.file), j.th.File, machine, j.verdict.Checked, len(j.verdict.Breaches), len(j.verdict.Undecided), len(j.verdict.Uncovered))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POINT\tLIMIT\tGOT\tALLOWED\tSLACK\tOUTCOME")
	for _, o := range j.obs {
		rule, ok := j.th.MatchObservation(o)
		if !ok {
			continue
		}
		for _, m := range verdict.Metrics() {
			got, measured := o.Values[m]
			limit, set := rule.Max(m)
			if !measured || !set {
				continue
			}
			out, ok := outcome[o.Scenario+" "+string(m)]
			if !ok {
				out = "pass"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t×%.2f\t%s\n", o.Scenario, m, got, m.Format(limit), verdict.Slack(m, got, limit), out)
		}
	}
	return tw.Flush()
}
