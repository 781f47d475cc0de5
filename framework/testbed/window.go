package testbed

import (
	"maps"
	"time"

	"github.com/meshbench/meshbench/framework/load"
)

// Window is how one run drives its workload: how many connections, at
// what rate, for how long. What each request is (protocol, sizes,
// headers, keep-alive) is the Workload's. The zero value of every field is
// the loadgen's documented default (load.Options.Normalize); the suite's
// default window comes from its plan (suite.Config: Concurrency, QPS,
// Duration, Warmup, RateTolerance).
type Window struct {
	// Concurrency is the number of connections, each with one request in
	// flight, or a flow's users. Default 1.
	Concurrency int `json:"concurrency"`
	// QPS is the total target rate of an open-loop run, in requests per
	// second, split over the loadgen shards. Default 0: closed loop at
	// maximum rate (a flow's rate is its users' and must be 0).
	QPS float64 `json:"qps"`
	// RateFraction, when > 0, says QPS was set as this fraction of a
	// capacity measured in the same run (the upgrade gate's open point),
	// so that runs on machines of another speed are compared by the
	// fraction. Default 0: QPS is absolute.
	RateFraction float64 `json:"rateFraction,omitempty"`
	// Duration is the measured window. Default 5s.
	Duration time.Duration `json:"duration"`
	// Warmup runs before the window with the same settings and is thrown
	// away. Default 1s; negative means none.
	Warmup time.Duration `json:"warmup"`
	// RateTolerance is the fraction, in [0, 1), by which an open-loop run
	// may miss its QPS and still be valid: it judges this window's rate,
	// so it travels with it. Default 0.05 (5 %).
	RateTolerance float64 `json:"rateTolerance"`
	// NoHDR turns the loadgen's HDR recording off for this window, to
	// measure what recording costs (BenchmarkLoadgenCeiling). Default
	// false: record.
	NoHDR bool `json:"noHDR,omitempty"`
}

// LoadOptions are the loadgen's options for one run of w in win: what a
// client sends from the workload (protocol, request size, keep-alive,
// headers, flow), how many, how fast and how long from the window. It is
// the one place both targets build their load from; each adds only its
// own URL, and a fault's timeline. The headers are a copy: a target may
// add its own without writing into w.
func LoadOptions(w Workload, win Window) load.Options {
	return load.Options{
		Concurrency:    win.Concurrency,
		QPS:            win.QPS,
		RateFraction:   win.RateFraction,
		Duration:       win.Duration,
		Warmup:         win.Warmup,
		RateTolerance:  win.RateTolerance,
		NoHDR:          win.NoHDR,
		Protocol:       w.Protocol,
		RequestSize:    w.RequestSize,
		NewConnections: w.NewConnections,
		Headers:        maps.Clone(w.Headers),
		Flow:           w.Flow,
	}
}
