package report_test

import (
	"fmt"
	"os"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A meshed arm that used 0.45 mesh cores per 1000 req/s (at 954 req/s,
// with 124 MiB of proxies) priced with the example fixture.
func ExamplePrices_Cost() {
	prices, err := report.LoadPrices("") // fixtures/prices/example.yaml, embedded
	if err != nil {
		fmt.Println(err)
		return
	}
	c := report.Comparison{Benchmark: "BenchmarkOneHop", Path: testbed.OneHop, Concurrency: 1, Meshed: report.ArmStats{
		MeshCores:         stats.Summary{N: 1, Median: 0.429, Lo: 0.429, Hi: 0.429},
		MeshCoresPer1kRPS: stats.Summary{N: 1, Median: 0.45, Lo: 0.45, Hi: 0.45},
		MeshRSSMiB:        stats.Summary{N: 1, Median: 124, Lo: 124, Hi: 124},
		QPS:               stats.Summary{N: 1, Median: 954, Lo: 954, Hi: 954},
	}}
	k, _ := prices.Cost(c)
	fmt.Printf("%s: %.4f vCPU-h and %.4f %s per 1M requests\n", k.Scenario, k.VCPUHoursPer1M.Median, k.Per1M.Median, prices.Currency)
	fmt.Printf("monthly: %.0f %s at %.0f req/s, %.0f %s at %.0f req/s\n", k.MonthlyAverage, prices.Currency, prices.AverageRPS, k.MonthlyPeak, prices.Currency, prices.PeakRPS)
	// Output:
	// BenchmarkOneHop/c=1: 0.1250 vCPU-h and 0.0055 USD per 1M requests
	// monthly: 699 USD at 50000 req/s, 13962 USD at 1000000 req/s
}

// The Markdown report of a recorded run, as CI appends it to
// $GITHUB_STEP_SUMMARY.
func ExampleMarkdown() {
	ins, err := report.Open("testdata/local.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	prices, _ := report.LoadPrices("")
	if err := report.Markdown(os.Stdout, ins[:1], report.Options{Prices: prices}); err != nil {
		fmt.Println(err)
	}
}
