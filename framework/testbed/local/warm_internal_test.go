package local

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

// An arm is warmed up before its first window at a load, on every shard,
// and not before later windows at the same load; another path,
// concurrency or rate is another load; a flow keeps its ramp; after
// forget (a fault, a restart) every load is cold again.
func TestWarmOnceAtEachLoad(t *testing.T) {
	const w = 300 * time.Millisecond
	shards := func(c int, qps float64) []load.Options {
		return []load.Options{{Concurrency: c, QPS: qps, Warmup: w}, {Concurrency: c, QPS: qps, Warmup: w}}
	}
	warmupsOf := func(ss []load.Options) []time.Duration {
		var out []time.Duration
		for _, s := range ss {
			out = append(out, s.Warmup)
		}
		return out
	}
	one, two := testbed.Workload{Path: testbed.OneHop}, testbed.Workload{Path: testbed.TwoHop}
	ws := warmups{}
	run := func(wl testbed.Workload, ss []load.Options) []time.Duration {
		ws.warmOnce(wl, ss)
		return warmupsOf(ss)
	}

	assert.Equal(t, []time.Duration{w, w}, run(one, shards(8, 0)), "first window at c=8")
	assert.Equal(t, []time.Duration{-1, -1}, run(one, shards(8, 0)), "second window at c=8: none")
	assert.Equal(t, []time.Duration{w, w}, run(one, shards(16, 0)), "c=16 is another load")
	assert.Equal(t, []time.Duration{w, w}, run(one, shards(16, 500)), "an open loop at 500 req/s is another load")
	assert.Equal(t, []time.Duration{w, w}, run(two, shards(8, 0)), "two hops is another load")
	assert.Equal(t, []time.Duration{-1, -1}, run(two, shards(8, 0)))

	flow := []load.Options{{Concurrency: 20, Flow: &load.Flow{}}}
	assert.Equal(t, []time.Duration{0}, run(one, flow), "a flow's ramp is its warm-up: untouched")
	assert.Equal(t, []time.Duration{0}, run(one, flow))

	ws.forget()
	assert.Equal(t, []time.Duration{w, w}, run(one, shards(8, 0)), "cold again after forget")
	assert.Equal(t, []time.Duration{-1, -1}, run(one, shards(8, 0)))
}
