package local

import (
	"context"
	"slices"
	"strings"
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
	rest  []int
	ticks bool              // the kernel gives CPU time in ticks (measure.ReadsTicks)
	start time.Time         // when scan was taken
	scan  measure.ProcTable // every process as the window opened
}

// Start takes the first sample of every process and of the machine.
func (m *procMeasurement) Start(context.Context) error {
	m.scan, m.start = measure.ScanProcs(), time.Now()
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
	scan := measure.ScanProcs()
	secs := time.Since(m.start).Seconds()
	before, after := m.scan.TreeTicks(m.rest), scan.TreeTicks(m.rest)
	if after < before { // one of them is gone: not judged
		return testbed.Measured{Window: w, CPUInvalid: m.coarse(w)}, nil
	}
	rest := float64(after-before) / measure.TicksPerSecond / secs * 1000
	busiest := func() []string {
		ours := slices.Clone(m.rest) // not into m.rest's array
		for _, p := range m.procs {
			ours = append(ours, p.PID)
		}
		return scan.Busiest(m.scan, ours, secs, 3)
	}
	return testbed.Measured{Window: w, Invalid: busyMachine(w, rest, busiest), CPUInvalid: m.coarse(w)}, nil
}

// coarse are the reasons not to trust w's CPU figures when this kernel
// gives them in ticks (testbed.CoarseTicks); none in ns.
func (m *procMeasurement) coarse(w measure.Window) validity.Reasons {
	if !m.ticks {
		return nil
	}
	return testbed.CoarseTicks(w)
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
// competes with for the same cores. The time the hypervisor stole is
// not counted: no process here used it, and it slows both arms alike (a
// noisy host, which the interleaved arms and the gate's pairs are for).
// A window in which one of the run's processes exited is not judged: its
// CPU is not in the usage. busiest names the processes outside the run
// that used the most, for the reason.
func busyMachine(w measure.Window, rest float64, busiest func() []string) validity.Reasons {
	cores := w.Cores["local"]
	if cores == 0 || len(w.Restarts) > 0 || w.Elapsed < busyMinWindow {
		return nil
	}
	var ours float64
	for _, u := range w.Usage {
		ours += u.MilliCores
	}
	busy := (w.NodeUtilisation["local"] - w.NodeSteal["local"]) / 100 * float64(cores) * 1000
	other := busy - ours - rest
	if other <= BusyShare*float64(cores)*1000 {
		return nil
	}
	var why validity.Reasons
	top := "none left running"
	if names := busiest(); len(names) > 0 {
		top = strings.Join(names, ", ")
	}
	why.Add(validity.BusyMachine, "busy machine: processes outside the run used %.0fm of %d cores during the window (the run's own %.0fm), over %.0f %% of the machine, so the run measured them too (busiest: %s); "+
		"stop them, or run one test package at a time (go test -p 1)", other, cores, ours, BusyShare*100, top)
	return why
}
