package kind

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Quirks are the changes a host needs in every kind cluster it runs.
type Quirks struct {
	// CgroupV1: the host has cgroup v1, so the kubelet needs failCgroupV1: false.
	CgroupV1 bool
	// NoSysResource: the host's capability bounding set lacks
	// CAP_SYS_RESOURCE, so containerd needs restrict_oom_score_adj = true.
	NoSysResource bool
}

// String lists the quirks, or says there are none.
func (q Quirks) String() string {
	var s []string
	if q.CgroupV1 {
		s = append(s, "cgroup v1 (kubelet failCgroupV1: false)")
	}
	if q.NoSysResource {
		s = append(s, "no CAP_SYS_RESOURCE (containerd restrict_oom_score_adj = true)")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

const (
	cgroup2SuperMagic = 0x63677270
	capSysResource    = 24
)

// DetectQuirks inspects this host (which runs the Docker engine that runs
// the nodes) for the quirks kind clusters need on it.
func DetectQuirks() (Quirks, error) {
	var q Quirks
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return q, fmt.Errorf("detect cgroup version: %w", err)
	}
	q.CgroupV1 = st.Type != cgroup2SuperMagic
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return q, fmt.Errorf("detect capabilities: %w", err)
	}
	defer f.Close()
	bnd, err := capBnd(f)
	if err != nil {
		return q, fmt.Errorf("detect capabilities: %w", err)
	}
	q.NoSysResource = bnd&(1<<capSysResource) == 0
	return q, nil
}

// capBnd reads the CapBnd mask from a /proc/<pid>/status file.
func capBnd(status *os.File) (uint64, error) {
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no CapBnd line")
}
