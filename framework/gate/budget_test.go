package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetRate runs trials of one decision of a 6-decision verdict as the
// suite's gate loop runs it: a pair at a time from MinPairsToDecide, until
// the decision is conclusive, its outlook futile, or q.Max pairs. The log
// ratios are normal around ln(truth) with spread sd, against the test
// fixture's 10 % CPU limit. It returns the share of each outcome and the
// mean pairs used.
func budgetRate(t *testing.T, truth, sd float64, q Sequential, trials int) (map[Outcome]float64, float64) {
	t.Helper()
	g := testGate(t)
	rng := rand.New(rand.NewPCG(13, 17))
	counts, pairs := map[Outcome]int{}, 0
	for range trials {
		m := measure(open8, SidecarCPUPer1kReq)
		for range q.Max {
			m.Reference = append(m.Reference, 100)
			m.Candidate = append(m.Candidate, 100*math.Exp(math.Log(truth)+sd*rng.NormFloat64()))
			if len(m.Reference) < MinPairsToDecide {
				continue
			}
			v, err := g.DecideSequential([]Measurement{m}, q)
			require.NoError(t, err)
			if v.Outcome != Inconclusive || v.Futile() || len(m.Reference) == q.Max {
				counts[v.Outcome]++
				break
			}
		}
		pairs += len(m.Reference)
	}
	out := map[Outcome]float64{}
	for o, c := range counts {
		out[o] = float64(c) / float64(trials)
	}
	return out, float64(pairs) / float64(trials)
}

// An unchanged sidecar's open-loop p99 on a bad day: pairs with a per-pair
// SD of 16 % (measured on the emulated bad day of docs/gate.md) against
// the 15 % limit, which is the test fixture's 10 % limit with the truth at
// 1.10/1.15. Within a cluster's 30 pairs about 1 gate in 8 ends
// inconclusive (17 of 20 passed on that day); within the local target's 60
// nearly every gate passes, and none fails, in about 21 pairs on average.
func TestLocalBudgetDecidesANoisyAAGate(t *testing.T) {
	aa := 1.10 / 1.15
	q := Sequential{Max: DefaultMaxPairs, Decisions: 6}
	short, shortPairs := budgetRate(t, aa, 0.16, q, 1000)
	q.Max = DefaultLocalMaxPairs
	long, longPairs := budgetRate(t, aa, 0.16, q, 1000)
	t.Logf("within %d pairs: %v, %.1f pairs; within %d: %v, %.1f pairs", DefaultMaxPairs, short, shortPairs, DefaultLocalMaxPairs, long, longPairs)

	assert.InDelta(t, 0.87, short[Pass], 0.03)
	assert.InDelta(t, 0.13, short[Inconclusive], 0.03)
	assert.GreaterOrEqual(t, long[Pass], 0.995)
	assert.LessOrEqual(t, long[Fail], 0.002)
	assert.Less(t, longPairs, 25.0, "a gate that decides stops when it does")
	assert.Greater(t, longPairs, shortPairs)
}
