package testbed

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestControlPlanePhaseFigures(t *testing.T) {
	ph := ControlPlanePhase{Proxies: 4, PropagationMs: []float64{120, 80, 100, 300, 90}, CPUSeconds: 0.2, Seconds: 5, RSSBytes: 64 << 20}
	p50, ok := ph.PropagationQuantile(0.5)
	assert.True(t, ok)
	assert.Equal(t, 100.0, p50)
	p99, _ := ph.PropagationQuantile(0.99)
	assert.Equal(t, 300.0, p99, "with fewer than 100 changes, p99 is the largest")
	p20, _ := ph.PropagationQuantile(0.2)
	assert.Equal(t, 80.0, p20)
	assert.Equal(t, []float64{120, 80, 100, 300, 90}, ph.PropagationMs, "left in the order measured")
	mc, ok := ph.MilliCoresPerProxy()
	assert.True(t, ok)
	assert.InDelta(t, 10.0, mc, 1e-9) // 0.2 core-s over 5 s = 40 mcores, over 4 proxies
	mib, ok := ph.RSSMiBPerProxy()
	assert.True(t, ok)
	assert.Equal(t, 16.0, mib)

	_, ok = ControlPlanePhase{}.PropagationQuantile(0.5)
	assert.False(t, ok)
	_, ok = ControlPlanePhase{CPUSeconds: 1, Seconds: 1}.MilliCoresPerProxy()
	assert.False(t, ok, "no proxies counted")
	var none *ControlPlane
	_, ok = none.Phase(0)
	assert.False(t, ok)
	_, ok = (&ControlPlane{Phases: []ControlPlanePhase{ph}}).Phase(1)
	assert.False(t, ok)
}
