// Command meshbench runs the upgrade gate and works on results files that
// `go test ./benchmarks -bench .` wrote:
//
//	meshbench gate -candidate caddy+access-log          # exit 0 pass, 1 fail, 3 inconclusive, 2 no decision
//	meshbench verdict results/20261201T170000Z-local.json
//	meshbench check -sidecar caddy@v2.10.2 -candidate caddy@v2.11.9 -max-count 30   # exit 0, or 2 naming the flag
//	meshbench pin go.mod                                # caddy@v2.11.9
//	meshbench report results/20261130T170000Z-local.json
//	meshbench report -o out -format md -prices my-prices.yaml base.json candidate.json
//	meshbench report -format csv,smp results/20261130T170000Z-local.json
//	meshbench calibrate -o fixtures/thresholds/local.yaml quiet1.json quiet2.json
//	meshbench judge -thresholds fixtures/thresholds/local.yaml -slower 1.6 fixtures/thresholds/calibration/*-local.json.gz
//	meshbench history -o out -fail-on-change 10 results/    # exit 1 past the limit, 2 bad input
//
// gate runs the gate's benchmark with go test and exits with its verdict,
// which go test's own exit code (1 for anything) cannot carry; verdict
// prints a stored verdict as Markdown and exits with it. For report, one
// file gives the report of that run; several give a comparison, the first
// file as the reference. The command only turns flags into calls to
// framework/report and framework/gate.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshbench/meshbench/framework/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and returns the code to exit with: a verdict's own
// (exitError), else 2.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "meshbench:", err)
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 2
}

const usage = `usage:
  meshbench gate [-results DIR] [-summary FILE] [-timeout D] [-bench REGEXP] [-go GO] BENCHMARK-FLAGS...
      runs the upgrade gate (e.g. -candidate caddy+access-log) and exits 0 pass, 1 fail, 3 inconclusive,
      2 no decision (also for a run that stopped early, failed, or did not run every point it planned)
  meshbench verdict [-summary FILE] RESULTS.json
      the verdict a gated run stored, as Markdown, with the same exit code
  meshbench check [-count N] BENCHMARK-FLAGS...
      checks benchmark flags as a run does before it builds anything: exit 0, or 2 naming the flag
  meshbench pin [GO.MOD]
      the local sidecar a go.mod pins, as -sidecar takes it (caddy@v2.11.9)
  meshbench pins [-base FILE]
      every pin the upgrade gate compares (local and kind sidecars, mesh releases), as NAME=VERSION;
      with -base (a base tree's output), the changed ones as NAME REFERENCE CANDIDATE
  meshbench report [-o DIR] [-format html,md,csv,smp] [-prices FILE] [-spectrum-c N] RESULTS.json [MORE.json]
      reports (html, md) and exports (csv: one row per run; smp: Service Mesh Performance results) of results files
  meshbench calibrate [-o FIXTURE] [-note TEXT] [-absolute] RESULTS.json [MORE.json]
      a threshold fixture from quiet runs: each point's limits between the quiet intervals and a doubling,
      relative to the same run's baseline (-absolute: in ms and CPU-ms, which do not travel across machines)
  meshbench judge -thresholds FIXTURE [-slower K] RESULTS.json [MORE.json]
      recorded results re-judged against a fixture, limit by limit with its slack, optionally as a machine
      K times slower (below 1: faster) would have measured them; exits 1 on a breach
  meshbench history [-o DIR] [-p PVALUE] [-window N] [-follow-version] [-fail-on-change PCT] RESULTS...
      change points across runs (files or directories), per comparable group, scenario and metric;
      exits 1 when a series' newest run sits after a change worse than PCT percent, 2 on bad input
  meshbench offsets [-v] RESULTS...
      A/A gate runs (files or directories, e.g. hack/gate-rates.sh's) read together: per decision, the runs
      whose interval excludes 1, the day's per-pair noise, the mean ratio over the runs, and an F test for
      offsets between the arms that the runs' own intervals do not cover`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "gate":
		return gateCmd(ctx, args[1:], stdout, stderr)
	case "verdict":
		return verdictCmd(args[1:], stdout, stderr)
	case "check":
		return checkCmd(args[1:])
	case "pin":
		return pinCmd(args[1:], stdout)
	case "pins":
		return pinsCmd(args[1:], stdout, stderr)
	case "report":
		return reportCmd(args[1:], stdout, stderr)
	case "calibrate":
		return calibrateCmd(args[1:], stdout, stderr)
	case "judge":
		return judgeCmd(args[1:], stdout, stderr)
	case "history":
		return historyCmd(args[1:], stdout, stderr)
	case "offsets":
		return offsetsCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func reportCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", ".", "directory to write the reports to")
	formats := fs.String("format", "html,md", "formats to write, comma-separated: html, md, csv (one row per run), smp (Service Mesh Performance YAML)")
	pricesFile := fs.String("prices", "", "price fixture for the cost model (default: the embedded fixtures/prices/example.yaml)")
	spectrumC := fs.Int("spectrum-c", 0, "concurrency whose latency spectrum is drawn (default: the highest measured)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("report: no results file given\n" + usage)
	}
	fmts, err := report.ParseFormats(*formats)
	if err != nil {
		return fmt.Errorf("report: -format: %w", err)
	}
	prices, err := report.LoadPrices(*pricesFile)
	if err != nil {
		return fmt.Errorf("report: -prices: %w", err)
	}
	ins, err := report.Open(fs.Args()...)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	paths, err := report.WriteFiles(*dir, ins, fmts, report.Options{Prices: prices, SpectrumC: *spectrumC})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return nil
}
