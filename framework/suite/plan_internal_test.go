package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFitWindow(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name           string
		left           time.Duration
		runs           int
		overhead, want time.Duration
		ok             bool
	}{
		{"fits as asked", 100 * s, 10, 400 * time.Millisecond, 3 * s, true},                       // 34 s of 100
		{"exactly", 34 * s, 10, 400 * time.Millisecond, 3 * s, true},                              // 10 × 3.4 s
		{"shortened", 20 * s, 10, 400 * time.Millisecond, 1600 * time.Millisecond, true},          // 2 s a run, less 0.4
		{"truncated to 0.1 s", 25 * s, 12, 400 * time.Millisecond, 1600 * time.Millisecond, true}, // 2.083 s a run
		{"at the least", 14 * s, 10, 400 * time.Millisecond, 1000 * time.Millisecond, true},       // 1.4 s a run
		{"under the least: skipped", 13 * s, 10, 400 * time.Millisecond, 0, false},                // 1.3 s a run
		{"nothing left", -5 * s, 10, 400 * time.Millisecond, 0, false},                            // past the end
		{"no runs", 0, 0, 400 * time.Millisecond, 3 * s, true},                                    // nothing to fit
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := fitWindow(tc.left, tc.runs, tc.overhead, 3*s, s)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTopLevelOfABenchPattern(t *testing.T) {
	for pattern, want := range map[string]string{
		".":                       ".",
		"OneHop$":                 "OneHop$",
		"OneHop$/c=8":             "OneHop$",
		"Upgrade[/]Gate/c=8":      "Upgrade[/]Gate",
		`One\/Hop/c=1`:            `One\/Hop`,
		"(OneHop|TwoHop/x)/c=1":   "(OneHop|TwoHop/x)",
		"^BenchmarkUpgradeGate$/": "^BenchmarkUpgradeGate$",
	} {
		assert.Equal(t, want, topLevel(pattern), pattern)
	}
}
