package benchmarks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEExamples checks that the README's "Writing a scenario"
// examples are the code that ships in this package, so they compile and
// run (TestEveryScenarioRunsLocally) and never drift from it.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "### Writing a scenario")
	require.GreaterOrEqual(t, start, 0, "README has a Writing a scenario section")
	section = section[start:]
	if end := strings.Index(section[4:], "\n### "); end > 0 {
		section = section[:end+4]
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 3, "a sweep, a fault and a client setting")
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var code strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		code.Write(data)
	}
	for _, b := range blocks {
		assert.Contains(t, code.String(), b[1], "README example not in benchmarks/")
		assert.LessOrEqual(t, strings.Count(b[1], "\n"), 25, "an example is at most about 25 lines")
	}
}
