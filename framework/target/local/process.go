package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
)

// process is one child the target started. It runs in its own process
// group, dies with the test binary (Pdeathsig), and logs to a file in the
// run directory.
type process struct {
	name    string
	role    measure.Role
	pod     string // the workload it belongs to: the app and its sidecar share it
	cmd     *exec.Cmd
	log     string
	idleRSS int64
	exited  chan struct{}
	waitErr error
}

// supervisor owns every child process of a run.
type supervisor struct {
	dir   string
	mu    sync.Mutex
	procs []*process
}

// start launches argv as name. env is added to the environment.
func (s *supervisor) start(name string, role measure.Role, argv []string, env []string) (*process, error) {
	logPath := filepath.Join(s.dir, strings.ReplaceAll(name, "/", "-")+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	p := &process{name: name, role: role, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// tail returns the last lines of p's log, for error messages.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(bytes.TrimSpace(b)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// alive reports whether p is still running.
func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitListening waits until every addr accepts TCP connections, failing
// fast with p's log when p exits first.
func (p *process) waitListening(ctx context.Context, timeout time.Duration, addrs ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, addr := range addrs {
		for {
			c, err := (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-p.exited:
				return fmt.Errorf("%s exited before listening on %s (%v); last log lines:\n%s", p.name, addr, p.waitErr, p.tail(15))
			case <-ctx.Done():
				return fmt.Errorf("%s not listening on %s after %v: %w; last log lines:\n%s", p.name, addr, timeout, ctx.Err(), p.tail(15))
			case <-tick.C:
			}
		}
	}
	return nil
}

// stopAll sends SIGTERM to every process group, waits up to grace, then
// SIGKILLs what is left. It returns the names of processes it had to kill.
func (s *supervisor) stopAll(grace time.Duration) error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		if p.alive() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := time.After(grace)
	var errs []error
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline:
		}
		if p.alive() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				errs = append(errs, fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.cmd.Process.Pid))
			}
		}
	}
	return errors.Join(errs...)
}

// pids lists the running children.
func (s *supervisor) pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}

// freePorts reserves n distinct loopback ports.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
