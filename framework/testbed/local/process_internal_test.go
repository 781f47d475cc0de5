package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
)

// TestRestartedProcessComesBack: a restart sends SIGTERM, and the
// supervisor starts the process again whether it exits 0 on it, as Caddy
// does, or ignores it and is sent SIGKILL after the grace; settle waits
// for the new incarnation.
func TestRestartedProcessComesBack(t *testing.T) {
	cases := []struct {
		name, script string
		signal       syscall.Signal // what ended it; 0 for a clean exit
	}{
		{"exits 0 on SIGTERM", `trap 'exit 0' TERM; echo ready; sleep 600 & wait`, 0},
		{"ignores SIGTERM", `trap '' TERM; echo ready; sleep 600 & wait`, syscall.SIGKILL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sup := &supervisor{dir: t.TempDir()}
			t.Cleanup(func() { assert.NoError(t, sup.stopAll(200*time.Millisecond)) })
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			p, err := sup.start("app", measure.RoleApp, []string{"sh", "-c", tc.script}, nil)
			require.NoError(t, err)
			require.NoError(t, waitLines(ctx, p, 1), "the trap is set")
			pid, exited := p.pid(), p.done()

			require.NoError(t, p.restart(ctx, 200*time.Millisecond))
			select {
			case <-exited:
			case <-ctx.Done():
				t.Fatalf("pid %d still runs", pid)
			}
			var ee *exec.ExitError
			if tc.signal == 0 {
				assert.NoError(t, p.exitErr(), "a clean exit")
			} else if assert.ErrorAs(t, p.exitErr(), &ee) {
				assert.Equal(t, tc.signal, ee.Sys().(syscall.WaitStatus).Signal())
			}

			require.NoError(t, sup.settle(ctx, time.Minute))
			assert.True(t, p.alive())
			assert.NotEqual(t, pid, p.pid(), "a new incarnation")
			assert.Equal(t, 1, p.Restarts())
			assert.NoError(t, waitLines(ctx, p, 2), "the new incarnation runs the script")
		})
	}
}

// TestRefreshedProcessStartsAfresh: a refresh (-gate-fresh) stops the
// process gracefully and the supervisor starts it again, not counted as a
// restart (nor backed off as one), however many times.
func TestRefreshedProcessStartsAfresh(t *testing.T) {
	sup := &supervisor{dir: t.TempDir()}
	t.Cleanup(func() { assert.NoError(t, sup.stopAll(200*time.Millisecond)) })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := sup.start("app", measure.RoleApp, []string{"sh", "-c", `trap 'exit 0' TERM; echo ready; sleep 600 & wait`}, nil)
	require.NoError(t, err)
	require.NoError(t, waitLines(ctx, p, 1), "the trap is set")
	for i := 1; i <= 8; i++ {
		pid := p.pid()
		require.NoError(t, p.refresh(ctx))
		require.NoError(t, sup.settle(ctx, time.Minute))
		require.NoError(t, waitLines(ctx, p, i+1), "incarnation %d runs the script", i+1)
		assert.NotEqual(t, pid, p.pid(), "a new incarnation")
	}
	assert.Equal(t, 8, p.Starts())
	assert.Equal(t, 0, p.Restarts(), "a fresh start is not a crash")
	// A crash after them is one, backed off as the first.
	pid, exited := p.pid(), p.done()
	require.NoError(t, p.kill())
	<-exited
	require.NoError(t, sup.settle(ctx, time.Minute))
	assert.NotEqual(t, pid, p.pid())
	assert.Equal(t, 1, p.Restarts())
}

// waitLines waits until p's log has n lines.
func waitLines(ctx context.Context, p *process, n int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(p.log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if strings.Count(string(b), "\n") >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
