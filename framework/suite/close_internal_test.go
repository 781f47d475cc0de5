package suite

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/target"
)

// TestInterruptDuringSetUpWaitsForItsCleanUp is Ctrl-C while the target is
// being set up (a kind cluster created, a mesh half installed): the
// teardown must wait for the set-up to delete what it made before the
// process exits, though the suite has no target to close yet.
func TestInterruptDuringSetUpWaitsForItsCleanUp(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	s := NewWithConfig(&Config{Target: "kind"})
	s.Log, s.ctx = io.Discard, ctx
	started := make(chan struct{})
	var cleaned atomic.Bool
	s.NewTarget = func(ctx context.Context, _ *Config, _ func(string, ...any)) (target.Target, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // deleting what it created
		cleaned.Store(true)
		return nil, ctx.Err()
	}
	go func() { _, _ = s.target() }()
	<-started
	interrupt()
	require.NoError(t, s.close())
	assert.True(t, cleaned.Load(), "close returned before the set-up had cleaned up")
	_, err := s.target()
	assert.ErrorIs(t, err, context.Canceled)
}
