package suite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
)

// goKillGrace is how long after -timeout the go command kills a test
// binary (cmd/go: testKillTimeout), benchmarks included: the binary's own
// alarm stops before benchmarks run. A killed binary writes nothing and
// tears nothing down.
const goKillGrace = time.Minute

// deadlineReserve is the time kept, before that kill, for the report and
// the teardown after the last round.
const deadlineReserve = 30 * time.Second

// openJournal turns the journals that killed runs left in -results into
// partial results files (saying so), then starts this run's journal. A
// -results that cannot be created or written fails here, naming the flag,
// before anything is measured.
func (s *Suite) openJournal() error {
	for _, line := range report.Recover(s.Config.ResultsDir) {
		s.logf("%s", line)
	}
	j, err := report.CreateJournal(s.Config.ResultsDir, s.started, s.Config.Target, os.Args, s.Config)
	if err != nil {
		return fmt.Errorf("-results=%s: %w", s.Config.ResultsDir, err)
	}
	s.journal = j
	logPath := strings.TrimSuffix(j.Path, report.JournalExt) + ".log"
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("-results=%s: %w", s.Config.ResultsDir, err)
	}
	s.logFile, s.loadLog = f, load.RouteFortioLog(f)
	s.logf("journal: %s (each run is on disk as soon as it is measured); loadgen log: %s", j.Path, logPath)
	return nil
}

// drainLog prints one line for a run whose loadgen logged: its distinct
// messages, counted; the lines themselves are in the log file.
func (s *Suite) drainLog(name string) {
	if s.loadLog == nil {
		return
	}
	if sum := load.Summary(s.loadLog.Drain(), 3); sum != "" {
		s.logf("%s: %s (every line in %s)", name, sum, s.logFile.Name())
	}
}

// closeLog closes the loadgen log, deleting it when nothing was logged.
func (s *Suite) closeLog() {
	if s.logFile == nil {
		return
	}
	st, err := s.logFile.Stat()
	s.logFile.Close()
	if err == nil && st.Size() == 0 {
		os.Remove(s.logFile.Name())
	}
}

// keep adds a measured run to the run's records and appends it to the
// journal. A journal that cannot be written (a full disk) stops the
// measuring: every run before it is on disk.
func (s *Suite) keep(rec report.Record) {
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
	if err := s.journal.Record(rec); err != nil {
		s.abort(fmt.Errorf("the journal cannot be written, so nothing more is measured (%w)", err))
	}
}

// abort stops the measuring for cause (a full disk, the deadline): the
// rounds not yet started are skipped, and the run reports what it
// measured, marked partial with the cause.
func (s *Suite) abort(cause error) {
	s.mu.Lock()
	if s.partial == "" {
		s.partial = cause.Error()
	}
	s.mu.Unlock()
	s.logf("stopping: %v", cause)
	if s.cancel != nil {
		s.cancel(cause)
	}
}

// partialReason is why the run holds only part of its plan: what aborted
// it, or the signal that interrupted it; "" for a whole run.
func (s *Suite) partialReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial == "" && s.sigCtx != nil && s.sigCtx.Err() != nil {
		s.partial = fmt.Sprintf("interrupted (%v)", context.Cause(s.sigCtx))
	}
	return s.partial
}

// readDeadline sets the deadline, the moment the go command kills the
// binary: go test's -timeout, which it passes to the binary as
// -test.timeout (0: none), and its minute of grace.
func (s *Suite) readDeadline() {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return
	}
	if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
		s.deadline = s.started.Add(d + goKillGrace)
	}
}

// beforeRound stops the measuring when a round of the given length, then
// the report and the teardown, would not end before the deadline, and
// reports whether the round may start. A stopped run has a cause in its
// context.
func (s *Suite) beforeRound(round time.Duration) bool {
	if s.ctx.Err() != nil {
		return false
	}
	if !s.deadline.IsZero() {
		if left := time.Until(s.deadline); left < round+deadlineReserve {
			s.abort(fmt.Errorf("deadline: the go command kills this binary in %v (-timeout and its minute of grace), and a round takes about %v, with %v kept to report and tear down; pass a longer -timeout (or fewer scenarios, -count or -max-count) to measure it all",
				left.Round(time.Second), round.Round(time.Second), deadlineReserve))
			return false
		}
	}
	return true
}

// errPartial is the error of a run that stopped before the end of its
// plan: its results are real but incomplete.
var errPartial = errors.New("partial run")
