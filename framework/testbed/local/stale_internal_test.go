package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run directory whose owner is dead (a run killed before its teardown)
// is removed and named; a live owner's stays, and so does one with no
// owner recorded, named in one line.
func TestCleanStaleRunDirectories(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	mk := func(name, owner string) string {
		d := filepath.Join(tmp, runDirPrefix+name)
		require.NoError(t, os.Mkdir(d, 0o755))
		if owner != "" {
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644))
		}
		return d
	}
	killed := mk("1", strconv.Itoa(dead.Process.Pid))
	live := mk("2", "1")
	unknown := mk("3", "")
	var logs []string
	cleanStale(func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	assert.Equal(t, []string{
		fmt.Sprintf("local target: removed %s, left by an earlier run (pid %d) that was killed before its teardown", killed, dead.Process.Pid),
		fmt.Sprintf("local target: 1 run directories with no owner recorded (from an older meshbench, or being made), e.g. %s; remove them when no run is going", unknown),
	}, logs)
	assert.NoDirExists(t, killed)
	assert.DirExists(t, live)
	assert.DirExists(t, unknown)

	dir, err := newRunDir()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid()), string(data))
}
