// Command meshbench works on results files that `go test ./benchmarks
// -bench .` wrote. Its one subcommand so far draws reports:
//
//	meshbench report results/20261130T170000Z-local.json
//	meshbench report -o out -format md -prices my-prices.yaml base.json candidate.json
//
// One file gives the report of that run; several give a comparison, the
// first file as the reference. The command only turns flags into calls to
// framework/report.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/meshbench/meshbench/framework/report"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "meshbench:", err)
		os.Exit(2)
	}
}

const usage = `usage: meshbench report [-o DIR] [-format html,md] [-prices FILE] [-spectrum-c N] RESULTS.json [MORE.json]`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "report":
		return reportCmd(args[1:], stdout, stderr)
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
	formats := fs.String("format", "html,md", "formats to write: html, md, or both comma-separated")
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
