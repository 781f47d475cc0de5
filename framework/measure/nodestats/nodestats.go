package nodestats

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
)

// Source names this package's counters in a run's environment.
const Source = "on demand: crictl stats and the cgroup files on each node, read at the window's ends"

// Script reads the counters on a node: the clock, the node's cgroup (CPU,
// memory usage and inactive file pages), every pod cgroup's CFS files,
// the clock again, then the runtime's stats of every running container
// (CPU, working set and RSS).
// Each cgroup file's lines are printed as grep -H does: "path:line".
const Script = `c=/sys/fs/cgroup
echo "clock $(date +%s%N)"
if [ -f $c/cgroup.controllers ]; then
  grep -H . $c/cpu.stat $c/memory.current
  grep -H '^inactive_file ' $c/memory.stat
  find $c/ -path '*kubepods*' -type f \( -name cpu.stat -o -name cpu.max \) -exec grep -H . {} +
else
  for f in $c/cpuacct/cpuacct.usage $c/cpu,cpuacct/cpuacct.usage; do if [ -f $f ]; then grep -H . $f; break; fi; done
  grep -H . $c/memory/memory.usage_in_bytes
  grep -H '^total_inactive_file ' $c/memory/memory.stat
  find $c/cpu/ -path '*kubepods*' -type f \( -name cpu.stat -o -name cpu.cfs_quota_us -o -name cpu.cfs_period_us \) -exec grep -H . {} +
fi
echo "clock $(date +%s%N)"
echo "crictl stats"
crictl stats -o json
`

// Exec runs cmd on node, as root in the node's own namespaces, and returns
// its combined output.
type Exec func(ctx context.Context, node string, cmd ...string) ([]byte, error)

// MissingError reports a container the node's read could not fully
// measure. It is returned with the rest of the read, joined with any
// others; a caller keeps the Snapshot.
type MissingError struct {
	// Node is the node read.
	Node string
	// Container is the container not fully measured.
	Container kubelet.ContainerKey
	// ID is the runtime's container ID.
	ID string
	// What is missing: "cpu" (the runtime listed the container without a
	// CPU counter; it is left out of the snapshot) or "cgroup" (no cgroup
	// of it was found; it is kept without its CFS counters).
	What string
}

// Error names the container and what of it is missing.
func (e *MissingError) Error() string {
	if e.What == "cgroup" {
		return fmt.Sprintf("node %s: container %s (id %.12s): no cgroup of it under /sys/fs/cgroup (started or stopped during the read?): its CPU throttling is unknown",
			e.Node, e.Container, e.ID)
	}
	return fmt.Sprintf("node %s: container %s (id %.12s): the runtime listed it without a CPU counter (stopped during the read?): left out of this read",
		e.Node, e.Container, e.ID)
}

// Fetch runs Script on node through exec and parses its output. Its error
// is either the read's failure (the Snapshot is then empty) or only
// *MissingErrors (use Missing to tell).
func Fetch(ctx context.Context, exec Exec, node string) (kubelet.Snapshot, error) {
	out, err := exec(ctx, node, "sh", "-c", Script)
	if err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: read the container counters (crictl stats, cgroup files): %w: %s", node, err, tail(out, 400))
	}
	return Parse(out, node)
}

// Missing splits Fetch's error into the containers it could not fully
// measure and the rest: a nil rest means the Snapshot is good.
func Missing(err error) (missing []*MissingError, rest error) {
	var others []error
	for _, e := range kubelet.Flatten(err) {
		var me *MissingError
		if errors.As(e, &me) {
			missing = append(missing, me)
		} else {
			others = append(others, e)
		}
	}
	return missing, errors.Join(others...)
}

// tail is the last n bytes of out, trimmed.
func tail(out []byte, n int) string {
	s := strings.TrimSpace(string(out))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// nodeRead is what Script printed before the runtime's stats.
type nodeRead struct {
	clocks []time.Time
	// node holds the node cgroup's values by file (and key, for the
	// key/value files: "memory.stat total_inactive_file").
	node map[string]float64
	// cgroups holds the CFS files of each container cgroup, by container ID.
	cgroups map[string]*cfs
}

// cfs is one container cgroup's CFS files.
type cfs struct {
	periods, throttled float64
	// throttledSeconds is throttled_time (ns) or throttled_usec, in seconds.
	throttledSeconds float64
	hasThrottledTime bool
	quota, period    float64 // µs; quota <= 0: no limit
}

// containerDir matches a container's cgroup directory: the systemd
// driver's cri-containerd-<id>.scope, or the cgroupfs driver's <id>.
var containerDir = regexp.MustCompile(`^(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?$`)

// Parse parses Script's output, read on node.
func Parse(out []byte, node string) (kubelet.Snapshot, error) {
	head, stats, ok := bytes.Cut(out, []byte("\ncrictl stats\n"))
	if !ok {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: no \"crictl stats\" line in the read: %s", node, tail(out, 400))
	}
	nr, err := parseHead(head)
	if err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: %w", node, err)
	}
	s := kubelet.Snapshot{Node: node, ReadAt: nr.clocks[0].UTC(), Containers: map[kubelet.ContainerKey]kubelet.Container{}, Pods: map[kubelet.PodKey]kubelet.Pod{}}
	if err := nr.nodeSamples(&s); err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: %w", node, err)
	}
	var cs crictlStats
	if err := json.Unmarshal(stats, &cs); err != nil {
		return kubelet.Snapshot{}, fmt.Errorf("node %s: parse crictl stats -o json: %w: %s", node, err, tail(stats, 200))
	}
	var missing, noCPU []error
	for _, st := range cs.Stats {
		k := st.key()
		if st.CPU == nil || st.CPU.UsageCoreNanoSeconds == nil || st.CPU.Timestamp == 0 {
			noCPU = append(noCPU, &MissingError{Node: node, Container: k, ID: st.Attributes.ID, What: "cpu"})
			continue
		}
		c := kubelet.Container{ID: st.Attributes.ID, CPUSeconds: kubelet.Sample{
			Value: float64(st.CPU.UsageCoreNanoSeconds.Value) / 1e9, Time: nanos(int64(st.CPU.Timestamp))}}
		st.memory(&c)
		cg, ok := nr.cgroups[st.Attributes.ID]
		switch {
		case !ok:
			missing = append(missing, &MissingError{Node: node, Container: k, ID: st.Attributes.ID, What: "cgroup"})
		case cg.quota > 0 && cg.period > 0:
			c.Throttling = cg.throttling(nr.clocks[0])
		}
		s.Containers[k] = c
	}
	for _, e := range noCPU {
		// The runtime keeps a restarted container's exited instance, with
		// no counters, beside the running one.
		if _, running := s.Containers[e.(*MissingError).Container]; !running {
			missing = append(missing, e)
		}
	}
	return s, errors.Join(missing...)
}

// parseHead reads the clock lines and the cgroup files' lines.
func parseHead(head []byte) (nodeRead, error) {
	nr := nodeRead{node: map[string]float64{}, cgroups: map[string]*cfs{}}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "clock "); ok {
			ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nr, fmt.Errorf("clock line %q: %w", line, err)
			}
			nr.clocks = append(nr.clocks, nanos(ns))
			continue
		}
		path, value, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(path, "/sys/fs/cgroup/") {
			return nr, fmt.Errorf("unexpected line in the cgroup read: %q", line)
		}
		if err := nr.add(path, value); err != nil {
			return nr, err
		}
	}
	if err := sc.Err(); err != nil {
		return nr, fmt.Errorf("read the cgroup lines: %w", err)
	}
	if len(nr.clocks) != 2 {
		return nr, fmt.Errorf("want 2 clock lines around the cgroup read, got %d", len(nr.clocks))
	}
	return nr, nil
}

// add records one "path:line" of a cgroup file.
func (nr *nodeRead) add(path, value string) error {
	dir, file := path[:strings.LastIndex(path, "/")], path[strings.LastIndex(path, "/")+1:]
	key, val := "", value
	if k, v, ok := strings.Cut(value, " "); ok {
		key, val = k, v
	}
	if file == "cpu.max" { // v2: "<quota|max> <period>"
		key, val = "", value
	}
	m := containerDir.FindStringSubmatch(dir[strings.LastIndex(dir, "/")+1:])
	if m == nil && strings.Contains(dir, "kubepods") {
		return nil // a pod or QoS cgroup: it aggregates the containers below it
	}
	if m == nil {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("%s: %q: %w", path, value, err)
		}
		nr.node[strings.TrimSpace(file+" "+key)] = f
		return nil
	}
	cg := nr.cgroups[m[1]]
	if cg == nil {
		cg = &cfs{}
		nr.cgroups[m[1]] = cg
	}
	return cg.add(path, file, key, val)
}

// add records one CFS value of a container cgroup.
func (c *cfs) add(path, file, key, val string) error {
	if file == "cpu.max" {
		q, p, _ := strings.Cut(val, " ")
		period, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return fmt.Errorf("%s: %q: %w", path, val, err)
		}
		c.period, c.quota = period, -1
		if q != "max" {
			if c.quota, err = strconv.ParseFloat(q, 64); err != nil {
				return fmt.Errorf("%s: %q: %w", path, val, err)
			}
		}
		return nil
	}
	f, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return fmt.Errorf("%s: %q: %w", path, val, err)
	}
	switch file + " " + key {
	case "cpu.cfs_quota_us ":
		c.quota = f
	case "cpu.cfs_period_us ":
		c.period = f
	case "cpu.stat nr_periods":
		c.periods = f
	case "cpu.stat nr_throttled":
		c.throttled = f
	case "cpu.stat throttled_time": // v1, ns
		c.throttledSeconds, c.hasThrottledTime = f/1e9, true
	case "cpu.stat throttled_usec": // v2
		c.throttledSeconds, c.hasThrottledTime = f/1e6, true
	}
	return nil
}

func (c *cfs) throttling(at time.Time) *kubelet.Throttling {
	t := &kubelet.Throttling{
		Periods:          kubelet.Sample{Value: c.periods, Time: at},
		ThrottledPeriods: kubelet.Sample{Value: c.throttled, Time: at},
		LimitCores:       c.quota / c.period,
	}
	if c.hasThrottledTime {
		t.ThrottledSeconds = &kubelet.Sample{Value: c.throttledSeconds, Time: at}
	}
	return t
}

// nodeSamples sets the node's CPU and working set from its cgroup, as the
// kubelet computes them (working set: usage less inactive file pages).
func (nr nodeRead) nodeSamples(s *kubelet.Snapshot) error {
	at := nr.clocks[0]
	switch {
	case has(nr.node, "cpuacct.usage"): // v1, ns
		s.NodeCPUSeconds = kubelet.Sample{Value: nr.node["cpuacct.usage"] / 1e9, Time: at}
		s.NodeWorkingSetBytes = kubelet.Sample{Value: workingSet(nr.node["memory.usage_in_bytes"], nr.node["memory.stat total_inactive_file"]), Time: at}
	case has(nr.node, "cpu.stat usage_usec"): // v2
		s.NodeCPUSeconds = kubelet.Sample{Value: nr.node["cpu.stat usage_usec"] / 1e6, Time: at}
		s.NodeWorkingSetBytes = kubelet.Sample{Value: workingSet(nr.node["memory.current"], nr.node["memory.stat inactive_file"]), Time: at}
	default:
		return errors.New("the read has no node CPU counter (cpuacct.usage or cpu.stat usage_usec of /sys/fs/cgroup)")
	}
	return nil
}

func has(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

func workingSet(usage, inactive float64) float64 {
	if inactive > usage {
		return 0
	}
	return usage - inactive
}

func nanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
