package suite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/verdict"
)

// Main is a benchmark package's whole TestMain: the lifecycle below, the
// same list benchmarks/main_test.go spells out (TestMainIsTheLifecycle
// holds the two to one another).
func (s *Suite) Main(m *testing.M) int {
	testenv := s.Environment()
	testenv.Setup(s.CheckFixtures, s.CreateCluster, s.LoadImages, s.SetUpTarget)
	// One Finish each: e2e-framework skips the rest of a Finish's funcs
	// after one fails, and Report fails whenever the verdict does.
	testenv.Finish(s.Report)
	testenv.Finish(s.ExportLogsOnFailure)
	testenv.Finish(s.TearDown)
	return s.Run(testenv, m)
}

// Environment reads the command line (e2e-framework's -kubeconfig,
// -context and -namespace beside meshbench's own flags), checks it, and
// returns the e2e-framework environment whose Setup and Finish take the
// env funcs below. Bad flags end the process with exit code 2 before
// anything is made. Ctrl-C from here on tears down what was made.
func (s *Suite) Environment() env.Environment {
	envCfg, err := envconf.NewFromFlags() // parses every flag, meshbench's included
	if err == nil {
		s.Config.Kubeconfig, s.Config.KubeContext = envCfg.KubeconfigFile(), envCfg.KubeContext()
		s.Config.Namespace = envCfg.Namespace()
		err = s.Config.checkZeros(setFlags())
	}
	if err == nil {
		err = s.Config.benchtimeWindow(setFlags())
	}
	if err == nil {
		err = s.Config.Normalize()
		s.Config.localWarmup(setFlags()) // once Normalize chose the target
	}
	if err == nil {
		s.defaultRepeats()
		err = s.Config.CheckMaxCount(s.reps())
		s.Config.defaultMaxCount(s.reps())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshbench: bad flags:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	s.sigCtx, s.started, s.stop, s.done = ctx, time.Now(), stop, make(chan struct{})
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	s.readDeadline()
	go s.onInterrupt(ctx)
	testenv, err := env.NewWithContext(ctx, envCfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshbench: environment:", err)
		os.Exit(2)
	}
	return testenv
}

// onInterrupt tears down and exits 130 on Ctrl-C; Run's return closes done
// first, so that its own cancellation is not mistaken for a signal.
func (s *Suite) onInterrupt(ctx context.Context) {
	select {
	case <-s.done:
	case <-ctx.Done():
		select {
		case <-s.done:
			return
		default:
		}
		s.logf("interrupted (%v): writing what was measured, then stopping every process", context.Cause(ctx))
		s.cancel(context.Cause(ctx))
		if err := s.summarizeOnce(); err != nil && !errors.Is(err, errPartial) {
			s.logf("%v", err)
		}
		if err := s.close(); err != nil {
			s.logf("teardown: %v", err)
		}
		os.Exit(130)
	}
}

// Run runs the tests and benchmarks in testenv and returns the exit code:
// a verdict that failed fails it, with one line per reason.
func (s *Suite) Run(testenv env.Environment, m *testing.M) int {
	defer s.stop()
	defer close(s.done)
	s.planRun(m)
	code := testenv.Run(m)
	// e2e-framework skips the funcs of a Finish after the first that
	// fails: a TestMain that lists Report and TearDown in one Finish would
	// leave the processes' directory, the namespaces, or a created cluster
	// behind whenever the verdict failed. Run tears down then, saying so.
	if !s.tearingDown() {
		s.logf("TearDown did not run (it is not in the environment's Finish, or a func before it in its Finish failed): tearing down now")
	}
	// The teardown's error fails the run: e2e-framework logs a Finish
	// func's error only at -v 2. After TearDown, close only returns it.
	if err := s.close(); err != nil {
		fmt.Fprintln(os.Stderr, "meshbench: teardown:", err)
		code = max(code, 1)
	}
	if s.verdict != nil {
		fmt.Fprintln(os.Stdout, "FAIL meshbench:", strings.ReplaceAll(s.verdict.Error(), "\n", "\nFAIL meshbench: "))
		if code == 0 {
			code = 1
		}
	}
	// An upgrade gate's three answers are three exit codes: 0 pass, 1 fail,
	// 3 inconclusive (add pairs: -count, or -max-count).
	if v := s.gateVerdict; v != nil && s.otherErr == nil && !s.failed && code <= 1 {
		code = v.ExitCode()
	}
	if v := s.gateVerdict; v != nil {
		why := ""
		if code != v.ExitCode() {
			why = ": the run itself failed (invalid runs or errors, above), whatever the gate decided"
		}
		fmt.Fprintf(os.Stdout, "meshbench: upgrade gate: %s (exit code %d%s)\n", strings.ToUpper(v.Outcome.String()), code, why)
	}
	// A stored reference that is not comparable decides nothing: 2, as for
	// a bad fixture, not 1 (a regression).
	if s.refusal != nil && code <= 1 {
		code = gate.ExitError
		fmt.Fprintf(os.Stdout, "meshbench: upgrade gate: no decision, the stored reference is not comparable (exit code %d)\n", code)
	}
	return code
}

// CheckFixtures decodes the threshold and gate fixtures and checks they
// are for this target, and reads the stored run of -reference and checks
// it is comparable with this run's settings, before anything is made or
// measured: a malformed fixture or results file, one written for another
// target, or a stored run with other settings stops the run naming the
// file (and line) and field.
func (s *Suite) CheckFixtures(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if err := s.loadGate(); err != nil {
		return ctx, err
	}
	if err := s.noteRefusal(s.loadReference()); err != nil {
		return ctx, err
	}
	if s.Config.ThresholdsNote != "" {
		s.logf("%s", s.Config.ThresholdsNote)
	}
	if s.Config.Thresholds != "none" {
		th, err := verdict.Load(s.Config.Thresholds)
		if err != nil {
			return ctx, err
		}
		if want := s.fixtureTarget(); th.Target != want {
			return ctx, fmt.Errorf("thresholds: %s:%d: target: the fixture is for %q, this run is %q; pass -thresholds with a fixture for %s, or -thresholds none",
				th.File, th.TargetLine, th.Target, want, want)
		}
		if err := th.CheckValues("", nil, s.ruleDomains()); err != nil {
			return ctx, fmt.Errorf("thresholds: %w", err)
		}
		s.thresholds = th
	}
	if !benchmarking() {
		return ctx, nil
	}
	return ctx, s.openJournal()
}

// fixtureTarget is what a fixture's target: must say for this run.
func (s *Suite) fixtureTarget() string {
	if s.Config.Target == "remote" {
		return s.Config.Mesh
	}
	return s.Config.Target
}

// CreateCluster creates or reuses the kind cluster of -kind-config
// (-target=kind), or reads the cluster of -kubeconfig (-target=remote).
// The local target has none.
func (s *Suite) CreateCluster(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if !benchmarking() {
		return ctx, nil
	}
	return ctx, s.createCluster(ctx)
}

// LoadImages loads the workload images from the local Docker into a kind
// cluster's nodes, for clusters that reach no registry.
func (s *Suite) LoadImages(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if !benchmarking() {
		return ctx, nil
	}
	return ctx, s.loadImages(ctx)
}

// SetUpTarget deploys the baseline and meshed arms, installing the mesh
// first when -mesh-install asks (on the local target: builds and starts
// the processes), on the cluster CreateCluster made, with the images
// LoadImages loaded: a Kubernetes target without them fails here, naming
// the env func that did not run. The benchmarks run on this target; none
// sets one up itself. Without -bench there is nothing to measure, and
// nothing is set up.
func (s *Suite) SetUpTarget(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if !benchmarking() {
		s.mu.Lock()
		s.setUpSkipped = true
		s.mu.Unlock()
		return ctx, nil
	}
	return ctx, s.setUpTarget(ctx)
}

// SetUp creates the cluster, loads the images and sets up the target, as
// CreateCluster, LoadImages and SetUpTarget do in that order, whether or
// not go test runs benchmarks: for a test that drives a Suite without
// TestMain (NewWithConfig, then testing.Benchmark). Checking fixtures is
// the test's (CheckFixtures, LoadGate); tearing down is Finish's.
func (s *Suite) SetUp(ctx context.Context) error {
	if err := s.createCluster(ctx); err != nil {
		return err
	}
	if err := s.loadImages(ctx); err != nil {
		return err
	}
	return s.setUpTarget(ctx)
}

// Report prints the summary, writes the results file and checks the
// thresholds; a failed verdict fails the run's exit code.
func (s *Suite) Report(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	s.verdict = s.summarize()
	return ctx, s.verdict
}

// ExportLogsOnFailure writes a kind cluster's logs next to the results
// when the run failed, before the cluster is deleted.
func (s *Suite) ExportLogsOnFailure(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if s.cl.kind == nil || (s.verdict == nil && !s.failed) {
		return ctx, nil
	}
	dir := filepath.Join(s.Config.ResultsDir, s.started.UTC().Format("20060102T150405Z")+"-logs")
	if err := s.cl.kind.ExportLogs(ctx, dir); err != nil {
		return ctx, fmt.Errorf("export the cluster's logs: %w", err)
	}
	s.logf("the cluster's logs: %s", dir)
	return ctx, nil
}

// TearDown deletes the run's namespaces, uninstalls a mesh this run
// installed, stops local processes, and deletes a kind cluster this run
// created (unless -keep-cluster).
func (s *Suite) TearDown(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	return ctx, s.close()
}

// benchmarking reports whether go test was asked to run benchmarks.
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}
