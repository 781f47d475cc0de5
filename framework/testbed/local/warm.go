package local

import (
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

// warmKey is the load an arm was warmed up at: the sidecars grow their
// upstream connection pools to the concurrency, so another concurrency,
// rate or request shape is a load the arm has not seen.
type warmKey struct {
	path           testbed.Path
	concurrency    int
	qps            float64
	requestSize    int
	newConnections bool
}

// warmups keeps which loads each arm of a deployment was warmed up at.
type warmups map[warmKey]bool

func keyOf(w testbed.Workload, o load.Options) warmKey {
	return warmKey{path: w.Path, concurrency: o.Concurrency, qps: o.QPS, requestSize: o.RequestSize, newConnections: o.NewConnections}
}

// warmOnce gives the shards their warm-up only for the arm's first window
// at this load: a later window at the same load follows without one. A
// window opens its own loadgen connections either way, and on the 2-core
// machine (2026-12-06, two main jobs of 165 windows, 50 ms timelines) its
// first 100 ms read the same with a 300 ms warm-up before it as without:
// the rate at 0.72 and 0.97 of the rest of the window (without: 0.75 and
// 0.95). Only an arm's first window at a load started lower without one
// (0.56 and 0.89, the sidecars opening their pools), and like the others
// with it (0.68 and 0.95). A flow's ramp is its own warm-up.
func (ws warmups) warmOnce(w testbed.Workload, shards []load.Options) {
	if len(shards) == 0 || shards[0].Flow != nil || shards[0].Warmup < 0 {
		return
	}
	k := keyOf(w, shards[0])
	if ws[k] {
		for i := range shards {
			shards[i].Warmup = -1 // none (load.Options)
		}
		return
	}
	ws[k] = true
}

// forget makes every load cold again: after a fault, or a process that
// restarted, the new process has no pools.
func (ws warmups) forget() { clear(ws) }
