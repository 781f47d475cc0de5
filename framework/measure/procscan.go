package measure

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ProcTable is one scan of /proc: every process's parent, name and CPU
// ticks so far. Two scans around a window tell what each process used in
// it, and which ones outside a run kept the machine busy.
type ProcTable struct {
	kids  map[int][]int
	procs map[int]procEntry
}

type procEntry struct {
	name      string
	ticks     uint64
	startTime string
}

// ScanProcs reads every /proc/PID/stat once. A process that exits while
// it is read is left out.
func ScanProcs() ProcTable {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	t := ProcTable{kids: map[int][]int{}, procs: make(map[int]procEntry, len(stats))}
	for _, path := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		name, ppid, e, err := parseStatEntry(string(b))
		if err != nil {
			continue
		}
		t.kids[ppid] = append(t.kids[ppid], pid)
		t.procs[pid] = procEntry{name: name, ticks: e.ticks, startTime: e.startTime}
	}
	return t
}

// parseStatEntry is ParseStat with the command name and the parent pid.
func parseStatEntry(line string) (name string, ppid int, e procEntry, err error) {
	ticks, start, err := ParseStat(line)
	if err != nil {
		return "", 0, procEntry{}, err
	}
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	f := strings.Fields(line[end+1:])
	if open < 0 || open > end {
		return "", 0, procEntry{}, fmt.Errorf("no '(' before the name's ')' in stat line")
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return "", 0, procEntry{}, fmt.Errorf("ppid: %w", err)
	}
	return line[open+1 : end], ppid, procEntry{ticks: ticks, startTime: start}, nil
}

// TreeTicks sums the CPU ticks (of USER_HZ) that pids and all their
// descendants had used when t was scanned. A pid that is gone counts
// nothing.
func (t ProcTable) TreeTicks(pids []int) uint64 {
	var ticks uint64
	for _, pid := range pids {
		for _, p := range descend(t.kids, pid) {
			ticks += t.procs[p].ticks
		}
	}
	return ticks
}

// Busiest names the n processes, outside skip and its descendants, that
// used the most CPU from before to t, over secs seconds, busiest first:
// "name (pid P) 123m". A process started in between counts all its ticks;
// one that ended in between is not seen.
func (t ProcTable) Busiest(before ProcTable, skip []int, secs float64, n int) []string {
	skipped := map[int]bool{}
	for _, pid := range skip {
		for _, p := range descend(t.kids, pid) {
			skipped[p] = true
		}
	}
	type used struct {
		pid   int
		ticks uint64
	}
	var all []used
	for pid, e := range t.procs {
		b, ok := before.procs[pid]
		if skipped[pid] || (ok && b.startTime == e.startTime && b.ticks >= e.ticks) {
			continue
		}
		if ok && b.startTime == e.startTime {
			e.ticks -= b.ticks
		}
		all = append(all, used{pid, e.ticks})
	}
	slices.SortFunc(all, func(a, b used) int { return cmp.Or(cmp.Compare(b.ticks, a.ticks), cmp.Compare(a.pid, b.pid)) })
	var out []string
	for _, u := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%s (pid %d) %.0fm", t.procs[u.pid].name, u.pid, float64(u.ticks)/clockTicks/secs*1000))
	}
	return out
}
