package suite_test

import (
	"flag"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/suite"
)

// flagNamedElsewhere are the flag names still written outside the suite,
// each where and why; the list only shrinks.
var flagNamedElsewhere = map[string]string{
	// The verdict's Markdown is also written by `meshbench gate`, whose
	// users pass -max-count through to go test: its advice wants the
	// caller's words, as the targets' do (testbed.Words).
	"gate/markdown.go: -max-count": "meshbench gate's summary",
	// A report page is rendered by `meshbench report` from a stored run.
	"report/page.go: -thresholds": "meshbench report's page",
}

// TestOnlyTheSuiteNamesFlags: no comment or string of a non-test Go file
// of framework or internal, outside the suite, names a flag the suite
// registers: those packages say a setting by its Go name, or in the words
// the suite passes them (testbed.Words), so that only the plan's package
// knows the command line. The names come from RegisterFlags, so the list
// cannot go stale.
func TestOnlyTheSuiteNamesFlags(t *testing.T) {
	fset := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	suite.RegisterFlags(fset)
	var names []string
	fset.VisitAll(func(f *flag.Flag) { names = append(names, regexp.QuoteMeta(f.Name)) })
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	// A flag is "-name" after a space, a bracket, a quote or a backtick,
	// not followed by more of a name, or at the start of a string followed
	// by "=", a space or a colon: "-mesh-charts %s: …" is one, the suffix
	// "-sidecar" of name+"-sidecar" is not.
	inText := regexp.MustCompile("[\\s(\\[`'\"]-(" + strings.Join(names, "|") + ")(?:[^a-z0-9-]|$)")
	atStart := regexp.MustCompile("^-(" + strings.Join(names, "|") + ")[=\\s:]")
	var found []string
	for _, root := range []string{"..", filepath.Join("..", "..", "internal")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			switch {
			case d.IsDir() && (rel == "suite" || d.Name() == "testdata"):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			for _, f := range flagsIn(t, path, inText, atStart) {
				if key := filepath.ToSlash(rel) + ": -" + f; flagNamedElsewhere[key] == "" {
					found = append(found, key)
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Empty(t, found, "flags named outside framework/suite: say the setting in Go, or in testbed.Words")
}

// flagsIn are the flags the comments and string literals of the Go file
// at path name.
func flagsIn(t *testing.T, path string, inText, atStart *regexp.Regexp) []string {
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	var s scanner.Scanner
	fs := token.NewFileSet()
	s.Init(fs.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT && tok != token.STRING {
			continue
		}
		if tok == token.STRING && len(lit) >= 2 {
			lit = lit[1 : len(lit)-1]
			if m := atStart.FindStringSubmatch(lit); m != nil {
				out = append(out, m[1])
			}
		}
		for _, m := range inText.FindAllStringSubmatch(lit, -1) {
			out = append(out, m[1])
		}
	}
}
