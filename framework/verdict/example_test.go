package verdict_test

import (
	"errors"
	"fmt"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/verdict"
)

func Example() {
	fixture := []byte(`# Thresholds for an example target.
target: example
limits:
  - path: "*"
    concurrency: "1-4"
    p50DeltaMs: 1.5
    p99DeltaPct: 400
    throughputLossPct: 75
    sidecarCPUPer1kReqMs: 500
    sidecarRSSMiB: 256
  - path: one-hop
    concurrency: "5+"
    p50DeltaMs: 8
    p99DeltaPct: 600
    throughputLossPct: 85
    sidecarCPUPer1kReqMs: 1500
    sidecarRSSMiB: 300
`)
	th, err := verdict.Parse("example.yaml", fixture)
	if err != nil {
		fmt.Println(err)
		return
	}

	v := th.Check([]verdict.Observation{
		{
			Scenario: "BenchmarkOneHop/c=1", Path: verdict.OneHop, Concurrency: 1,
			Values: map[verdict.Metric]stats.Summary{
				verdict.P50DeltaMs:    {Median: 0.21, Lo: 0.18, Hi: 0.25, N: 3},
				verdict.SidecarRSSMiB: {Median: 61, Lo: 58, Hi: 64, N: 3},
			},
		},
		{
			Scenario: "BenchmarkOneHop/c=32", Path: verdict.OneHop, Concurrency: 32,
			Values: map[verdict.Metric]stats.Summary{
				verdict.P50DeltaMs:        {Median: 9.4, Lo: 8.7, Hi: 10.2, N: 3},
				verdict.ThroughputLossPct: {Median: 62, Lo: 58, Hi: 66, N: 3},
			},
		},
		{Scenario: "BenchmarkTwoHop/c=32", Path: verdict.TwoHop, Concurrency: 32},
	})

	fmt.Println("checked:", v.Checked)
	fmt.Println(v.Err())

	var b *verdict.Breach
	if errors.As(v.Err(), &b) {
		fmt.Printf("first breach: %s median %.1f over %d repeats\n", b.Metric, b.Got.Median, b.Got.N)
	}
	// Output:
	// checked: 4
	// example.yaml:11: BenchmarkOneHop/c=32: too high p50 delta: got 9.40ms (8.70–10.20, n=3) expected ≤ 8.00ms
	// example.yaml: BenchmarkTwoHop/c=32: no rule matches path two-hop at concurrency 32; add one, or this scenario is not gated
	// first breach: p50DeltaMs median 9.4 over 3 repeats
}

func ExampleParse_error() {
	_, err := verdict.Parse("fixtures/thresholds/local.yaml", []byte(`target: local
limits:
  - path: one-hop
    concurrency: "1-4"
    p50DeltaMS: 1.5
`))
	fmt.Println(err)
	// Output:
	// fixtures/thresholds/local.yaml:5: limits[0].p50DeltaMS: unknown field; did you mean p50DeltaMs?
}
