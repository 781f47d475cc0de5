package yamldocs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type pod struct {
	Name string `json:"name"`
}

func TestDocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.yaml")
	require.NoError(t, os.WriteFile(path, []byte("name: a\n---\nname: b\n"), 0o644))
	got, err := Docs[pod](path)
	require.NoError(t, err)
	assert.Equal(t, []pod{{"a"}, {"b"}}, got)

	require.NoError(t, os.WriteFile(path, []byte("name: a\n---\nnmae: b\n"), 0o644))
	_, err = Docs[pod](path)
	assert.ErrorContains(t, err, "yamldocs: "+path+": document 2: ")
	assert.ErrorContains(t, err, `unknown field "nmae"`)
}
