package mesh

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/internal/readme"
)

// TestREADMEMeshExamples checks that the "Adding a mesh" examples of the
// docs (README.md and docs/*.md: docs/meshes.md) are code that ships in
// this package, so they compile and never drift from it.
func TestREADMEMeshExamples(t *testing.T) {
	examples, err := readme.ExamplesOf("../..", "## Adding a mesh")
	require.NoError(t, err)
	require.Len(t, examples, 2, "a whole adapter and its registration")
	missing, err := readme.Unshipped(examples, "*.go")
	require.NoError(t, err)
	assert.Empty(t, missing, "docs examples not in framework/mesh")
}
