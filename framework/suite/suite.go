// Package suite connects `go test -bench` to meshbench's flow: it stands up
// the target once, sweeps concurrency with b.Run sub-benchmarks named for
// benchstat (BenchmarkOneHop/c=32/arm=meshed), interleaves the arms, reports
// each run's metrics, and at the end prints the comparison table, writes the
// results file and checks the threshold fixture, in that order.
//
// A benchmark package needs only:
//
//	var mb = suite.New()
//
//	func TestMain(m *testing.M) { os.Exit(mb.Main(m)) }
//
//	func BenchmarkOneHop(b *testing.B) { mb.Sweep(b, suite.Scenario{Path: target.OneHop}) }
package suite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/target/local"
	"github.com/meshbench/meshbench/framework/verdict"
)

// Scenario is one benchmark's variation on the default sweep.
type Scenario struct {
	// Name names the scenario in results when the benchmark has no name of
	// its own (testing.Benchmark); go test's benchmark name wins otherwise.
	Name string
	// Path is the route measured.
	Path target.Path
	// Load, when set, adjusts each run's load settings (after the flags).
	Load func(*load.Options)
}

// NewTarget builds the target for a config; tests may replace it.
type NewTarget func(ctx context.Context, c *Config, logf func(string, ...any)) (target.Target, error)

// Suite is one benchmark binary's run.
type Suite struct {
	Config *Config
	// NewTarget defaults to the target named by Config.Target.
	NewTarget NewTarget
	// Log receives progress lines; default os.Stderr, so that stdout stays
	// clean for benchstat.
	Log io.Writer

	ctx     context.Context
	started time.Time

	once  sync.Once
	tg    target.Target
	tgErr error
	mu    sync.Mutex
	recs  []report.Record
	calls map[string]int // leaf sub-benchmark → run1 calls so far (one per -count)

	closeOnce sync.Once
	// settingUp is closed when the target's set-up has returned, having
	// deleted what it created when it failed (or was interrupted).
	settingUp chan struct{}
	closeErr  error
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

// Main is the benchmark package's TestMain. It builds an e2e-framework
// environment from the command line (so -kubeconfig, -context and
// -namespace work beside meshbench's own flags), runs the tests and
// benchmarks, and finishes: it prints the summary, writes results, checks
// thresholds and tears the target down, in that order. Ctrl-C tears the
// target down too. It returns the exit code.
func (s *Suite) Main(m *testing.M) int {
	envCfg, err := envconf.NewFromFlags() // parses every flag, meshbench's included
	if err == nil {
		s.Config.Kubeconfig, s.Config.KubeContext = envCfg.KubeconfigFile(), envCfg.KubeContext()
		s.Config.Namespace = envCfg.Namespace()
		err = s.Config.Normalize()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshbench: bad flags:", err)
		return 2
	}
	s.defaultRepeats()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s.ctx, s.started = ctx, time.Now()
	// finished closes before the deferred stop cancels ctx (defers run
	// last-in first-out), so the watcher can tell a return from a signal.
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
		case <-ctx.Done():
			select {
			case <-finished: // Main returned: its deferred stop cancelled ctx
				return
			default:
			}
			s.logf("interrupted (%v): stopping every process and exiting", context.Cause(ctx))
			if err := s.close(); err != nil {
				s.logf("teardown: %v", err)
			}
			os.Exit(130)
		}
	}()
	testenv, err := env.NewWithContext(ctx, envCfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshbench: environment:", err)
		return 2
	}
	// e2e-framework only logs a Finish error, so the verdict is carried out
	// of the Finish step and turned into the exit code here.
	var verdict error
	testenv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		verdict = s.Finish()
		return ctx, nil
	})
	code := testenv.Run(m)
	if verdict != nil {
		fmt.Fprintln(os.Stdout, "FAIL meshbench:", strings.ReplaceAll(verdict.Error(), "\n", "\nFAIL meshbench: "))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// defaultRepeats sets -count to Config.DefaultRepeats unless the user set
// it (one run per arm proves nothing), and -benchtime to 1x unless set: the
// load, not b.N, decides how long a run takes.
func (s *Suite) defaultRepeats() {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["test.count"] && s.Config.DefaultRepeats > 1 {
		_ = flag.Set("test.count", fmt.Sprint(s.Config.DefaultRepeats))
	}
	if !set["test.benchtime"] {
		_ = flag.Set("test.benchtime", "1x")
	}
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

// target starts the target on first use.
func (s *Suite) target() (target.Target, error) {
	s.once.Do(func() {
		mk := s.NewTarget
		if mk == nil {
			mk = defaultTarget
		}
		if s.ctx == nil {
			s.ctx, s.started = context.Background(), time.Now()
		}
		start := time.Now()
		s.logf("setting up the %s target", s.Config.Target)
		done := make(chan struct{})
		s.mu.Lock()
		s.settingUp = done
		s.mu.Unlock()
		tg, err := mk(s.ctx, s.Config, s.logf)
		s.mu.Lock()
		s.tg, s.tgErr = tg, err
		s.mu.Unlock()
		close(done)
		if err == nil {
			env := tg.Environment()
			s.logf("target %s ready in %v: %s %s, %d cores, %s", tg.Name(), time.Since(start).Round(time.Millisecond),
				env.Mesh.Name, env.Mesh.Version, env.Cores, env.CPUModel)
		}
	})
	return s.tg, s.tgErr
}

func defaultTarget(ctx context.Context, c *Config, logf func(string, ...any)) (target.Target, error) {
	if c.Target != "local" {
		return kubeTarget(ctx, c, logf)
	}
	tg, err := local.New(ctx, local.Options{
		Sidecar:            c.Sidecar,
		SidecarThreads:     c.SidecarThreads,
		Protocol:           c.Protocol,
		ResponseSize:       c.ResponseSize,
		Logf:               logf,
		MeshedBackendDelay: c.MeshedBackendDelay,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return tg, nil
}

// Sweep runs sc at every concurrency of the config. At each concurrency it
// runs -count interleaved pairs, baseline then meshed (A B A B …), so that
// drift of the machine hits both arms alike; then the sub-benchmarks
// c=N/arm=baseline and c=N/arm=meshed report one pair member per -count
// iteration, which is what benchstat expects to see.
func (s *Suite) Sweep(b *testing.B, sc Scenario) {
	tg, err := s.target()
	if err != nil {
		b.Fatalf("target %s: %v", s.Config.Target, err)
	}
	reps := s.Config.Repeats
	if reps <= 0 {
		reps = repeats()
	}
	per := s.Config.Warmup + s.Config.Duration + 300*time.Millisecond
	total := len(s.Config.Concurrency) * len(target.Arms) * reps
	s.logf("%s: %s, c=%v, %d interleaved pairs each: %d runs, about %v",
		label(b, sc), sc.Path, s.Config.Concurrency, reps, total, (time.Duration(total) * per).Round(time.Second))
	done := 0
	for _, c := range s.Config.Concurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			if err := s.ctx.Err(); err != nil {
				b.Fatalf("not started: %v", context.Cause(s.ctx))
			}
			runs := map[target.Arm][]*target.Run{}
			for rep := range reps {
				for _, arm := range target.Arms {
					done++
					s.logf("%s/arm=%s repeat %d/%d [%d/%d, about %v left]", label(b, sc), arm, rep+1, reps, done, total,
						(time.Duration(total-done+1) * per).Round(time.Second))
					run, err := s.measure(b, tg, sc, c, arm, rep)
					if err != nil {
						b.Fatalf("%s/arm=%s: %v", label(b, sc), arm, err)
					}
					runs[arm] = append(runs[arm], run)
				}
			}
			for _, arm := range target.Arms {
				b.Run("arm="+string(arm), func(b *testing.B) { s.report(b, runs[arm]) })
			}
		})
	}
}

// label names b for people: under testing.Benchmark the top level has no
// name, so the scenario's stands in.
func label(b *testing.B, sc Scenario) string {
	if n := b.Name(); n != "" && !strings.HasPrefix(n, "/") {
		return n
	}
	return sc.Name + b.Name()
}

// measure runs one load and records it.
func (s *Suite) measure(b *testing.B, tg target.Target, sc Scenario, c int, arm target.Arm, rep int) (*target.Run, error) {
	o := s.Config.loadOptions(c)
	if sc.Load != nil {
		sc.Load(&o)
	}
	run, err := tg.Run(s.ctx, arm, sc.Path, o)
	if err != nil {
		return nil, err
	}
	top, _, _ := strings.Cut(b.Name(), "/")
	if top == "" {
		top = sc.Name
	}
	s.mu.Lock()
	s.recs = append(s.recs, report.Record{Benchmark: top, Concurrency: c, Repeat: rep, Run: run})
	s.mu.Unlock()
	for _, w := range run.Warnings {
		s.logf("%s/arm=%s: warning: %s", label(b, sc), arm, w)
	}
	return run, nil
}

// report is a leaf sub-benchmark: its i-th call with b.N == 1 (one per
// -count iteration) reports the i-th run; calls with a larger b.N, which
// only a user's -benchtime causes, report the same run again. No leaf call
// ever starts a load.
func (s *Suite) report(b *testing.B, runs []*target.Run) {
	run := runs[min(s.repeatIndex(b), len(runs)-1)]
	if !run.Valid() {
		b.Errorf("INVALID run: %s", strings.Join(run.Invalid, "; "))
	}
	reportMetrics(b, run)
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

// reportMetrics reports one run with benchstat-friendly units.
func reportMetrics(b *testing.B, r *target.Run) {
	b.ReportMetric(0, "ns/op")
	l := r.Load
	for _, p := range []struct {
		q    float64
		unit string
	}{{50, "p50-ms"}, {90, "p90-ms"}, {99, "p99-ms"}, {99.9, "p99.9-ms"}} {
		b.ReportMetric(l.Percentile(p.q)*1e3, p.unit)
	}
	b.ReportMetric(l.Latency.Max*1e3, "max-ms")
	b.ReportMetric(l.AchievedQPS, "req/s")
	b.ReportMetric(float64(l.Errors), "errors")
	var total float64
	for _, t := range r.Resources.ByRole() {
		b.ReportMetric(t.MilliCores, string(t.Role)+"-mcpu")
		total += t.MilliCores
		if t.Role == measure.RoleSidecar {
			b.ReportMetric(float64(t.MaxLoadRSS)/(1<<20), "sidecar-rss-MiB")
			if l.Requests > 0 {
				b.ReportMetric(t.MilliCores*r.Resources.Elapsed.Seconds()/float64(l.Requests)*1000, "sidecar-cpu-ms/kreq")
			}
		}
	}
	if l.Requests > 0 {
		b.ReportMetric(total*r.Resources.Elapsed.Seconds()/float64(l.Requests)*1000, "cpu-ms/kreq")
	}
}

// Records returns a copy of every run so far.
func (s *Suite) Records() []report.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]report.Record(nil), s.recs...)
}

// Finish compares the arms, writes the results file, prints the table, then
// checks the thresholds, and always tears the target down. The error holds
// one line per breach.
func (s *Suite) Finish() error {
	defer func() { _ = s.close() }()
	recs := s.Records()
	if len(recs) == 0 {
		return s.close()
	}
	cs := report.Compare(recs)
	res := &report.Results{
		Schema: report.Schema, Started: s.started, Finished: time.Now(), Command: os.Args,
		Settings: s.Config, Records: recs, Comparisons: cs, Proofs: report.Proofs(recs),
	}
	if s.tg != nil {
		res.Environment = s.tg.Environment()
	}
	var verr error
	if s.Config.Thresholds != "none" {
		res.Thresholds = s.Config.Thresholds
		th, err := verdict.Load(s.Config.Thresholds)
		if err != nil {
			verr = fmt.Errorf("thresholds: %w", err)
		} else {
			obs := make([]verdict.Observation, len(cs))
			for i, c := range cs {
				obs[i] = c.Observation()
			}
			v := th.Check(obs)
			verr = v.Err()
			for _, b := range v.Breaches {
				res.Breaches = append(res.Breaches, b.Error())
			}
		}
	}
	path, werr := report.Write(s.Config.ResultsDir, res)
	fmt.Fprintln(os.Stdout)
	fmt.Fprintf(os.Stdout, progressPrefix+"summary: %s, %s %s, %d runs (medians over repeats; intervals in parentheses)\n",
		res.Environment.Target, res.Environment.Mesh.Name, res.Environment.Mesh.Version, len(recs))
	report.PrintSummary(os.Stdout, cs)
	report.PrintProofs(os.Stdout, progressPrefix, res.Proofs)
	if werr == nil {
		fmt.Fprintf(os.Stdout, progressPrefix+"results: %s\n", path)
		var reports []string
		reports, werr = report.WriteBeside(path, res, s.Config.Prices)
		for _, p := range reports {
			fmt.Fprintf(os.Stdout, progressPrefix+"report: %s\n", p)
		}
	}
	// Limits that held on invalid runs prove nothing: the run fails.
	var invalid []string
	for _, c := range cs {
		if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
			invalid = append(invalid, fmt.Sprintf("%s (%d)", c.Scenario(), n))
		}
	}
	var ierr error
	if len(invalid) > 0 {
		ierr = fmt.Errorf("not a valid result: invalid runs in %s; their reasons are in the results file and above", strings.Join(invalid, ", "))
	}
	switch {
	case s.Config.Thresholds == "none":
		fmt.Fprintln(os.Stdout, progressPrefix+"thresholds: off (-thresholds=none)")
	case verr == nil && ierr != nil:
		fmt.Fprintf(os.Stdout, progressPrefix+"thresholds: %s: the limits held, on figures that include invalid runs\n", s.Config.Thresholds)
	case verr == nil:
		fmt.Fprintf(os.Stdout, progressPrefix+"thresholds: %s: every limit held\n", s.Config.Thresholds)
	}
	return errors.Join(werr, verr, ierr, s.close())
}

// close tears the target down once. A second caller (Finish racing the
// Ctrl-C handler) waits for the first teardown to end, so the process never
// exits while a cluster is half deleted.
func (s *Suite) close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		setup := s.settingUp
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
		if tg == nil {
			return
		}
		start := time.Now()
		s.closeErr = tg.Close(context.Background())
		s.logf("target %s torn down in %v", tg.Name(), time.Since(start).Round(time.Millisecond))
	})
	return s.closeErr
}
