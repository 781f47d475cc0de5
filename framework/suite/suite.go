// Package suite connects `go test -bench` to meshbench's flow: it stands up
// the target once, sweeps concurrency with b.Run sub-benchmarks named for
// benchstat (BenchmarkOneHop/c=32/arm=meshed), interleaves the arms, reports
// each run's metrics, and at the end prints the comparison table, writes the
// results file and checks the threshold fixture, in that order.
//
// A benchmark package declares its lifecycle as e2e-framework env funcs,
// as benchmarks/main_test.go does:
//
//	var mb = suite.New()
//
//	func TestMain(m *testing.M) {
//		testenv := mb.Environment()
//		testenv.Setup(mb.CheckFixtures, mb.CreateCluster, mb.LoadImages, mb.SetUpTarget)
//		testenv.Finish(mb.Report)
//		testenv.Finish(mb.ExportLogsOnFailure)
//		testenv.Finish(mb.TearDown)
//		os.Exit(mb.Run(testenv, m))
//	}
//
//	func BenchmarkOneHop(b *testing.B) { mb.Sweep(b, suite.Scenario{}) }
//
// Suite.Main is that same list, for a package with no step of its own.
package suite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/local"
	"github.com/meshbench/meshbench/framework/verdict"
)

// NewTarget builds the target for a config; tests may replace it.
type NewTarget func(ctx context.Context, c *Config, logf func(string, ...any)) (testbed.Target, error)

// Suite is one benchmark binary's run.
type Suite struct {
	// Config is the run's settings, from the flags.
	Config *Config
	// Name stands in for the benchmark's name under testing.Benchmark,
	// whose benchmarks have none, when the scenario has no Name either.
	Name string
	// NewTarget defaults to the target named by Config.Target.
	NewTarget NewTarget
	// Log receives progress lines; default os.Stderr, so that stdout stays
	// clean for benchstat.
	Log io.Writer

	// ctx ends on a signal (sigCtx) or when the run stops measuring
	// early (cancel: a full disk, the deadline); partial says why.
	ctx      context.Context
	sigCtx   context.Context
	cancel   context.CancelCauseFunc
	partial  string
	started  time.Time
	deadline time.Time // from go test's -timeout; zero for none
	// plan is when measuring must be done, and what fitting to it changed.
	plan runPlan
	// journal holds every run on disk as soon as it is measured; loadLog
	// tallies the loadgen's log lines, written whole to logFile.
	journal *report.Journal
	loadLog *load.LogTally
	logFile *os.File
	// thresholds is -thresholds, read once before anything is measured.
	thresholds *verdict.Thresholds
	sumOnce    sync.Once
	sumErr     error

	// tg is the target SetUpTarget built, or tgErr why it could not.
	tg    testbed.Target
	tgErr error
	mu    sync.Mutex
	recs  []report.Record
	calls map[string]int // leaf sub-benchmark → run1 calls so far (one per -count)

	cl   clusterState
	gate *gate.Gate
	// gateFamily is, by benchmark, how many decisions the gate can make on
	// its points (gate.Sequential.Decisions), set before its first run.
	gateFamily map[string]int
	// gatePlan is every point the gate planned to decide on, behind mu
	// (report.Results.GatePlan).
	gatePlan []map[string]string
	// ref is the stored run of -reference; refusal why it is no
	// reference for this run (exit code gate.ExitError).
	ref     *storedRef
	refusal error
	// gateVerdict is the upgrade gate's decision, when there is one;
	// otherErr what else failed the verdict.
	gateVerdict *gate.Verdict
	// why is where the CPU went at the points where the gate failed on
	// sidecar CPU (explainCPU), behind mu.
	why      cpuprofile.Report
	otherErr error
	// verdict is report's outcome, carried out of e2e-framework's Finish
	// (which only logs errors) into the exit code; failed is set when a
	// sweep failed, for the log export; fatal when one stopped on a fatal
	// error (not only an invalid run).
	verdict error
	failed  bool
	fatal   bool
	stop    func()
	done    chan struct{}

	closeOnce sync.Once
	// cpuNoted is done once a run whose CPU figures are not valid has
	// said so (noteCPU).
	cpuNoted sync.Once
	// settingUp is made when the target's set-up starts, and closed when
	// it has returned, having deleted what it created when it failed (or
	// was interrupted); nil until SetUpTarget (or SetUp) runs.
	settingUp chan struct{}
	// setUpSkipped is set when SetUpTarget ran without -bench, and set
	// nothing up.
	setUpSkipped bool
	// tornDown is set when the teardown has started (close).
	tornDown bool
	closeErr error
}

// New registers meshbench's flags on flag.CommandLine and returns the suite.
func New() *Suite { return NewWithConfig(RegisterFlags(flag.CommandLine)) }

// NewWithConfig returns a suite for c, which the caller has normalized.
func NewWithConfig(c *Config) *Suite {
	return &Suite{Config: c, Log: os.Stderr, calls: map[string]int{}}
}

// progressPrefix starts every line meshbench prints besides benchmark
// results. go test merges stderr into stdout, and benchstat reads any
// "key: value" line as configuration that splits its tables; a line that
// starts with '#' is neither a result nor configuration.
const progressPrefix = "# meshbench: "

func (s *Suite) logf(format string, args ...any) {
	fmt.Fprintf(s.Log, progressPrefix+format+"\n", args...)
}

// GateRepeats is the default -count of a gate against a stored reference
// (-reference): its decisions rest on a fixed number of repeats, and 6 is
// what benchstat asks for before it gives an interval. A gate with a
// candidate in the run starts from gate.MinPairsToDecide rounds
// (Config.DefaultRepeats, 3) and adds rounds while it is undecided, up to
// -max-count (gate.DefaultLocalMaxPairs locally, gate.DefaultMaxPairs on a
// cluster).
const GateRepeats = 6

// defaultRepeats sets -count to Config.DefaultRepeats (GateRepeats for a
// gate run) unless the user set it (one run per arm proves nothing), and
// -benchtime to 1x unless set: the load, not b.N, decides how long a run
// takes.
func (s *Suite) defaultRepeats() {
	set := setFlags()
	s.Config.ConcurrencySet = s.Config.ConcurrencySet || set["concurrency"]
	if n := s.Config.defaultCount(set); n > 0 {
		_ = flag.Set("test.count", fmt.Sprint(n))
	}
	if !set["test.benchtime"] || !strings.HasSuffix(flagValue("test.benchtime"), "x") {
		_ = flag.Set("test.benchtime", "1x") // a -benchtime duration is the window (benchtimeWindow)
	}
}

// DefaultCount is the rounds every point gets when go test's -count is
// not given: GateRepeats against a stored reference or to store one, else
// DefaultRepeats.
func (c *Config) DefaultCount() int { return max(1, c.defaultCount(nil)) }

// defaultCount is the -count to set, given the flags the user set: 0 when
// they set -count, or when one run would do.
func (c *Config) defaultCount(set map[string]bool) int {
	n := c.DefaultRepeats
	if c.Reference != "" || c.StoreReference {
		n = max(n, GateRepeats)
	}
	if set["test.count"] || n <= 1 {
		return 0
	}
	return n
}

// repeats is -count: how many interleaved pairs each concurrency gets.
func repeats() int {
	if f := flag.Lookup("test.count"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// errNoSetUp is a benchmark's error on a suite whose target was never
// set up: SetUpTarget is not in the environment's Setup, or a test drives
// the suite without TestMain and did not call SetUp.
var errNoSetUp = errors.New("no target: SetUpTarget did not run; list CheckFixtures, CreateCluster, LoadImages and SetUpTarget " +
	"in the environment's Setup, in that order, as benchmarks/main_test.go does (a test that drives a Suite without TestMain calls Suite.SetUp first)")

// errSetUpSkipped is a benchmark's error when SetUpTarget ran in a binary
// that go test started without -bench: testing.Benchmark called from a
// test, on the package's suite.
var errSetUpSkipped = errors.New("no target: go test ran without -bench, so SetUpTarget set nothing up; " +
	"a test that runs benchmarks itself (testing.Benchmark) drives a Suite of its own (NewWithConfig) and calls its SetUp first")

// target is the target SetUpTarget (or SetUp) built, or why there is
// none. A benchmark never sets one up itself.
func (s *Suite) target() (testbed.Target, error) {
	s.mu.Lock()
	setup, skipped := s.settingUp, s.setUpSkipped
	s.mu.Unlock()
	switch {
	case setup == nil && skipped:
		return nil, errSetUpSkipped
	case setup == nil:
		return nil, errNoSetUp
	}
	<-setup // closed once the set-up returned
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tg, s.tgErr
}

// setUpTarget builds the target (on a cluster, on the cluster
// CreateCluster made, with the images LoadImages loaded), and checks it
// against a stored reference. A second call builds nothing and returns
// the first's outcome.
func (s *Suite) setUpTarget(ctx context.Context) error {
	s.mu.Lock()
	if s.settingUp != nil {
		s.mu.Unlock()
		_, err := s.target()
		return err
	}
	done := make(chan struct{})
	s.settingUp = done
	if s.ctx == nil { // a Suite driven without Environment
		s.ctx, s.cancel = context.WithCancelCause(ctx)
		s.started = time.Now()
	}
	s.mu.Unlock()
	mk := s.NewTarget
	if mk == nil {
		mk = s.defaultTarget
	}
	start := time.Now()
	s.logf("setting up the %s target", s.Config.Target)
	tg, err := mk(s.ctx, s.Config, s.logf)
	if err == nil {
		// Cores and nodes, before anything is measured.
		err = s.noteRefusal(s.checkReferenceEnv(tg.Environment()))
	}
	s.mu.Lock()
	s.tg, s.tgErr = tg, err
	s.mu.Unlock()
	close(done)
	if err != nil {
		return err
	}
	env := tg.Environment()
	// A journal recovered after a kill says what was measured on.
	if jerr := s.journal.Environment(env); jerr != nil {
		s.abort(fmt.Errorf("the journal cannot be written, so nothing is measured (%w)", jerr))
	}
	s.logf("target %s ready in %v: %s %s, %d cores, %s", tg.Name(), time.Since(start).Round(time.Millisecond),
		env.Mesh.Name, env.Mesh.Version, env.Cores, env.CPUModel)
	if env.Baseline != "" {
		s.logf("the baseline arm runs on %s", env.Baseline)
	}
	if why := s.otherCPU(env.CPUModel); why != "" {
		s.logf("thresholds: %s", why)
	}
	return nil
}

func (s *Suite) defaultTarget(ctx context.Context, c *Config, logf func(string, ...any)) (testbed.Target, error) {
	if c.Target != "local" {
		return s.kubeTarget(ctx, c, logf)
	}
	tg, err := local.New(ctx, local.Options{
		Sidecar:            c.SidecarSpec,
		Candidate:          c.CandidateSpec,
		SidecarThreads:     c.SidecarThreads,
		Protocol:           c.Protocol,
		ResponseSize:       c.ResponseSize,
		Logf:               logf,
		Words:              flagWords,
		MeshedBackendDelay: c.MeshedBackendDelay,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return tg, nil
}

// repeatIndex is which -count iteration a leaf call reports: its i-th call
// with b.N == 1 is iteration i; a call with a larger b.N (only a user's
// -benchtime causes one) repeats the previous iteration.
func (s *Suite) repeatIndex(b *testing.B) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls[b.Name()]
	if b.N == 1 {
		s.calls[b.Name()]++
	} else if i > 0 {
		i--
	}
	return i
}

// reportMetrics reports one run with benchstat-friendly units: every
// metric of the table (package metric) that has a benchstat unit, then
// the figures only the benchmark line has (max, the uncorrected
// percentiles, errors, CPU per role and in all) and a flow's steps.
func reportMetrics(b *testing.B, r *testbed.Run) {
	b.ReportMetric(0, "ns/op")
	// A run whose CPU figures are not valid reports none (noteCPU says so
	// once): its memory, latency and throughput stand.
	cpu := r.CPUValid()
	for _, d := range metric.All() {
		if d.Benchstat == "" || (d.CPU && !cpu) {
			continue
		}
		if v, ok := d.Read(r); ok {
			b.ReportMetric(v, d.Benchstat)
		}
	}
	l := r.Load
	b.ReportMetric(l.Max()*1e3, "max-ms")
	if l.LatencySource() == load.FromCorrected {
		// The percentiles are corrected for coordinated omission; these
		// are the requests as sent.
		b.ReportMetric(l.UncorrectedPercentile(50)*1e3, "p50-uncorrected-ms")
		b.ReportMetric(l.UncorrectedPercentile(99)*1e3, "p99-uncorrected-ms")
	}
	b.ReportMetric(float64(l.Errors), "errors")
	var total float64
	for _, t := range r.Resources.ByRole() {
		if cpu {
			b.ReportMetric(t.MilliCores, string(t.Role)+"-mcpu")
		}
		total += t.MilliCores
	}
	if cpu && l.Requests > 0 {
		b.ReportMetric(r.CPUPer1k(total), "cpu-ms/kreq")
	}
	if len(l.Steps) > 0 {
		reportSteps(b, l)
	}
}

// reportSteps reports a flow as Locust's table reads it: the average
// response time over every request (the sum of latencies over their
// count, exact), then per step its requests, failures, mean, p50, p95,
// p99 and rate, in units named for the step (home-p95-ms).
func reportSteps(b *testing.B, l *load.Result) {
	b.ReportMetric(l.Latency.Avg*1e3, "mean-ms")
	b.ReportMetric(l.Percentile(95)*1e3, "p95-ms")
	for _, st := range l.Steps {
		b.ReportMetric(float64(st.Requests), st.Step+"-requests")
		b.ReportMetric(float64(st.Errors), st.Step+"-failures")
		b.ReportMetric(st.Latency.Avg*1e3, st.Step+"-mean-ms")
		for _, q := range []float64{50, 95, 99} {
			b.ReportMetric(st.Percentile(q)*1e3, fmt.Sprintf("%s-p%g-ms", st.Step, q))
		}
		b.ReportMetric(st.AchievedQPS, st.Step+"-req/s")
	}
}

// Records returns a copy of every run so far.
func (s *Suite) Records() []report.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]report.Record(nil), s.recs...)
}

// Finish summarizes and tears the target down, for tests that drive a
// Suite without Main. The error holds one line per breach.
func (s *Suite) Finish() error {
	err := s.summarizeOnce()
	return errors.Join(err, s.close())
}

// summarizeOnce summarizes once, whoever asks first: the Report step, or
// the signal handler writing what an interrupted run measured.
func (s *Suite) summarizeOnce() error {
	s.sumOnce.Do(func() { s.sumErr = s.summarize() })
	return s.sumErr
}

// summarize compares the arms, writes the results file, prints the
// table, then checks the thresholds. The error holds one line per breach.
func (s *Suite) summarize() error {
	recs := s.Records()
	if len(recs) == 0 {
		return errors.Join(s.journal.Remove(), s.partialErr())
	}
	cs := report.Compare(recs)
	res := &report.Results{
		Schema: report.Schema, Started: s.started, Finished: time.Now(), Command: os.Args,
		Settings: s.Config, Records: recs, Comparisons: cs, Proofs: report.Proofs(recs),
		Partial: s.partialReason(), Plan: s.planNotes(),
	}
	if s.tg != nil {
		res.Environment = s.tg.Environment()
	}
	verr := s.checkThresholds(cs, res)
	ierr := invalidRuns(cs)
	res.GatePlan, res.Failed = s.plannedAndFailed(verr)
	if ierr != nil {
		res.Invalid = strings.ReplaceAll(ierr.Error(), "\n", "; ")
	}
	gerr := s.judge(os.Stdout, res)
	path, werr := report.Write(s.Config.ResultsDir, res)
	fmt.Fprintln(os.Stdout)
	fmt.Fprintf(os.Stdout, progressPrefix+"summary: %s, %s %s, %d runs (medians over repeats; intervals in parentheses)\n",
		res.Environment.Target, res.Environment.Mesh.Name, res.Environment.Mesh.Version, len(recs))
	report.PrintSummary(os.Stdout, cs)
	report.PrintExtraHops(os.Stdout, progressPrefix, report.ExtraHops(cs))
	report.PrintProofs(os.Stdout, progressPrefix, res.Proofs)
	fmt.Fprintln(os.Stdout, progressPrefix+report.FormatShares(report.MeasuredShares(recs, s.started, res.Finished, s.Config.Warmup)))
	fmt.Fprintln(os.Stdout, progressPrefix+report.MeasuredGaps(recs, s.started, res.Finished).String())
	werr = s.settleJournal(werr)
	if werr == nil {
		fmt.Fprintf(os.Stdout, progressPrefix+"results: %s\n", path)
		var reports []string
		reports, werr = report.WriteBeside(path, res, s.Config.Prices)
		for _, p := range reports {
			fmt.Fprintf(os.Stdout, progressPrefix+"report: %s\n", p)
		}
	}
	s.printThresholds(res, verr, ierr)
	perr := s.partialErr()
	s.otherErr = errors.Join(werr, verr, ierr, perr)
	return errors.Join(werr, verr, ierr, gerr, perr)
}

// plannedAndFailed are the gate's planned points, and why the run itself
// failed apart from the gate ("" when it did not): a benchmark that
// stopped on a fatal error (fatalf), or broken thresholds (verr). Both go
// into the results, for `meshbench gate`. Invalid runs do not fail it:
// the gate leaves their rounds out (Results.Invalid names them).
func (s *Suite) plannedAndFailed(verr error) ([]map[string]string, string) {
	s.mu.Lock()
	plan, fatal := slices.Clone(s.gatePlan), s.fatal
	s.mu.Unlock()
	var why []string
	if fatal {
		why = append(why, "a benchmark stopped on a fatal error (its FAIL line is in the log)")
	}
	if verr != nil {
		why = append(why, strings.ReplaceAll(verr.Error(), "\n", "; "))
	}
	return plan, strings.Join(why, "; ")
}

// invalidRuns is the error of a run set whose comparisons include invalid
// runs, naming them: limits that held on invalid runs prove nothing, and
// the run fails.
func invalidRuns(cs []report.Comparison) error {
	var invalid []string
	for _, c := range cs {
		if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
			invalid = append(invalid, fmt.Sprintf("%s (%d)", c.Scenario(), n))
		}
	}
	if len(invalid) == 0 {
		return nil
	}
	return fmt.Errorf("not a valid result: invalid runs in %s; their reasons are in the results file and above", strings.Join(invalid, ", "))
}

// printThresholds says how the thresholds went, unless they were broken
// (verr: its reasons end the run): off, held on invalid runs (ierr),
// undecided at some points, or held everywhere.
func (s *Suite) printThresholds(res *report.Results, verr, ierr error) {
	switch {
	case s.Config.Thresholds == "none":
		fmt.Fprintln(os.Stdout, progressPrefix+"thresholds: off (-thresholds=none)")
	case verr == nil && ierr != nil:
		fmt.Fprintf(os.Stdout, progressPrefix+"thresholds: %s: the limits held, on figures that include invalid runs\n", s.Config.Thresholds)
	case verr == nil && len(res.Undecided) > 0:
		for _, u := range res.Undecided {
			fmt.Fprintln(os.Stdout, progressPrefix+u)
		}
		fmt.Fprintf(os.Stdout, progressPrefix+"thresholds: %s: no limit was broken, but %d of %d comparisons are undecided (listed above): their intervals hold the limit, or, not judged, their figures were not valid; run more repeats (-count) to decide them\n",
			s.Config.Thresholds, len(res.Undecided), res.ThresholdsChecked)
	case verr == nil:
		fmt.Fprintf(os.Stdout, progressPrefix+"thresholds: %s: every limit held, on the whole interval of each of %d comparisons\n", s.Config.Thresholds, res.ThresholdsChecked)
	}
	if why := s.otherCPU(res.Environment.CPUModel); why != "" {
		fmt.Fprintln(os.Stdout, progressPrefix+"thresholds: "+why)
	}
}

// otherCPU says why -thresholds may not catch a doubling on this run's
// CPU, cpu: it was calibrated on others (verdict.Thresholds.OtherCPU).
func (s *Suite) otherCPU(cpu string) string {
	if s.thresholds == nil {
		return ""
	}
	return s.thresholds.OtherCPU(cpu)
}

// settleJournal removes the journal once the results file holds it all,
// and otherwise says where the measured runs are.
func (s *Suite) settleJournal(werr error) error {
	if s.journal == nil {
		return werr
	}
	if werr != nil {
		return fmt.Errorf("%w; every run measured is in the journal %s (go tool meshbench report %s)", werr, s.journal.Path, s.journal.Path)
	}
	return s.journal.Remove()
}

// partialErr fails a run that stopped before the end of its plan.
func (s *Suite) partialErr() error {
	if why := s.partialReason(); why != "" {
		return fmt.Errorf("%w: %s; the results file holds what was measured, marked partial", errPartial, why)
	}
	return nil
}

// checkThresholds checks the comparisons against -thresholds, on their
// intervals, and records the breaches and the undecided comparisons in
// res. The error holds one line per breach and per uncovered scenario.
func (s *Suite) checkThresholds(cs []report.Comparison, res *report.Results) error {
	if s.Config.Thresholds == "none" {
		return nil
	}
	res.Thresholds = s.Config.Thresholds
	th := s.thresholds
	if th == nil { // a Suite driven without CheckFixtures
		var err error
		if th, err = verdict.Load(s.Config.Thresholds); err != nil {
			return fmt.Errorf("thresholds: %w", err)
		}
	}
	obs := make([]verdict.Observation, len(cs))
	for i, c := range cs {
		obs[i] = c.Observation()
	}
	v := th.Check(obs)
	res.ThresholdsChecked = v.Checked
	for _, b := range v.Breaches {
		res.Breaches = append(res.Breaches, b.Error())
	}
	for _, u := range v.Undecided {
		res.Undecided = append(res.Undecided, u.Error())
	}
	return v.Err()
}

// tearingDown reports whether the teardown (close) has started.
func (s *Suite) tearingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tornDown
}

// close tears the target down once. A second caller (Finish racing the
// Ctrl-C handler) waits for the first teardown to end, so the process never
// exits while a cluster is half deleted.
func (s *Suite) close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		setup := s.settingUp
		s.tornDown = true
		s.mu.Unlock()
		if setup != nil {
			// Interrupted while the target was being set up: the set-up sees
			// its context end and deletes what it made (namespaces, the
			// mesh it installed, the kind cluster); exiting first would
			// leave them behind.
			select {
			case <-setup:
			default:
				s.logf("waiting for the target's set-up to stop and delete what it created")
				<-setup
			}
		}
		s.mu.Lock()
		tg := s.tg
		s.mu.Unlock()
		start := time.Now()
		if tg != nil {
			s.closeErr = tg.Close(context.Background())
			s.logf("target %s torn down in %v", tg.Name(), time.Since(start).Round(time.Millisecond))
		}
		s.closeErr = errors.Join(s.closeErr, s.deleteCluster(context.Background()))
		s.closeLog()
	})
	return s.closeErr
}
