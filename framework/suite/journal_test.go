package suite_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
)

// nestedBinary builds testdata/nested once for the lifecycle tests below.
var nestedBinary = testBinary("nested")

// testBinary builds the test binary of testdata/name once, on its first
// call, and returns its path.
func testBinary(name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "meshbench-"+name+"-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name+".test")
		out, err := exec.Command("go", "test", "-c", "-o", bin, "./testdata/"+name).CombinedOutput()
		if err != nil {
			return "", errors.New(string(out))
		}
		return bin, nil
	})
}

// startNested starts the nested benchmark binary on the local target,
// four points of two arms, with args after the defaults; its output goes
// to the returned buffer.
func startNested(t *testing.T, results string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a benchmark binary with real processes")
	}
	bin, err := nestedBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"-test.run", "^$", "-test.bench", ".", "-test.count", "1",
		"-target", "local", "-concurrency", "2", "-duration", "1s", "-warmup", "100ms", "-results", results, "-thresholds", "none"}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

// waitForRecords waits until the run's journal holds n records.
func waitForRecords(t *testing.T, results string, n int, out *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		js, _ := filepath.Glob(filepath.Join(results, "*"+report.JournalExt))
		if len(js) == 1 {
			if r, _, err := report.ReadJournal(js[0]); err == nil && len(r.Records) >= n {
				return js[0]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.FailNow(t, "no journal with records", "%s", out.String())
	return ""
}

func exitCode(err error) int {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return 0
}

// Ctrl-C mid-sweep: the runs measured so far are in a whole results
// file, marked partial with the signal, and the journal is gone.
func TestInterruptKeepsWhatWasMeasured(t *testing.T) {
	results := t.TempDir()
	cmd, out := startNested(t, results)
	waitForRecords(t, results, 2, out)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	assert.Equal(t, 130, exitCode(err), "%s", out.String())
	files, _ := filepath.Glob(filepath.Join(results, "*.json"))
	require.Len(t, files, 1, "%s", out.String())
	res, err := report.Read(files[0])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(res.Records), 2)
	assert.Contains(t, res.Partial, "interrupted")
	js, _ := filepath.Glob(filepath.Join(results, "*"+report.JournalExt))
	assert.Empty(t, js, "the journal is removed once the results file holds it")
	assert.Contains(t, out.String(), "writing what was measured")
}

// SIGKILL leaves the journal; the next run names it and turns it into a
// partial results file before it measures anything.
func TestKilledRunIsRecoveredAtTheNextStart(t *testing.T) {
	results := t.TempDir()
	cmd, out := startNested(t, results)
	journal := waitForRecords(t, results, 2, out)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	r, _, err := report.ReadJournal(journal)
	require.NoError(t, err, "the killed run's journal reads back")
	measured := len(r.Records)
	require.GreaterOrEqual(t, measured, 2)
	ins, err := report.Open(journal)
	require.NoError(t, err, "meshbench report reads a journal")
	assert.Contains(t, ins[0].Results.Partial, "stopped before it finished")
	assert.Positive(t, ins[0].Results.Environment.Cores, "the journal holds the environment it was measured on")

	next, out2 := startNested(t, results, "-test.bench", "^NoSuchBenchmark$")
	require.NoError(t, next.Wait(), "%s", out2.String())
	want := strings.TrimSuffix(journal, report.JournalExt) + ".json"
	assert.Contains(t, out2.String(), journal+": left by an earlier run that was killed")
	assert.Contains(t, out2.String(), "now "+want+", marked partial")
	res, err := report.Read(want)
	require.NoError(t, err)
	assert.Len(t, res.Records, measured)
	assert.NoFileExists(t, journal)
}

// A deadline (go test's -timeout) that cannot hold the plan at the asked
// windows: the run plans to end three quarters of the way to the go
// command's kill (and 30 s before it), fits what it can, shortening
// windows (not under 1 s) or skipping a sweep, says which in its output
// and its results, and ends whole before the kill.
func TestPlanFitsTheDeadline(t *testing.T) {
	results := t.TempDir()
	// The go command would kill the binary 61 s in (-timeout 1s and its
	// minute of grace): the plan ends 31 s in. The two sweeps of the
	// benchmark are four 5 s runs each, about 22 s a sweep: the first fits
	// (or nearly), the second cannot at 5 s windows.
	start := time.Now()
	cmd, out := startNested(t, results, "-test.timeout", "1s", "-duration", "5s")
	err := cmd.Wait()
	assert.Equal(t, 0, exitCode(err), "a run fitted to its deadline is whole: %s", out.String())
	assert.Less(t, time.Since(start), 61*time.Second, "ended before the go command's kill")
	assert.Contains(t, out.String(), "plan: 1 benchmarks (BenchmarkNested), measured within")
	files, _ := filepath.Glob(filepath.Join(results, "*.json"))
	require.Len(t, files, 1, "%s", out.String())
	res, err := report.Read(files[0])
	require.NoError(t, err)
	assert.Empty(t, res.Partial)
	require.NotEmpty(t, res.Plan, "the second sweep cannot fit at 5 s windows: %s", out.String())
	for _, note := range res.Plan {
		assert.Regexp(t, `^BenchmarkNested: (skipped: \d+ runs need at least|windows shortened from 5s to \d)`, note)
		assert.Contains(t, out.String(), "# meshbench: plan: "+note)
	}
	require.NotEmpty(t, res.Records)
	for _, r := range res.Records {
		d := r.Run.Load.Options.Duration
		assert.True(t, d >= time.Second && d <= 5*time.Second, "%s: a %v window", r.Name(), d)
	}
}

// A disk that fills mid-sweep (a 16 KiB tmpfs as -results: 24 KiB held a whole nested run at the 1 s windows, in one of four runs): the run
// stops measuring at the first record the journal cannot hold, says so,
// and fails; every record before it is in the journal, which `meshbench
// report` reads; no results file is left truncated.
func TestFullDiskKeepsWhatWasJournaled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a small tmpfs to fill: run as root (CI does)")
	}
	results := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", results).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the full-disk test needs one", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", results).Run() })
	cmd, out := startNested(t, results)
	err := cmd.Wait()
	assert.Equal(t, 1, exitCode(err), "a run stopped by a full disk fails: %s", out.String())
	assert.Contains(t, out.String(), "# meshbench: stopping: the journal cannot be written, so nothing more is measured (")
	assert.Contains(t, out.String(), "no space left on device")
	js, _ := filepath.Glob(filepath.Join(results, "*"+report.JournalExt))
	require.Len(t, js, 1, "the journal stays: %s", out.String())
	res, _, err := report.ReadJournal(js[0])
	require.NoError(t, err)
	assert.NotEmpty(t, res.Records, "what was measured before the disk filled")
	t.Logf("%d of 8 runs journaled before the disk filled", len(res.Records))
	ins, err := report.Open(js[0])
	require.NoError(t, err, "meshbench report reads it")
	assert.Len(t, ins, 1)
	files, _ := filepath.Glob(filepath.Join(results, "*.json"))
	for _, f := range files {
		_, err := report.Read(f)
		assert.NoError(t, err, "a results file is whole or absent: %s", f)
	}
}

// Bad inputs stop the run before anything is measured, naming the flag.
func TestBadRunInputsAreRefusedUpFront(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"zero window", []string{"-duration", "0s"}, "meshbench: bad flags: -duration=0s: a window must be > 0; leave -duration out for the default (1s on the local target, 3s for a local gate, 10s on a cluster)", 2},
		{"benchtime and duration", []string{"-test.benchtime", "3s", "-duration", "2s"}, "meshbench: bad flags: -benchtime=3s and -duration=2s: give one (both set the measured window)", 2},
		{"zero count", []string{"-test.count", "0"}, "meshbench: bad flags: -count=0: measures no round to compare; leave -count out for the default (3 interleaved rounds), or give at least 1", 2},
		{"results not writable", []string{"-results", "/proc/meshbench-results"}, "-results=/proc/meshbench-results: results directory: mkdir /proc/meshbench-results:", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, out := startNested(t, t.TempDir(), tc.args...)
			start := time.Now()
			err := cmd.Wait()
			assert.Equal(t, tc.code, exitCode(err), "%s", out.String())
			assert.Contains(t, out.String(), tc.want)
			assert.NotContains(t, out.String(), "repeat 1/", "nothing was measured")
			assert.Less(t, time.Since(start), 30*time.Second)
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// -request-size reaches the loadgen in every run: the targets take what
// the client sends from the workload, which -request-size now sets when
// the scenario does not (it was dropped: issue 20).
func TestRequestSizeReachesEveryRun(t *testing.T) {
	results := t.TempDir()
	cmd, out := startNested(t, results, "-test.bench", "Nested/qps=50/payload=128B", "-request-size", "4096")
	_ = cmd.Wait() // the runs' validity is not what this test is about
	files, _ := filepath.Glob(filepath.Join(results, "*.json"))
	require.Len(t, files, 1, "%s", out.String())
	res, err := report.Read(files[0])
	require.NoError(t, err)
	require.Len(t, res.Records, 2, "one baseline and one meshed run")
	for _, r := range res.Records {
		assert.Equal(t, 4096, r.Run.Load.Options.RequestSize, "%s: the loadgen's request body", r.Name())
		assert.Equal(t, 4096, r.Run.Workload.RequestSize, "%s: the workload the target ran", r.Name())
	}
}
