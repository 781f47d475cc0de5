package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// runDirPrefix starts the name of every local target's run directory in
// the temporary directory; ownerFile, inside it, holds its run's pid.
const (
	runDirPrefix = "meshbench-local-"
	ownerFile    = "owner.pid"
)

// newRunDir makes this run's directory and records its owner, so that a
// later run can tell it from a live one's.
func newRunDir() (string, error) {
	dir, err := os.MkdirTemp("", runDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// cleanStale removes the run directories that runs killed before their
// teardown (SIGKILL) left in the temporary directory, and says so; it
// names, and leaves, one whose owner it cannot tell.
func cleanStale(logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	var unknown []string
	defer func() {
		if len(unknown) > 0 {
			logf("local target: %d run directories with no owner recorded (from an older meshbench, or being made), e.g. %s; remove them when no run is going",
				len(unknown), unknown[0])
		}
	}()
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
		switch {
		case err != nil || perr != nil:
			unknown = append(unknown, d)
		case pid == os.Getpid() || processAlive(pid):
			// a live run's
		default:
			if err := os.RemoveAll(d); err != nil {
				logf("local target: %s: left by an earlier run (pid %d) that was killed; removing it failed: %v", d, pid, err)
				continue
			}
			logf("local target: removed %s, left by an earlier run (pid %d) that was killed before its teardown", d, pid)
		}
	}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
