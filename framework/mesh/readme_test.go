package mesh

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/internal/readme"
)

// TestREADMEMeshExamples checks that the README's "Adding a mesh"
// examples are code that ships in this package, so they compile and never
// drift from it.
func TestREADMEMeshExamples(t *testing.T) {
	examples, err := readme.Examples("../../README.md", "### Adding a mesh")
	require.NoError(t, err)
	require.Len(t, examples, 2, "a whole adapter and its registration")
	missing, err := readme.Unshipped(examples, "*.go")
	require.NoError(t, err)
	assert.Empty(t, missing, "README examples not in framework/mesh")
}
