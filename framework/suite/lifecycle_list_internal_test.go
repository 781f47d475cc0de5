package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envFuncs lists, in order, the env funcs the function named fn in file
// hands to testenv.Setup and testenv.Finish, as "Setup: CheckFixtures".
func envFuncs(t *testing.T, file, fn string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err, file)
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Setup" && sel.Sel.Name != "Finish") {
				return true
			}
			for _, a := range call.Args {
				if s, ok := a.(*ast.SelectorExpr); ok {
					out = append(out, sel.Sel.Name+": "+s.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// Suite.Main is the lifecycle benchmarks/main_test.go spells out: the
// same env funcs, in the same Setup and Finish calls, in the same order.
func TestMainIsTheLifecycle(t *testing.T) {
	spelled := envFuncs(t, "../../benchmarks/main_test.go", "TestMain")
	assert.Equal(t, []string{"Setup: CheckFixtures", "Setup: CreateCluster", "Setup: LoadImages", "Setup: SetUpTarget",
		"Finish: Report", "Finish: ExportLogsOnFailure", "Finish: TearDown"}, spelled)
	assert.Equal(t, spelled, envFuncs(t, "lifecycle.go", "Main"))
}
