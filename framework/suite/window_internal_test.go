package suite

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
)

// The window a run measures when -duration is not given: short for the
// local main job, 3 s for a local gate, 10 s on a cluster; go test's
// -benchtime as a duration is the window.
func TestDefaultWindows(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want time.Duration
	}{
		{"local main job", Config{Target: "local"}, MainJobWindow},
		{"local gate with a candidate", Config{Target: "local", Candidate: "caddy+access-log"}, LocalGateWindow},
		{"local gate against a stored run", Config{Target: "local", Reference: "r.json"}, LocalGateWindow},
		{"local run stored as a gate's reference", Config{Target: "local", StoreReference: true}, LocalGateWindow},
		{"kind", Config{Target: "kind"}, ClusterWindow},
		{"remote", Config{Target: "remote"}, ClusterWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.c.defaultWindow())
		})
	}
	assert.Equal(t, time.Second, MainJobWindow)
}

// -warmup=0 is no warm-up, not the loadgen's default of 1 s: the window
// says none with a negative Warmup, and keeps any other -warmup.
func TestNoWarmupIsNone(t *testing.T) {
	c := Config{Warmup: 0, Duration: time.Second}
	assert.Equal(t, time.Duration(-1), c.window(2).Warmup)
	o := testbed.LoadOptions(testbed.Workload{}, c.window(2))
	o.URL = "http://127.0.0.1:8080/"
	require.NoError(t, o.Normalize())
	assert.Zero(t, o.Warmup, "the loadgen runs no warm-up")
	c.Warmup = 300 * time.Millisecond
	assert.Equal(t, 300*time.Millisecond, c.window(2).Warmup)
}

func TestBenchtimeIsTheWindow(t *testing.T) {
	old := flagValue("test.benchtime")
	t.Cleanup(func() { _ = flag.Set("test.benchtime", old) })
	for _, tc := range []struct {
		benchtime string
		set       map[string]bool
		want      time.Duration
		err       string
	}{
		{"2500ms", map[string]bool{"test.benchtime": true}, 2500 * time.Millisecond, ""},
		{"5x", map[string]bool{"test.benchtime": true}, 0, ""},
		{"2s", map[string]bool{}, 0, ""}, // not given by the user
		{"2s", map[string]bool{"test.benchtime": true, "duration": true}, 0, "-benchtime=2s and -duration=0s: give one (both set the measured window)"},
	} {
		require.NoError(t, flag.Set("test.benchtime", tc.benchtime))
		c := Config{}
		err := c.benchtimeWindow(tc.set)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.Duration, tc.benchtime)
	}
}

// The time left is planned from the windows until the runs take longer.
func TestPerRunLearnsFromTheRuns(t *testing.T) {
	assert.Equal(t, 4*time.Second, perRun(4*time.Second, 0, 0))
	assert.Equal(t, 4*time.Second, perRun(4*time.Second, 6*time.Second, 2), "3 s a run: the plan stands")
	assert.Equal(t, 30*time.Second, perRun(4*time.Second, 90*time.Second, 3))
}

// The local target's warm-up is LocalWarmup unless -warmup was given; a
// cluster's, and a warm-up set in code, stay as they are.
func TestLocalWarmupDefault(t *testing.T) {
	for _, tc := range []struct {
		target string
		warmup time.Duration
		set    map[string]bool
		want   time.Duration
	}{
		{"local", ClusterWarmup, map[string]bool{}, LocalWarmup},
		{"local", ClusterWarmup, map[string]bool{"warmup": true}, ClusterWarmup}, // -warmup=300ms given
		{"local", time.Second, map[string]bool{}, time.Second},                   // set in code
		{"kind", ClusterWarmup, map[string]bool{}, ClusterWarmup},
		{"remote", ClusterWarmup, map[string]bool{}, ClusterWarmup},
	} {
		c := Config{Target: tc.target, Warmup: tc.warmup}
		c.localWarmup(tc.set)
		assert.Equal(t, tc.want, c.Warmup, "%s %v %v", tc.target, tc.warmup, tc.set)
	}
	assert.Equal(t, 150*time.Millisecond, LocalWarmup)
}
