package mesh

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEMeshExamples checks that the README's "Adding a mesh"
// examples are code that ships in this package, so they compile and never
// drift from it.
func TestREADMEMeshExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "### Adding a mesh")
	require.GreaterOrEqual(t, start, 0, "README has an Adding a mesh section")
	section = section[start:]
	if end := strings.Index(section[4:], "\n## "); end > 0 {
		section = section[:end+4]
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "a whole adapter and its registration")
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var code strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		code.Write(data)
	}
	for _, b := range blocks {
		assert.Contains(t, code.String(), b[1], "README example not in framework/mesh")
	}
}
