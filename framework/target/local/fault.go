package local

import (
	"context"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/validity"
)

// faultRun is a fault scheduled into one window.
type faultRun struct {
	name  string
	stop  chan struct{}
	done  chan struct{}
	fired bool
	at    time.Time
	err   error
}

// fault schedules the spec's fault, if any, After into the window that
// starts now. An arm without the process (the baseline has no sidecars)
// runs without the fault.
func (t *Target) fault(ctx context.Context, s target.Spec, ar *arm) (*faultRun, error) {
	fr := &faultRun{stop: make(chan struct{}), done: make(chan struct{})}
	if s.Fault == nil {
		close(fr.done)
		return fr, nil
	}
	name := s.Fault.Workload
	if s.Fault.Sidecar {
		name += "/sidecar"
	}
	p, ok := ar.byName[name]
	if !ok {
		close(fr.done)
		return fr, nil
	}
	fr.name = p.name
	timer := time.NewTimer(s.Fault.After)
	go func() {
		defer close(fr.done)
		defer timer.Stop()
		select {
		case <-timer.C:
			fr.fired, fr.at = true, time.Now()
			fr.err = p.kill()
		case <-fr.stop:
		case <-ctx.Done():
		}
	}()
	return fr, nil
}

// wait ends the fault's schedule with the window and reports it.
func (fr *faultRun) wait() *faultRun {
	select {
	case <-fr.done:
	default:
		close(fr.stop)
		<-fr.done
	}
	return fr
}

// judgeFault puts the fault's outcome on the run (target.JudgeFault),
// with the expected restart of the killed process taken out of the
// restarts that would invalidate it.
func judgeFault(run *target.Run, fr *faultRun) {
	if fr.name == "" {
		run.Fault = nil // this arm has no such process
		return
	}
	if fr.fired && fr.err == nil {
		var restarts []string
		for _, r := range run.Resources.Restarts {
			if strings.HasPrefix(r, fr.name+" (") {
				run.Warn(validity.FaultKilled, "%s was killed %v into the window: its CPU is not in this run's figures", fr.name, fr.at.Sub(run.Load.Start).Round(time.Millisecond))
				continue
			}
			restarts = append(restarts, r)
		}
		run.Resources.Restarts = restarts
	}
	target.JudgeFault(run, target.FaultOutcome{Fired: fr.fired, At: fr.at, Err: fr.err})
}
