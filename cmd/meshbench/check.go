package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/suite"
)

// checkCmd is `meshbench check [-count N] BENCHMARK-FLAGS...`: the
// benchmark flags checked as a run checks them before it builds or
// measures anything (suite.Config.Normalize), so that a workflow refuses a
// bad input in seconds rather than after compiling the benchmarks. -count
// is go test's, checked against -max-count (default: the suite's for
// these flags). It prints nothing and exits 0
// when the flags would run, else 2 with the flag and why.
func checkCmd(args []string) error {
	fs := flag.NewFlagSet("meshbench check", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error names the flag; the usage would bury it
	cfg := suite.RegisterFlags(fs)
	count := fs.Int("count", 0, "go test's -count, checked against -max-count (0: the suite's default for these flags)")
	if err := fs.Parse(args); err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("check: %w", err)}
	}
	if fs.NArg() > 0 {
		return &exitError{gate.ExitError, fmt.Errorf("check: unexpected argument %q: benchmark flags start with -\n%s", fs.Arg(0), usage)}
	}
	if *count < 0 {
		return &exitError{gate.ExitError, fmt.Errorf("check: -count=%d: a number of rounds, at least 1", *count)}
	}
	err := cfg.Normalize()
	if err == nil {
		err = cfg.CheckMaxCount(cmp.Or(*count, cfg.DefaultCount()))
	}
	if err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("check: %w", err)}
	}
	return nil
}
