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

func TestExamplesOfTheDocs(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("# T\n\n## A\n\n```go\na()\n```\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "b.md"), []byte("# B\n\n## B.1\n\n```go\nb()\n```\n\n## A\n\n```go\nc()\n```\n"), 0o644))
	files, err := Files(root)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs", "b.md")}, files)
	got, err := ExamplesOf(root, "## B.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"b()\n"}, got, "a section found in docs/")
	_, err = ExamplesOf(root, "## A")
	assert.ErrorContains(t, err, `section "## A" in 2 files`)
	_, err = ExamplesOf(root, "## C")
	assert.ErrorContains(t, err, `no section "## C"`)
	all, err := GoExamples(filepath.Join(root, "docs", "b.md"))
	require.NoError(t, err)
	assert.Equal(t, []string{"b()\n", "c()\n"}, all)
}

func TestSlugIsGitHubs(t *testing.T) {
	for heading, slug := range map[string]string{
		"Writing a scenario":                      "writing-a-scenario",
		"CPU on a remote cluster: the node agent": "cpu-on-a-remote-cluster-the-node-agent",
		"HTTP/2 and gRPC":                         "http2-and-grpc",
		"CI time (.ci/run)":                       "ci-time-cirun",
		"The gate's open-loop rate":               "the-gates-open-loop-rate",
		"Placement, shards and faults":            "placement-shards-and-faults",
		"`meshbench gate` in CI":                  "meshbench-gate-in-ci",
		"See [the docs](docs/x.md)":               "see-the-docs",
	} {
		assert.Equal(t, slug, Slug(heading), heading)
	}
}

func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	readme := filepath.Join(root, "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("# T\n\n## Run it\n\n"+
		"[ok](docs/a.md) [ok](docs/a.md#a-b) [ok](#run-it) [web](https://example.com) `[code](nowhere.md)`\n"+
		"[gone](docs/gone.md) [bad anchor](docs/a.md#nope) [pending](docs/later.md)\n"+
		"```\n[in a block](nowhere.md)\n```\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("# A\n\n## A: b\n\n[up](../README.md#run-it) [dup](#a)\n\n## A\n"), 0o644))
	files, err := Files(root)
	require.NoError(t, err)
	broken, err := BrokenLinks(root, files, map[string]string{"docs/later.md": "another branch"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		readme + ":6: docs/gone.md: no such file",
		readme + ":6: docs/a.md#nope: no heading makes #nope",
	}, broken)
}
