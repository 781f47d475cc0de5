package gate

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check the error rates the package documents by simulation,
// with a fixed seed: log ratios drawn normal around a true ratio, 6 pairs.

// rates decides trials measurements of n pairs whose true ratio is truth
// and whose log ratios spread with sd, and returns the fraction of each
// outcome.
func rates(t *testing.T, truth, sd float64, n, trials int, decide func(Measurement) Outcome) map[Outcome]float64 {
	rng := rand.New(rand.NewPCG(7, 11))
	counts := map[Outcome]int{}
	for range trials {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Log(truth) + sd*rng.NormFloat64()
		}
		counts[decide(measure(open8, SidecarCPUPer1kReq, x...))]++
	}
	out := map[Outcome]float64{}
	for o, c := range counts {
		out[o] = float64(c) / float64(trials)
	}
	t.Logf("truth %.2f, sd %.2f, n %d: %v", truth, sd, n, out)
	return out
}

func TestErrorRatesOfOneDecision(t *testing.T) {
	g := testGate(t)
	decide := func(m Measurement) Outcome {
		v, err := g.Decide([]Measurement{m})
		require.NoError(t, err)
		return v.Outcome
	}
	// A candidate exactly at its limit (1.10) is failed, and passed, 2.5 %
	// of the time each (20000 trials, standard error 0.11 %: 2.44 % and
	// 2.58 % with this seed).
	r := rates(t, 1.10, 0.05, 6, 20000, decide)
	assert.InDelta(t, 0.025, r[Fail], 0.004, "wrong fails at the limit")
	assert.InDelta(t, 0.025, r[Pass], 0.004, "wrong passes at the limit")
	// An unchanged candidate is never failed, and, with noise well below the
	// limit (detectable change about 5.4 %), almost always passes.
	r = rates(t, 1, 0.05, 6, 4000, decide)
	assert.Zero(t, r[Fail])
	assert.Greater(t, r[Pass], 0.95)
	// A clear regression (1.30) is failed almost always.
	r = rates(t, 1.30, 0.05, 6, 4000, decide)
	assert.Greater(t, r[Fail], 0.99)
}

func TestErrorRateWhenAddingPairs(t *testing.T) {
	g := testGate(t)
	rng := rand.New(rand.NewPCG(3, 5))
	next := func(context.Context, []Labels) ([]Pair, error) {
		return []Pair{{Scenario: open8, Metric: SidecarCPUPer1kReq, Reference: 100, Candidate: 100 * math.Exp(math.Log(1.1)+0.05*rng.NormFloat64())}}, nil
	}
	decide := func(m Measurement) Outcome {
		v, _, err := g.UntilConclusive(context.Background(), []Measurement{m}, 20, next)
		require.NoError(t, err)
		return v.Outcome
	}
	// Up to three looks, 6 to 20 pairs, at the limit: still at most 2.5 %
	// wrong fails and passes (Bonferroni is conservative: 2.05 % and 2.1 %
	// with this seed).
	r := rates(t, 1.10, 0.05, 6, 4000, decide)
	assert.LessOrEqual(t, r[Fail], 0.025)
	assert.LessOrEqual(t, r[Pass], 0.025)
}
