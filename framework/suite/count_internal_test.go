package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A gate against a stored reference, and the run stored as one, default to GateRepeats repeats; a
// gate with a candidate, which adds rounds while undecided, and the main
// job to DefaultRepeats; a -count the user set always wins.
func TestDefaultCount(t *testing.T) {
	user := map[string]bool{"test.count": true}
	for _, tc := range []struct {
		name string
		cfg  Config
		set  map[string]bool
		want int
	}{
		{"main job", Config{DefaultRepeats: 3}, nil, 3},
		{"candidate", Config{DefaultRepeats: 3, Candidate: "caddy@v2.10.2"}, nil, 3},
		{"stored reference", Config{DefaultRepeats: 3, Reference: "r.json"}, nil, 6},
		{"stored as a reference", Config{DefaultRepeats: 3, StoreReference: true}, nil, 6},
		{"more than the gate's", Config{DefaultRepeats: 8, Reference: "r.json"}, nil, 8},
		{"user's -count", Config{DefaultRepeats: 3, Candidate: "caddy@v2.10.2"}, user, 0},
		{"one run", Config{DefaultRepeats: 1}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.cfg.defaultCount(tc.set))
		})
	}
}

// DefaultCount is the rounds a run gets without -count: never fewer than one.
func TestDefaultCountExported(t *testing.T) {
	assert.Equal(t, 3, (&Config{DefaultRepeats: 3}).DefaultCount())
	assert.Equal(t, 6, (&Config{DefaultRepeats: 3, StoreReference: true}).DefaultCount())
	assert.Equal(t, 1, (&Config{DefaultRepeats: 1}).DefaultCount())
}
