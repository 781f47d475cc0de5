package measure

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times; 100 on every Linux ABI
// Go supports.
const clockTicks = 100

// Proc is a local process to account for.
type Proc struct {
	// Name names the process in the results (Usage.Name).
	Name string
	// Role is what the process is to the run.
	Role Role
	// Pod is the workload the process belongs to; see Usage.Pod.
	Pod string
	// PID is the process id to read /proc/<pid> of.
	PID int
	// IdleRSS is the resident memory measured before any load, in bytes
	// (see RSS); 0 when unknown.
	IdleRSS int64
	// Children counts the process's descendants with it, for proxies
	// that work in child processes (nginx). Never set it for the process
	// that started the others.
	Children bool
}

// ProcRecorder measures local processes from /proc between Start and Stop.
type ProcRecorder struct {
	procs  []Proc
	start  time.Time
	before map[int]procSample
	node   cpuTimes
}

// procSample is one read of a process tree: its threads' run times in
// ns, summed and each, and the root's start time.
type procSample struct {
	nanos     uint64
	threads   map[string]uint64
	startTime string
}

// StartProcs takes the first sample of every process and of the machine.
func StartProcs(procs []Proc) (*ProcRecorder, error) {
	r := &ProcRecorder{procs: procs, before: map[int]procSample{}}
	var err error
	if r.node, err = readCPUTimes(); err != nil {
		return nil, err
	}
	r.start = time.Now()
	kids := childTableFor(procs)
	for _, p := range procs {
		s, err := readProc(p.PID, p.Children, kids)
		if err != nil {
			return nil, fmt.Errorf("start measuring %s (pid %d): %w", p.Name, p.PID, err)
		}
		r.before[p.PID] = s
	}
	return r, nil
}

// Stop takes the second sample and returns the window's usage. A process
// that exited or was replaced is listed in Window.Restarts.
func (r *ProcRecorder) Stop() (Window, error) {
	elapsed := time.Since(r.start)
	node, err := readCPUTimes()
	if err != nil {
		return Window{}, err
	}
	w := Window{
		Start:           r.start,
		Elapsed:         elapsed,
		NodeUtilisation: map[string]float64{"local": node.busyPercentSince(r.node)},
		NodeSteal:       map[string]float64{"local": node.stealPercentSince(r.node)},
		Cores:           map[string]int{"local": runtime.NumCPU()},
	}
	secs := elapsed.Seconds()
	kids := childTableFor(r.procs)
	for _, p := range r.procs {
		before := r.before[p.PID]
		after, err := readProc(p.PID, p.Children, kids)
		if err != nil || after.startTime != before.startTime {
			w.Restarts = append(w.Restarts, fmt.Sprintf("%s (pid %d) exited or restarted during the window", p.Name, p.PID))
			continue
		}
		u := Usage{Name: p.Name, Role: p.Role, Pod: p.Pod, PID: p.PID, IdleRSS: p.IdleRSS, Threads: len(after.threads)}
		u.CPUSeconds = float64(after.nanos-before.nanos) / 1e9
		u.MilliCores = u.CPUSeconds / secs * 1000
		for tid, t := range after.threads {
			if b, ok := before.threads[tid]; ok && t >= b {
				u.MaxThreadMilliCores = max(u.MaxThreadMilliCores, float64(t-b)/1e9/secs*1000)
			}
		}
		if u.LoadRSS, err = treeRSS(tree(p.PID, p.Children, kids)); err != nil {
			return Window{}, err
		}
		w.Usage = append(w.Usage, u)
	}
	return w, nil
}

// RSS returns the resident set size in bytes of a process and, with
// children, its descendants, from /proc/PID/status (pages shared between them count once
// per process).
func RSS(pid int, children bool) (int64, error) {
	var kids map[int][]int
	if children {
		kids = childTable()
	}
	return treeRSS(tree(pid, children, kids))
}

// treeRSS sums the RSS of a process tree, root first: only the root's
// must still be there.
func treeRSS(pids []int) (int64, error) {
	var total int64
	for i, p := range pids {
		n, err := rss(p)
		if err != nil && i == 0 {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read RSS of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("pid %d: unexpected VmRSS line %q", pid, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("pid %d: VmRSS %q: %w", pid, f[0], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS in /proc/%d/status", pid, pid)
}

// readProc reads the run time of every thread of a process and, with
// children, of all its descendants (nginx and haproxy do their work in
// child processes), and the root's start time (to notice a reused pid).
func readProc(pid int, children bool, kids map[int][]int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	_, start, err := ParseStat(string(stat))
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	s := procSample{startTime: start, threads: map[string]uint64{}}
	for _, p := range tree(pid, children, kids) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", p))
		for _, dir := range tasks {
			if ns, ok := threadNanos(dir); ok {
				s.threads[filepath.Base(dir)] = ns
				s.nanos += ns
			}
		}
	}
	return s, nil
}

// CPUClock says how the local target reads a process's CPU time: each
// thread's run time in ns from the scheduler (/proc/PID/task/TID/schedstat),
// where the kernel has it, else its utime+stime in USER_HZ ticks (10 ms).
// A window of 50 ms of CPU read in ticks is ±20 % per thread; in ns it is
// exact.
func CPUClock() string {
	if !ReadsTicks() {
		return "schedstat: each thread's run time in ns (/proc/PID/task/TID/schedstat)"
	}
	return "ticks: each thread's utime+stime in 10 ms ticks (/proc/PID/task/TID/stat); this kernel has no schedstat"
}

// ReadsTicks says whether the local target reads CPU time in ticks here
// (a kernel without schedstat) rather than in ns.
func ReadsTicks() bool {
	b, err := os.ReadFile("/proc/self/schedstat")
	if err != nil {
		return true
	}
	_, err = ParseSchedstat(string(b))
	return err != nil
}

// threadNanos reads one thread's CPU time in ns: its schedstat's run time,
// or where the kernel has none, its ticks from stat. false when the
// thread exited between the listing and the read.
func threadNanos(dir string) (uint64, bool) {
	if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
		if ns, err := ParseSchedstat(string(b)); err == nil {
			return ns, true
		}
	}
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, false
	}
	ticks, _, err := ParseStat(string(b))
	if err != nil {
		return 0, false
	}
	return ticks * (1e9 / clockTicks), true
}

// ParseSchedstat reads the run time in ns, the first of the three fields
// of /proc/PID/schedstat (run time, wait time, timeslices).
func ParseSchedstat(line string) (uint64, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: %d fields, want 3", line, len(f))
	}
	ns, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat run time: %w", err)
	}
	return ns, nil
}

// TicksPerSecond is USER_HZ, the unit of ProcTable.TreeTicks.
const TicksPerSecond = clockTicks

// tree lists pid and, with children, its descendants in kids.
func tree(pid int, children bool, kids map[int][]int) []int {
	if !children {
		return []int{pid}
	}
	return descend(kids, pid)
}

// childTableFor is childTable when a process of procs counts its
// children, else nil: one scan of /proc per sample, not one per process.
func childTableFor(procs []Proc) map[int][]int {
	for _, p := range procs {
		if p.Children {
			return childTable()
		}
	}
	return nil
}

// descend lists pid and its descendants in kids.
func descend(kids map[int][]int, pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// childTable maps every pid to its children, from /proc/*/stat.
func childTable() map[int][]int { return ScanProcs().kids }

// ParseStat extracts utime+stime (ticks) and starttime from a /proc stat
// line. The command name may hold spaces and parentheses, so fields are
// counted from the last ')'.
func ParseStat(line string) (ticks uint64, startTime string, err error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, "", errors.New("no ')' in stat line")
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime 15, starttime 22.
	if len(f) < 20 {
		return 0, "", fmt.Errorf("stat line has %d fields after the name, want >= 20", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, "", fmt.Errorf("utime/stime: %w", err)
	}
	return ut + st, f[19], nil
}

// cpuTimes is the aggregate "cpu" line of /proc/stat.
// Steal is inside busy: time the hypervisor gave to other guests, which
// no process here used.
type cpuTimes struct{ busy, total, steal uint64 }

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return ParseCPULine(line)
}

// ParseCPULine parses the first line of /proc/stat: user nice system idle
// iowait irq softirq steal guest guest_nice. Idle and iowait count as idle;
// guest time is already inside user; steal counts as busy, and apart.
func ParseCPULine(line string) (cpuTimes, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("unexpected /proc/stat first line %q", line)
	}
	var c cpuTimes
	for i, s := range f[1:] {
		if i >= 8 { // guest, guest_nice are counted in user, nice
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat field %d %q: %w", i+1, s, err)
		}
		c.total += v
		if i != 3 && i != 4 {
			c.busy += v
		}
		if i == 7 {
			c.steal = v
		}
	}
	return c, nil
}

func (c cpuTimes) busyPercentSince(before cpuTimes) float64 {
	return percentOf(c.busy-before.busy, c.total-before.total)
}

func (c cpuTimes) stealPercentSince(before cpuTimes) float64 {
	return percentOf(c.steal-before.steal, c.total-before.total)
}

func percentOf(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole) * 100
}
