package local

import (
	"context"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// procMeasurement is the local target's testbed.Measurement: the arm's
// processes and the machine read from /proc as the window opens and again
// as it closes. A process that exited or restarted is listed in the
// window's Restarts, which testbed.Judge turns into a reason.
type procMeasurement struct {
	procs []measure.Proc
	rec   *measure.ProcRecorder
	// rest are the pids of the target's other processes (the other arms',
	// paths'), idle in the window or settling after a start: not the
	// run's figures, but not foreign to it either. Their ticks are taken
	// around the window's, in one scan of /proc each time (a main job
	// runs a hundred of them by its last scenarios).
	rest      []int
	restTicks uint64
	restStart time.Time
}

// Start takes the first sample of every process and of the machine.
func (m *procMeasurement) Start(context.Context) error {
	m.restTicks, m.restStart = measure.TreeTicks(m.rest), time.Now()
	var err error
	m.rec, err = measure.StartProcs(m.procs)
	return err
}

// Stop takes the second sample and gives the window's usage.
func (m *procMeasurement) Stop(context.Context) (testbed.Measured, error) {
	w, err := m.rec.Stop()
	if err != nil {
		return testbed.Measured{}, err
	}
	after := measure.TreeTicks(m.rest)
	if after < m.restTicks { // one of them is gone: not judged
		return testbed.Measured{Window: w}, nil
	}
	rest := float64(after-m.restTicks) / measure.TicksPerSecond / time.Since(m.restStart).Seconds() * 1000
	return testbed.Measured{Window: w, Invalid: busyMachine(w, rest)}, nil
}

// BusyShare is the share of the machine that processes outside the run
// may use during a window before the run is invalid (busy-machine). On a
// quiet 2-core machine they used 0-3 % of it at maximum rate; beside
// another package's tests (go test ./... runs two at once) 25-38 %.
const BusyShare = 0.10

// busyMinWindow is the shortest window judged busy or not: /proc counts
// CPU in ticks of 10 ms per process, and on a quiet machine the first
// 300 ms window of an arm left 0.2-0.3 cores unaccounted (at 1 s, at most
// 0.15 just after the target started).
const busyMinWindow = time.Second

// busyMachine judges what the machine's busy time says beyond the run's
// own processes and the target's other ones (rest, in millicores):
// everything else the machine ran in the window, which a loopback run
// competes with for the same cores. A window in which one of the run's
// processes exited is not judged: its CPU is not in the usage.
func busyMachine(w measure.Window, rest float64) validity.Reasons {
	cores := w.Cores["local"]
	if cores == 0 || len(w.Restarts) > 0 || w.Elapsed < busyMinWindow {
		return nil
	}
	var ours float64
	for _, u := range w.Usage {
		ours += u.MilliCores
	}
	busy := w.NodeUtilisation["local"] / 100 * float64(cores) * 1000
	other := busy - ours - rest
	if other <= BusyShare*float64(cores)*1000 {
		return nil
	}
	var why validity.Reasons
	why.Add(validity.BusyMachine, "busy machine: processes outside the run used %.0fm of %d cores during the window (the run's own %.0fm), over %.0f %% of the machine, so the run measured them too; "+
		"stop them, or run one test package at a time (go test -p 1)", other, cores, ours, BusyShare*100)
	return why
}
