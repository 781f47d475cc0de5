package local

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// faultRun is a fault scheduled into one window.
type faultRun struct {
	name   string
	action testbed.Action
	stop   chan struct{}
	done   chan struct{}
	fired  bool
	at     time.Time
	err    error
}

// fault schedules the spec's fault, if any, After into the window that
// starts now. An arm without the process (the baseline has no sidecars)
// runs without the fault.
func (t *Target) fault(ctx context.Context, s testbed.Spec, ar *arm) (*faultRun, error) {
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
	fr.name, fr.action = p.name, s.Fault.Action
	timer := time.NewTimer(s.Fault.After)
	go func() {
		defer close(fr.done)
		defer timer.Stop()
		select {
		case <-timer.C:
			fr.fired, fr.at = true, time.Now()
			fr.err = p.act(ctx, s.Fault.Action)
		case <-fr.stop:
		case <-ctx.Done():
		}
	}()
	return fr, nil
}

// act does a fault's action to p's current incarnation: a kill, or a
// graceful stop, SIGKILLed after stopGrace; the supervisor starts the
// next incarnation either way.
func (p *process) act(ctx context.Context, a testbed.Action) error {
	switch a {
	case testbed.Kill:
		return p.kill()
	case testbed.Restart:
		return p.restart(ctx, stopGrace)
	}
	return fmt.Errorf("%s: fault action %q is not implemented on the local target", p.name, a)
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

// judgeFault puts the fault's outcome on the run (testbed.JudgeFault),
// with the expected restart of the killed or restarted process taken out
// of the restarts that would invalidate it; its advice in w.
func judgeFault(run *testbed.Run, fr *faultRun, w testbed.Words) {
	if fr.name == "" {
		run.Fault = nil // this arm has no such process
		return
	}
	if fr.fired && fr.err == nil {
		var restarts []string
		for _, r := range run.Resources.Restarts {
			if strings.HasPrefix(r, fr.name+" (") {
				run.Warn(validity.FaultKilled, "%s was %s %v into the window: its CPU is not in this run's figures", fr.name, fr.action.Past(), fr.at.Sub(run.Load.Start).Round(time.Millisecond))
				continue
			}
			restarts = append(restarts, r)
		}
		run.Resources.Restarts = restarts
	}
	testbed.JudgeFault(run, testbed.FaultOutcome{Fired: fr.fired, At: fr.at, Err: fr.err}, w)
}
