package kube

import (
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/validity"
)

// shardResult turns one loadgen's fortio result into a load.Result for
// the shard's options o, its return codes counted for o's protocol
// (fortioResult.codes).
func shardResult(o load.Options, fr *fortioResult) *load.Result {
	r := load.NewResult(o, fr.StartTime, fr.ActualDuration, fr.ActualQPS, fr.codes(o.Protocol), fr.DurationHistogram)
	r.HDR = fr.MeshbenchHDR
	if tl := fr.MeshbenchTimeline; tl != nil {
		// The loadgen counted on its node's clock; the harness times
		// faults on its own.
		onHarness := *tl
		onHarness.Start = tl.Start.Add(-fr.clockOffset)
		r.Timeline = &onHarness
	}
	if r.Elapsed < o.Duration*9/10 {
		r.Invalid.Add(validity.StoppedEarly, "stopped early: ran %v of %v", r.Elapsed.Round(time.Millisecond), o.Duration)
	}
	return r
}
