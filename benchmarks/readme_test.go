package benchmarks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/internal/readme"
)

// TestREADMEExamples checks that the "Writing a scenario" examples of
// the docs (README.md and docs/*.md: docs/scenarios.md) are the code that
// ships in this package, so they compile and run
// (TestEveryScenarioRunsLocally) and never drift from it.
func TestREADMEExamples(t *testing.T) {
	examples, err := readme.ExamplesOf("..", "## Writing a scenario")
	require.NoError(t, err)
	require.Len(t, examples, 3, "a sweep, a fault and a client setting")
	missing, err := readme.Unshipped(examples, "*_test.go")
	require.NoError(t, err)
	assert.Empty(t, missing, "docs examples not in benchmarks/")
	for _, e := range examples {
		assert.LessOrEqual(t, strings.Count(e, "\n"), 25, "an example is at most about 25 lines")
	}
}
