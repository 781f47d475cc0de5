package testbed

import (
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/validity"
)

// FaultOutcome is what a target made of a run's fault: whether it
// happened, when, and what kept it from happening.
type FaultOutcome struct {
	// Fired says the fault happened.
	Fired bool
	// At is when it happened, wall clock.
	At time.Time
	// Err is what kept the fault from happening; nil when nothing did.
	Err error
}

// JudgeFault puts a fault's outcome on run, which ran in expected-disruption
// mode: the recovery measured on the load's timeline
// (load.Timeline.Recovery), and the reasons a fault run cannot be trusted:
// a fault that failed or did not happen within the window, a load without
// a timeline, or no recovery within the window. A fault that failed no
// request is a warning. Every target judges its faults here; what the
// fault did to the target's own accounting (the restart of what it
// killed) is the target's. The advice names the settings in w.
func JudgeFault(run *Run, f FaultOutcome, w Words) {
	switch {
	case f.Err != nil:
		run.Invalidate(validity.FaultFailed, "fault failed: %v", f.Err)
		return
	case !f.Fired:
		run.Invalidate(validity.FaultFailed, "fault did not happen: %s is not within the %v window", run.Fault, run.Load.Options.Duration)
		return
	case run.Load.Timeline == nil:
		run.Invalidate(validity.FaultFailed, "fault run without a timeline")
		return
	}
	tl := run.Load.Timeline
	rec := tl.Recovery(f.At)
	run.Recovery = &rec
	if rec.Failed == 0 {
		run.Warn(validity.FaultNoFailures, "the fault failed no request")
	}
	frac, settled := rec.Settled()
	end := tl.Start.Add(time.Duration(len(tl.OK)) * tl.Bucket)
	switch {
	case rec.Recovered < 0 && settled && frac < load.SettleFloor:
		run.Invalidate(validity.FaultNotRecovered, "no recovery within the window (%v after the fault): the load settled at %.0f%% of the %.0f req/s before it, under the %.0f%% a slower machine could explain; lengthen %s",
			end.Sub(f.At).Round(time.Millisecond), frac*100, rec.PreRate, load.SettleFloor*100, w.Say(SettingDuration, ""))
	case rec.Recovered < 0:
		run.Invalidate(validity.FaultNotRecovered, "no recovery within the window (%v after the fault); lengthen %s",
			end.Sub(f.At).Round(time.Millisecond), w.Say(SettingDuration, ""))
	case settled:
		run.Warn(validity.FaultSettledLower, "the load settled at %.0f%% of the %.0f req/s before the fault (%.0f req/s over the window's last third), and recovery is judged against that: a machine that slowed down or a restarted proxy that is slower, which this run cannot tell apart",
			frac*100, rec.PreRate, rec.SettledRate)
	}
}
