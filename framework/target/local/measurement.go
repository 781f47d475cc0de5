package local

import (
	"context"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/target"
)

// procMeasurement is the local target's target.Measurement: the arm's
// processes and the machine read from /proc as the window opens and again
// as it closes. A process that exited or restarted is listed in the
// window's Restarts, which target.Judge turns into a reason.
type procMeasurement struct {
	procs []measure.Proc
	rec   *measure.ProcRecorder
}

// Start takes the first sample of every process and of the machine.
func (m *procMeasurement) Start(context.Context) error {
	var err error
	m.rec, err = measure.StartProcs(m.procs)
	return err
}

// Stop takes the second sample and gives the window's usage.
func (m *procMeasurement) Stop(context.Context) (target.Measured, error) {
	w, err := m.rec.Stop()
	if err != nil {
		return target.Measured{}, err
	}
	return target.Measured{Window: w}, nil
}
