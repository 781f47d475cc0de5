package measure

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// A real /proc/PID/stat line; the name holds a space and a parenthesis.
	line := "4242 (my (proc) x) S 1 4242 4242 0 -1 4194560 523 0 0 0 170 35 0 0 20 0 9 0 123456 1000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	ticks, start, err := ParseStat(line)
	require.NoError(t, err)
	assert.Equal(t, uint64(205), ticks, "utime 170 + stime 35")
	assert.Equal(t, "123456", start)
	_, _, err = ParseStat("4242 (x) S 1 2")
	assert.EqualError(t, err, "stat line has 3 fields after the name, want >= 20")
	_, _, err = ParseStat("no paren")
	assert.EqualError(t, err, "no ')' in stat line")
}

func TestParseSchedstat(t *testing.T) {
	// A real /proc/PID/schedstat of this machine (2026-12-07): run time
	// and wait time in ns, timeslices.
	ns, err := ParseSchedstat("1055265 0 1\n")
	require.NoError(t, err)
	assert.Equal(t, uint64(1055265), ns)
	_, err = ParseSchedstat("1 2")
	assert.EqualError(t, err, `schedstat "1 2": 2 fields, want 3`)
	_, err = ParseSchedstat("x 2 3")
	assert.ErrorContains(t, err, "schedstat run time")
}

// TestProcRecorderReadsNanoseconds burns 15 ms of this process's CPU (as
// getrusage counts it) and reads it back finer than a 10 ms tick: a
// tick-based read of 15 ms is 10 or 20 ms, never within 3 ms of 15.
func TestProcRecorderReadsNanoseconds(t *testing.T) {
	if !strings.HasPrefix(CPUClock(), "schedstat") {
		t.Skip("this kernel has no /proc/PID/schedstat (CONFIG_SCHED_INFO), so CPU reads fall back to 10 ms ticks")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rec, err := StartProcs([]Proc{{Name: "self", Role: RoleLoadgen, PID: os.Getpid()}})
	require.NoError(t, err)
	before := threadCPU(t)
	burnThreadCPU(t, 15*time.Millisecond)
	burned := threadCPU(t) - before
	w, err := rec.Stop()
	require.NoError(t, err)
	require.Len(t, w.Usage, 1)
	got := time.Duration(w.Usage[0].CPUSeconds * 1e9)
	// The process's other threads (GC, the test runner) run a little too.
	assert.GreaterOrEqual(t, got, burned, "the whole process ran at least what this thread burned")
	assert.Less(t, got, burned+3*time.Millisecond, "ns, not ticks: burned %v", burned)
}

// threadCPU is this thread's CPU time, from the kernel's per-thread clock.
func threadCPU(t *testing.T) time.Duration {
	t.Helper()
	var ts syscall.Timespec
	// CLOCK_THREAD_CPUTIME_ID = 3
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	require.Zero(t, e)
	return time.Duration(ts.Nano())
}

// burnThreadCPU spins on this thread until it has run for d.
func burnThreadCPU(t *testing.T, d time.Duration) {
	t.Helper()
	start, x := threadCPU(t), 0
	for threadCPU(t)-start < d {
		for i := range 10_000 {
			x += i
		}
	}
	_ = x
}

func TestParseCPULine(t *testing.T) {
	c, err := ParseCPULine("cpu  100 5 50 800 40 3 2 0 7 0")
	require.NoError(t, err)
	assert.Equal(t, cpuTimes{busy: 160, total: 1000}, c, "guest (7) is already in user")
	before := cpuTimes{busy: 60, total: 500}
	assert.InDelta(t, 20.0, c.busyPercentSince(before), 1e-9)
	// This machine's own line (2026-12-03): steal is busy, and apart.
	c, err = ParseCPULine("cpu  1919370 688795 1170152 2818944 41566 0 245274 64439 0 0")
	require.NoError(t, err)
	assert.Equal(t, cpuTimes{busy: 4088030, total: 6948540, steal: 64439}, c)
	assert.InDelta(t, 50.0, c.stealPercentSince(cpuTimes{busy: 4088030 - 1000, total: 6948540 - 2000, steal: 64439 - 1000}), 1e-9)
	_, err = ParseCPULine("intr 1 2 3")
	assert.Error(t, err)
}

// TestProcRecorderCountsChildren measures a real shell whose child burns
// CPU: with Children the busy child is counted, without it not.
func TestProcRecorderCountsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done & wait")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	rec, err := StartProcs([]Proc{
		{Name: "tree", Role: RoleSidecar, PID: cmd.Process.Pid, Children: true},
		{Name: "root-only", Role: RoleApp, PID: cmd.Process.Pid},
	})
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	// The shell has exited: a vanished process is a restart, not a number.
	w, err := rec.Stop()
	require.NoError(t, err)
	assert.Len(t, w.Restarts, 2)
	assert.Empty(t, w.Usage)
}

func TestProcRecorderSelf(t *testing.T) {
	rec, err := StartProcs([]Proc{{Name: "self", Role: RoleLoadgen, PID: os.Getpid()}})
	require.NoError(t, err)
	// Burn 50 ms of this process's CPU time, as the kernel counts it (a
	// fixed loop may finish within one 10 ms tick on a fast machine).
	x := burnCPU(t, 50*time.Millisecond)
	w, err := rec.Stop()
	require.NoError(t, err)
	require.Len(t, w.Usage, 1, "%d", x)
	u := w.Usage[0]
	assert.Greater(t, u.CPUSeconds, 0.0)
	assert.Greater(t, u.LoadRSS, int64(0))
	assert.GreaterOrEqual(t, u.Threads, 1)
	assert.Contains(t, w.NodeUtilisation, "local")
	lg, ok := w.Role(RoleLoadgen)
	assert.True(t, ok)
	assert.Equal(t, 1, lg.Count)
}

// burnCPU spins until the process's user+system CPU time, from
// getrusage, has grown by d, and returns a value that keeps the loop.
func burnCPU(t *testing.T, d time.Duration) int {
	t.Helper()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	x, start := 0, cpu()
	for cpu()-start < d {
		for i := range 1_000_000 {
			x += i
		}
	}
	return x
}

// TestTreeTicks counts a busy child of an idle shell with the shell, in
// one scan of /proc, and a pid that is gone as nothing.
func TestTreeTicks(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the busy child dies with its group
	require.NoError(t, cmd.Start())
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	before := ScanProcs().TreeTicks([]int{cmd.Process.Pid})
	// Wait for 5 ticks (50 ms) of the busy child, as the kernel counts
	// them; the idle shell alone never gets there.
	deadline := time.Now().Add(10 * time.Second)
	for ScanProcs().TreeTicks([]int{cmd.Process.Pid}) < before+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.GreaterOrEqual(t, ScanProcs().TreeTicks([]int{cmd.Process.Pid}), before+5, "the busy child is counted with its parent")
	assert.Zero(t, ScanProcs().TreeTicks([]int{1 << 30}), "a pid that is gone")
}

// TestBusiest names the busy child of an idle shell, between two scans of
// /proc, busier than its parent, and neither once the parent is skipped.
func TestBusiest(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	parent := cmd.Process.Pid
	before := ScanProcs()
	deadline := time.Now().Add(10 * time.Second)
	after := ScanProcs()
	for after.TreeTicks([]int{parent}) < before.TreeTicks([]int{parent})+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		after = ScanProcs()
	}
	kids := after.kids[parent]
	require.Len(t, kids, 1, "the busy child")
	all := after.Busiest(before, nil, 1, 1<<20)
	child := slices.IndexFunc(all, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("sh (pid %d) ", kids[0])) })
	require.GreaterOrEqual(t, child, 0, "the busy child named: %v", all)
	shell := slices.IndexFunc(all, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("sh (pid %d) ", parent)) })
	assert.True(t, shell < 0 || shell > child, "the idle shell after its busy child: %v", all)
	for _, s := range after.Busiest(before, []int{parent}, 1, 1<<20) {
		assert.NotContains(t, s, fmt.Sprintf("(pid %d)", kids[0]), "skipped with its parent")
	}
}

func TestParseStatEntry(t *testing.T) {
	name, ppid, e, err := parseStatEntry("4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 123456 1000 10")
	require.NoError(t, err)
	assert.Equal(t, "my (odd) name", name)
	assert.Equal(t, 17, ppid)
	assert.Equal(t, procEntry{ticks: 300, startTime: "123456"}, e)
}
