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
// run directory. When it exits while the target runs, the supervisor starts
// it again, as a kubelet restarts a crashed container: the current
// incarnation is behind mu.
type process struct {
	name    string
	role    measure.Role
	argv    []string
	env     []string
	pod     string // the workload it belongs to: the app and its sidecar share it
	log     string
	idleRSS int64
	// admin is a sidecar's admin socket, serving pprof; "" when it has none.
	admin string
	// addrs are the listeners a (re)started incarnation must open before it
	// counts as ready.
	addrs []string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	restarts int
	// fresh says the incarnation now stopping was asked to by refresh:
	// the next starts at once and is not a restart; starts counts those.
	fresh    bool
	starts   int
	stopping bool
	// stopped is closed when the incarnation a restart asked to stop has
	// exited; nil before any restart.
	stopped <-chan struct{}
}

// supervisor owns every child process of a run.
type supervisor struct {
	dir     string
	mu      sync.Mutex
	procs   []*process
	started int
}

// restartBackoff is the pause before a restart; like the kubelet's, it
// doubles with every restart of the same process, up to a cap.
func restartBackoff(restarts int) time.Duration {
	return min(100*time.Millisecond<<min(restarts, 6), 5*time.Second)
}

// start launches argv as name and keeps it running. env is added to the
// environment.
func (s *supervisor) start(name string, role measure.Role, argv []string, env []string) (*process, error) {
	s.mu.Lock()
	n := s.started
	s.started++
	s.mu.Unlock()
	log := filepath.Join(s.dir, fmt.Sprintf("%02d-%s.log", n, strings.ReplaceAll(name, "/", "-")))
	p := &process{name: name, role: role, argv: argv, env: env, log: log}
	p.mu.Lock()
	err := p.spawnLocked(s.dir)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go s.keepRunning(p)
	return p, nil
}

// spawnLocked starts one incarnation of p, its output appended to p's
// log. p.mu is held, so stopAll cannot miss the new incarnation.
func (p *process) spawnLocked(dir string) error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s (%s): %w", p.name, p.argv[0], err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// stopGrace is how long a stopped process has to exit on SIGTERM before
// it is sent SIGKILL, as a pod's terminationGracePeriodSeconds: shorter,
// since these proxies stop within it.
const stopGrace = 3 * time.Second

// keepRunning restarts p whenever it exits, until stopAll, whatever its
// exit status: a crash, a SIGKILL, or a clean exit 0 on SIGTERM (Caddy's),
// as the kubelet restarts a container under restartPolicy Always.
func (s *supervisor) keepRunning(p *process) {
	for {
		<-p.done()
		p.mu.Lock()
		stopping, n, fresh := p.stopping, p.restarts, p.fresh
		p.fresh = false
		p.mu.Unlock()
		if stopping {
			return
		}
		if !fresh {
			time.Sleep(restartBackoff(n))
		}
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			return
		}
		if fresh {
			p.starts++
		} else {
			p.restarts++
		}
		err := p.spawnLocked(s.dir)
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// done is closed when the current incarnation exits.
func (p *process) done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// pid is the current incarnation's process id.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Restarts is how many times p was started again.
func (p *process) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// kill ends the current incarnation with SIGKILL, as a crash would; the
// supervisor starts the next one.
func (p *process) kill() error {
	if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid(), err)
	}
	return nil
}

// restart stops the current incarnation gracefully, as the kubelet stops
// a container: SIGTERM to its process group, and SIGKILL if it still runs
// grace later. It returns once SIGTERM is sent; the supervisor starts the
// next incarnation when this one has exited.
func (p *process) restart(ctx context.Context, grace time.Duration) error {
	p.mu.Lock()
	pid, exited := p.cmd.Process.Pid, p.exited
	p.stopped = exited
	p.mu.Unlock()
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("restart %s: SIGTERM to pid %d: %w", p.name, pid, err)
	}
	go func() {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-exited:
		case <-ctx.Done(): // stopAll ends what is left
		case <-timer.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}()
	return nil
}

// refresh stops p gracefully and has the supervisor start it again at
// once: a fresh process, not a crash, so neither counted in Restarts nor
// backed off (Spec.Fresh). The supervisor's settle waits for it.
func (p *process) refresh(ctx context.Context) error {
	p.mu.Lock()
	p.fresh = true
	p.mu.Unlock()
	return p.restart(ctx, stopGrace)
}

// Starts is how many times refresh started p afresh.
func (p *process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
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

// alive reports whether p's current incarnation is running.
func (p *process) alive() bool {
	select {
	case <-p.done():
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
	exited := p.done()
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
			case <-exited:
				if p.askedToStop(exited) {
					return errAskedToStop
				}
				return fmt.Errorf("%s exited before listening on %s (%v); last log lines:\n%s", p.name, addr, p.exitErr(), p.tail(15))
			case <-ctx.Done():
				return fmt.Errorf("%s not listening on %s after %v: %w; last log lines:\n%s", p.name, addr, timeout, ctx.Err(), p.tail(15))
			case <-tick.C:
			}
		}
	}
	return nil
}

// exitErr is how the last incarnation ended.
func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// settle waits until every process runs and listens again, after a fault
// or a crash, so that the next run starts on a whole deployment: a
// process asked to stop by a restart has exited and been started again,
// not still draining into the next window.
func (s *supervisor) settle(ctx context.Context, timeout time.Duration) error {
	s.mu.Lock()
	procs := append([]*process(nil), s.procs...)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, p := range procs {
		if err := p.ready(ctx, timeout); err != nil {
			return err
		}
	}
	return nil
}

// errAskedToStop is waitListening's when the incarnation it waited for
// exited because a restart asked it to: the next one is to be waited for.
var errAskedToStop = errors.New("asked to stop")

// ready waits until p's current incarnation runs and listens. An
// incarnation a restart or a refresh stops meanwhile (in a duet, the
// other arm starting its processes afresh) is waited past, to the next.
func (p *process) ready(ctx context.Context, timeout time.Duration) error {
	for {
		if err := p.awaitStopped(ctx); err != nil {
			return err
		}
		for !p.alive() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s was not restarted within %v; last log lines:\n%s", p.name, timeout, p.tail(15))
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := p.waitListening(ctx, timeout, p.addrs...); !errors.Is(err, errAskedToStop) {
			return err
		}
	}
}

// askedToStop says whether a restart asked the incarnation whose exit is
// exited to stop.
func (p *process) askedToStop(exited <-chan struct{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped == exited
}

// awaitStopped waits until the incarnation a restart asked to stop has
// exited.
func (p *process) awaitStopped(ctx context.Context) error {
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped == nil {
		return nil
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s did not stop after SIGTERM: %w; last log lines:\n%s", p.name, ctx.Err(), p.tail(15))
	}
}

// stopAll sends SIGTERM to every process group, waits up to grace, then
// SIGKILLs what is left. It returns the names of processes it had to kill.
func (s *supervisor) stopAll(grace time.Duration) error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		p.mu.Lock()
		p.stopping = true
		p.mu.Unlock()
		if p.alive() {
			_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
		}
	}
	deadline := time.After(grace)
	var errs []error
	for _, p := range procs {
		select {
		case <-p.done():
		case <-deadline:
		}
		if p.alive() {
			_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
			select {
			case <-p.done():
			case <-time.After(5 * time.Second):
				errs = append(errs, fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.pid()))
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
		out = append(out, p.pid())
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
