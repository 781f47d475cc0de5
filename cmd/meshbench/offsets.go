package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/meshbench/meshbench/framework/gate"
)

// offsetsCmd is `meshbench offsets RESULTS...`: whether the whole A/A gate
// runs given (files, or directories such as hack/gate-rates.sh's) carry
// run-level offsets between their arms that their own intervals do not
// cover. Per decision: how many runs' intervals exclude 1, the day's
// per-pair noise, the mean ratio over the runs, and the F test of the
// runs' means against their pairs' spread (gate.Offsets). A run
// that is not whole (partial, failed, or missing a planned point) is left
// out, named; a file that is not a gated results file is refused.
func offsetsCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench offsets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print each run's ratio and interval under its decision")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("offsets: no results file or directory given\n" + usage)
	}
	files, err := resultsFiles(fs.Args())
	if err != nil {
		return fmt.Errorf("offsets: %w", err)
	}
	runs := map[string][]gate.Decision{}
	for _, f := range files {
		r, err := readVerdict(f)
		if err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
		if why := r.incomplete(); why != nil {
			fmt.Fprintf(stderr, "offsets: %s left out: %v\n", f, why)
			continue
		}
		runs[runName(f)] = r.GateVerdict.Decisions
	}
	if len(runs) == 0 {
		return fmt.Errorf("offsets: none of the %d results files is a whole run", len(files))
	}
	fmt.Fprintf(stdout, "%d whole gate runs\n", len(runs))
	for _, o := range gate.RunOffsets(runs) {
		fmt.Fprintln(stdout, o.String())
		if !*verbose {
			continue
		}
		for _, r := range o.Runs {
			iv := r.Interval
			mark := ""
			if r.ExcludesOne() {
				mark = "  excludes 1"
			}
			fmt.Fprintf(stdout, "  %s: %.4f (%.4f–%.4f, n=%d, SE %.2f %%)%s\n", r.Run, iv.Ratio, iv.Lo, iv.Hi, iv.N, 100*r.StandardError(), mark)
		}
	}
	return nil
}

// runName names a run by its results file's directory and base name
// (run3-duet/20261204T152931Z-local.json).
func runName(path string) string {
	return filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))
}
