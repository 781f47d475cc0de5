package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An unchanged sidecar's open-loop p99 on a bad day: pairs with a per-pair
// SD of 16 % (measured on the emulated bad day of docs/gate.md) against
// the 15 % limit, which is the test fixture's 10 % limit with the truth at
// 1.10/1.15. Within a cluster's 30 pairs about 1 gate in 8 ends
// inconclusive (17 of 20 passed on that day); within the local target's 60
// nearly every gate passes, and none fails, in about 21 pairs on average.
func TestLocalBudgetDecidesANoisyAAGate(t *testing.T) {
	aa := 1.10 / 1.15
	q := Sequential{Max: DefaultMaxPairs, Decisions: 6}
	short, shortPairs := simulateSequential(t, aa, 0.16, q, 1000, true)
	q.Max = DefaultLocalMaxPairs
	long, longPairs := simulateSequential(t, aa, 0.16, q, 1000, true)
	t.Logf("within %d pairs: %v, %.1f pairs; within %d: %v, %.1f pairs", DefaultMaxPairs, short, shortPairs, DefaultLocalMaxPairs, long, longPairs)

	assert.InDelta(t, 0.87, short[Pass], 0.03)
	assert.InDelta(t, 0.13, short[Inconclusive], 0.03)
	assert.GreaterOrEqual(t, long[Pass], 0.995)
	assert.LessOrEqual(t, long[Fail], 0.002)
	assert.Less(t, longPairs, 25.0, "a gate that decides stops when it does")
	assert.Greater(t, longPairs, shortPairs)
}
