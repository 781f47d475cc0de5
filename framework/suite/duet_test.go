package suite_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// A short real local run in duet mode (tiny windows, no decision): every
// round runs the reference and the candidate at once, their measured
// windows overlap, and each record says so: the mode, the order drawn
// from the recorded seed, its own window and the overlap, which the
// windows recompute. Behaviour, not speed: nothing here reads a figure.
func TestDuetRoundsRunTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 15 s; run without -short")
	}
	const seed, rounds = 42, 4
	s, _ := newSuite(t, "-concurrency", "2", "-duration", "1s", "-warmup", "200ms", "-thresholds", "none", "-gate", "none",
		"-candidate", "caddy", "-gate-mode", "duet", "-gate-seed", "42")
	s.Config.Repeats = rounds
	setUp(t, s)
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkDuet", Path: testbed.OneHop, Arms: s.GateArms()})
	})
	byRound := map[int]map[testbed.Arm]report.Record{}
	for _, r := range s.Records() {
		if byRound[r.Repeat] == nil {
			byRound[r.Repeat] = map[testbed.Arm]report.Record{}
		}
		byRound[r.Repeat][r.Arm] = r
	}
	require.Len(t, byRound, rounds)
	firsts := map[testbed.Arm]int{}
	for rep := range rounds {
		ref, cand := byRound[rep][testbed.Reference], byRound[rep][testbed.Candidate]
		require.NotNil(t, ref.Run, "round %d: the reference ran", rep)
		require.NotNil(t, cand.Run, "round %d: the candidate ran", rep)
		order := testbed.DuetOrder([]testbed.Arm{testbed.Reference, testbed.Candidate}, seed, rep)
		firsts[order[0]]++
		for _, r := range []report.Record{ref, cand} {
			require.NotNil(t, r.Pair, "round %d %s: the pair recorded", rep, r.Arm)
			assert.Equal(t, report.Pair{Mode: testbed.Duet, Order: order, Seed: seed, Window: testbed.WindowSpan(r.Run), Overlap: r.Pair.Overlap}, *r.Pair)
			assert.False(t, r.Invalid.Has(validity.DuetApart), "round %d %s: %s", rep, r.Arm, r.Invalid)
		}
		ov := testbed.Overlap(ref.Pair.Window, cand.Pair.Window)
		assert.InDelta(t, ov, ref.Pair.Overlap, 1e-12, "round %d: the overlap recomputes from the windows", rep)
		assert.GreaterOrEqual(t, ov, testbed.MinDuetOverlap, "round %d: the halves ran together (%s, %s)", rep, ref.Pair.Window, cand.Pair.Window)
	}
	assert.Equal(t, map[testbed.Arm]int{testbed.Reference: rounds / 2, testbed.Candidate: rounds / 2}, firsts, "each arm started first in half the rounds")
	// The runs may be invalid for other reasons (a busy machine): the
	// results are written all the same.
	_ = s.Finish()
	checkStoredDuet(t, s.Config.ResultsDir, seed)
}

// checkStoredDuet reads the run's results file: its settings record the
// mode and the seed, and every record its pair.
func checkStoredDuet(t *testing.T, dir string, seed uint64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var stored struct {
		Settings struct {
			GateMode testbed.Mode `json:"gateMode"`
			GateSeed uint64       `json:"gateSeed"`
		} `json:"settings"`
		Records []struct {
			Pair *report.Pair `json:"pair"`
		} `json:"records"`
	}
	require.NoError(t, json.Unmarshal(data, &stored))
	assert.Equal(t, testbed.Duet, stored.Settings.GateMode)
	assert.Equal(t, seed, stored.Settings.GateSeed)
	require.NotEmpty(t, stored.Records)
	for _, r := range stored.Records {
		require.NotNil(t, r.Pair)
		assert.Equal(t, testbed.Duet, r.Pair.Mode)
		assert.False(t, r.Pair.Window.Start.IsZero(), "each half's window is stored")
	}
}
