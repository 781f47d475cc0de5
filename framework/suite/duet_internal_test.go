package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/testbed"
)

// In sequential mode a round is every arm alone, in ABBA order; in a
// duet the reference and the candidate are one unit, started in the
// order the seed draws for the round, and a baseline runs alone beside
// it, before it in even rounds and after it in odd ones.
func TestRoundUnits(t *testing.T) {
	ref, cand, base := testbed.Reference, testbed.Candidate, testbed.Baseline
	one := func(a testbed.Arm) []testbed.Arm { return []testbed.Arm{a} }
	seq := NewWithConfig(&Config{GateMode: testbed.Sequential, Candidate: "caddy"})
	assert.Equal(t, [][]testbed.Arm{one(ref), one(cand)}, seq.roundUnits([]testbed.Arm{ref, cand}, 0))
	assert.Equal(t, [][]testbed.Arm{one(cand), one(ref)}, seq.roundUnits([]testbed.Arm{ref, cand}, 1))

	const seed = 9
	duet := NewWithConfig(&Config{GateMode: testbed.Duet, GateSeed: seed, Candidate: "caddy"})
	for rep := range 6 {
		order := testbed.DuetOrder([]testbed.Arm{ref, cand}, seed, rep)
		assert.Equal(t, [][]testbed.Arm{order}, duet.roundUnits([]testbed.Arm{ref, cand}, rep), "round %d", rep)
		want := [][]testbed.Arm{one(base), order}
		if rep%2 == 1 {
			want = [][]testbed.Arm{order, one(base)}
		}
		assert.Equal(t, want, duet.roundUnits([]testbed.Arm{base, ref, cand}, rep), "round %d with a baseline", rep)
	}
	assert.Equal(t, [][]testbed.Arm{one(base), one(testbed.Meshed)}, duet.roundUnits(testbed.Arms, 0), "no reference and candidate: no duet")
}
