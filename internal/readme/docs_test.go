package readme

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module's root, from this package's directory.
const root = "../.."

// pendingDocs are docs the README and docs/ link to that another branch
// adds, each with where it comes from: such a link is not broken while the
// file is absent, and is checked like any other once it is there. None
// now: docs/workflows.md was one until the workflows branch merged.
var pendingDocs = map[string]string{}

// TestEveryDocLinkResolves: every relative link of README.md and
// docs/*.md names a file that exists and, with a #anchor, a heading of
// that file.
func TestEveryDocLinkResolves(t *testing.T) {
	files, err := Files(root)
	require.NoError(t, err)
	require.Greater(t, len(files), 1, "README.md and docs/*.md")
	broken, err := BrokenLinks(root, files, pendingDocs)
	require.NoError(t, err)
	assert.Empty(t, broken, "links of README.md and docs/*.md that do not resolve")
}

// TestEveryDocGoExampleShips: every ```go block of README.md and
// docs/*.md is, word for word, in a Go file of the module, so it compiles
// and does not drift from the code (the examples of a section are checked
// against their own package by TestREADMEExamples in benchmarks and
// TestREADMEMeshExamples in framework/mesh).
func TestEveryDocGoExampleShips(t *testing.T) {
	files, err := Files(root)
	require.NoError(t, err)
	var goFiles []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			goFiles = append(goFiles, path)
		}
		return nil
	}))
	n := 0
	for _, f := range files {
		examples, err := GoExamples(f)
		require.NoError(t, err)
		n += len(examples)
		missing, err := unshippedIn(examples, goFiles)
		require.NoError(t, err)
		assert.Empty(t, missing, "%s: Go examples in no Go file of the module", f)
	}
	assert.Positive(t, n, "the docs have Go examples")
}
