package gate_test

import (
	"fmt"

	"github.com/meshbench/meshbench/framework/gate"
)

func Example() {
	g, err := gate.Parse("fixtures/gates/local.yaml", []byte(`target: local
rules:
  - metric: sidecarCPUPer1kReq
    match: {}
    maxIncreasePct: 10
  - metric: p99
    match: {loop: open}
    maxIncreasePct: 15
`))
	if err != nil {
		panic(err)
	}
	if err := g.CheckTarget("local"); err != nil {
		panic(err)
	}
	scenario := gate.Labels{"path": "one-hop", "c": "8", "loop": "open"}
	if err := g.Check([]gate.Labels{scenario}); err != nil {
		panic(err)
	}
	// Six interleaved pairs: sidecar CPU-ms per 1k requests and p99 ms.
	v, err := g.Decide([]gate.Measurement{
		{Scenario: scenario, Metric: gate.SidecarCPUPer1kReq,
			Reference: []float64{300, 310, 295, 305, 300, 298},
			Candidate: []float64{420, 445, 400, 436, 433, 410}},
		{Scenario: scenario, Metric: gate.P99,
			Reference: []float64{4.1, 4.3, 3.9, 4.0, 4.4, 4.2},
			Candidate: []float64{4.0, 4.5, 4.1, 4.1, 4.3, 4.2}},
	})
	if err != nil {
		panic(err)
	}
	for _, d := range v.Decisions {
		fmt.Println(d.Outcome, d.Reason)
	}
	fmt.Println("verdict:", v.Outcome, "exit code", v.ExitCode())
	// Output:
	// fail fixtures/gates/local.yaml:3: c=8/loop=open/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 1.41 (1.37–1.44, n=6) expected ≤ 1.10
	// pass fixtures/gates/local.yaml:6: c=8/loop=open/path=one-hop: p99 latency within limit: candidate/reference 1.01 (0.98–1.05, n=6) expected ≤ 1.15
	// verdict: fail exit code 1
}

func ExampleGate_Calibrate() {
	g, err := gate.Parse("local.yaml", []byte(`target: local
rules:
  - metric: sidecarCPUPer1kReq
    match: {}
    maxIncreasePct: 10
`))
	if err != nil {
		panic(err)
	}
	// An A/A run: the same sidecar build in both arms.
	ns, err := g.Calibrate([]gate.Measurement{{
		Scenario:  gate.Labels{"path": "two-hop", "c": "32"},
		Metric:    gate.SidecarCPUPer1kReq,
		Reference: []float64{1100, 1250, 980, 1190, 1020, 1300},
		Candidate: []float64{1230, 1090, 1150, 1010, 1180, 1120},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(ns[0].Message)
	// Output:
	// local.yaml:3: c=32/path=two-hop: sidecar CPU per 1k req: this gate cannot pass honestly: detectable change 18 % at n=6 > limit 10 %; about 14 pairs would let it
}
