package readme

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExamplesOfASection(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "README.md")
	require.NoError(t, os.WriteFile(md, []byte("# T\n\n## A\n\n```go\na()\n```\n\n### A.1\n\n```go\nb()\n```\n\n```sh\nc\n```\n\n## B\n\n```go\nd()\n```\n"), 0o644))
	got, err := Examples(md, "## A")
	require.NoError(t, err)
	assert.Equal(t, []string{"a()\n", "b()\n"}, got, "a ## section holds its ### sections")
	got, err = Examples(md, "### A.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"b()\n"}, got, "a ### section ends at the next ##")
	_, err = Examples(md, "## C")
	assert.EqualError(t, err, `readme: `+md+` has no section "## C"`)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\nfunc f() { a() }\n"), 0o644))
	missing, err := Unshipped([]string{"a()", "b()\n"}, filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	assert.Equal(t, []string{"b()\n"}, missing)
}
