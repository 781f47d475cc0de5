package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Counters are one cgroup's counters at one instant. The CPU and
// throttling counters are cumulative since the cgroup was created.
type Counters struct {
	// UsageNanos is the CPU time used, in ns (v1 cpuacct.usage; v2
	// cpu.stat usage_usec × 1000).
	UsageNanos uint64 `json:"usageNanos"`
	// Periods, ThrottledPeriods and ThrottledNanos are the CFS counters
	// (cpu.stat nr_periods, nr_throttled, and throttled_time in ns on v1,
	// throttled_usec × 1000 on v2); zero without a CPU limit.
	Periods          uint64 `json:"periods"`
	ThrottledPeriods uint64 `json:"throttledPeriods"`
	ThrottledNanos   uint64 `json:"throttledNanos"`
	// LimitCores is the CFS quota over its period, in cores; 0: no limit.
	LimitCores float64 `json:"limitCores,omitempty"`
	// WorkingSetBytes is memory usage less inactive file pages, as the
	// kubelet computes a working set; HasMemory is false when the cgroup
	// has no memory counters (the root cgroup of v2).
	WorkingSetBytes uint64 `json:"workingSetBytes"`
	HasMemory       bool   `json:"hasMemory"`
	// RSSBytes is the anonymous memory, the page cache left out (v1
	// memory.stat total_rss, or rss where total_rss is absent; v2
	// memory.stat anon), as cAdvisor's container_memory_rss; HasRSS is
	// false when memory.stat has neither (and in the answer of an agent
	// older than the field).
	RSSBytes uint64 `json:"rssBytes"`
	HasRSS   bool   `json:"hasRss"`
}

// Read reads the counters of cgroup dir (relative to a hierarchy's root,
// as Layout.Dir gives it) from the tree fsys.
func (l Layout) Read(fsys fs.FS, dir string) (Counters, error) {
	var c Counters
	var err error
	if l.Version == V2 {
		err = readV2(fsys, path.Join(".", dir), &c)
	} else {
		err = l.readV1(fsys, dir, &c)
	}
	if err != nil {
		return Counters{}, err
	}
	return c, nil
}

// ReadNode reads the counters of the tree's root: the whole node.
func (l Layout) ReadNode(fsys fs.FS) (Counters, error) { return l.Read(fsys, "") }

// readV2 reads cpu.stat, cpu.max, memory.current and memory.stat of dir.
func readV2(fsys fs.FS, dir string, c *Counters) error {
	st, err := readKeyed(fsys, path.Join(dir, "cpu.stat"))
	if err != nil {
		return err
	}
	usage, ok := st["usage_usec"]
	if !ok {
		return fmt.Errorf("%s: no usage_usec", path.Join(dir, "cpu.stat"))
	}
	c.UsageNanos = usage * 1000
	c.Periods, c.ThrottledPeriods, c.ThrottledNanos = st["nr_periods"], st["nr_throttled"], st["throttled_usec"]*1000
	if b, err := fs.ReadFile(fsys, path.Join(dir, "cpu.max")); err == nil {
		if c.LimitCores, err = ParseCPUMax(b); err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, "cpu.max"), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path.Join(dir, "cpu.max"), err)
	}
	return readMemory(fsys, path.Join(dir, "memory.current"), path.Join(dir, "memory.stat"), statKeys{inactive: "inactive_file", rss: []string{"anon"}}, c)
}

// readV1 reads cpuacct.usage, cpu.stat and the CFS quota and period of dir
// in their hierarchies, and its memory usage and memory.stat.
func (l Layout) readV1(fsys fs.FS, dir string, c *Counters) error {
	acct := path.Join(".", l.CPUAcct, dir)
	cpu := path.Join(".", l.CPU, dir)
	var err error
	if c.UsageNanos, err = readUint(fsys, path.Join(acct, "cpuacct.usage")); err != nil {
		return err
	}
	st, err := readKeyed(fsys, path.Join(cpu, "cpu.stat"))
	if err != nil {
		return err
	}
	c.Periods, c.ThrottledPeriods, c.ThrottledNanos = st["nr_periods"], st["nr_throttled"], st["throttled_time"]
	if c.LimitCores, err = readV1Limit(fsys, cpu); err != nil {
		return err
	}
	mem := path.Join(".", l.Memory, dir)
	return readMemory(fsys, path.Join(mem, "memory.usage_in_bytes"), path.Join(mem, "memory.stat"), statKeys{inactive: "total_inactive_file", rss: []string{"total_rss", "rss"}}, c)
}

// readV1Limit is cpu.cfs_quota_us over cpu.cfs_period_us; 0 when the quota
// is -1 (no limit) or the files are absent (the root cgroup).
func readV1Limit(fsys fs.FS, cpu string) (float64, error) {
	qb, err := fs.ReadFile(fsys, path.Join(cpu, "cpu.cfs_quota_us"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path.Join(cpu, "cpu.cfs_quota_us"), err)
	}
	quota, err := strconv.ParseInt(strings.TrimSpace(string(qb)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path.Join(cpu, "cpu.cfs_quota_us"), err)
	}
	if quota <= 0 {
		return 0, nil
	}
	period, err := readUint(fsys, path.Join(cpu, "cpu.cfs_period_us"))
	if err != nil || period == 0 {
		return 0, errors.Join(err, fmt.Errorf("%s: no CFS period for quota %d", cpu, quota))
	}
	return float64(quota) / float64(period), nil
}

// statKeys names the memory.stat keys of one cgroup version: inactive,
// the inactive file pages; rss, the anonymous memory, the first key
// present taken.
type statKeys struct {
	inactive string
	rss      []string
}

// readMemory sets the working set from the usage file and the inactive
// file pages in the stat file, and the RSS from the stat file; a missing
// usage file leaves HasMemory false.
func readMemory(fsys fs.FS, usageFile, statFile string, keys statKeys, c *Counters) error {
	usage, err := readUint(fsys, usageFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := readKeyed(fsys, statFile)
	if err != nil {
		return err
	}
	c.HasMemory = true
	if inactive := st[keys.inactive]; inactive < usage {
		c.WorkingSetBytes = usage - inactive
	}
	for _, k := range keys.rss {
		if v, ok := st[k]; ok {
			c.RSSBytes, c.HasRSS = v, true
			break
		}
	}
	return nil
}

// readUint reads a file holding one unsigned integer.
func readUint(fsys fs.FS, name string) (uint64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// readKeyed reads a flat keyed file ("key value" lines: cpu.stat,
// memory.stat).
func readKeyed(fsys fs.FS, name string) (map[string]uint64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m, err := ParseKeyed(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// ParseKeyed parses a cgroup flat keyed file: one "key value" per line,
// values unsigned integers.
func ParseKeyed(b []byte) (map[string]uint64, error) {
	m := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %q: want \"key value\"", line)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		m[k] = n
	}
	return m, sc.Err()
}

// ParseCPUMax parses a v2 cpu.max ("<quota|max> <period>", µs) into the
// limit in cores; 0 for "max".
func ParseCPUMax(b []byte) (float64, error) {
	q, p, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return 0, fmt.Errorf("%q: want \"<quota|max> <period>\"", b)
	}
	if q == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseUint(q, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("quota %q: %w", q, err)
	}
	period, err := strconv.ParseUint(p, 10, 64)
	if err != nil || period == 0 {
		return 0, fmt.Errorf("period %q: want a positive integer", p)
	}
	return float64(quota) / float64(period), nil
}
