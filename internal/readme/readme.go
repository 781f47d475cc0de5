// Package readme reads the Go examples and links of the module's Markdown
// docs (README.md and docs/*.md), for the tests that hold each example to
// the code that ships and each link to a file and heading that exist.
package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// Files are the module's Markdown docs under root: README.md, then
// docs/*.md in name order.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...), nil
}

// ExamplesOf returns the ```go blocks of the section under heading (e.g.
// "## Writing a scenario") in whichever of the docs under root (Files)
// holds it. A heading in none of them, or in more than one, is an error.
func ExamplesOf(root, heading string) ([]string, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var found []string
	var out []string
	for _, f := range files {
		ex, err := Examples(f, heading)
		if err != nil {
			continue // not in this file
		}
		found = append(found, f)
		out = ex
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("readme: no section %q in %s", heading, strings.Join(files, ", "))
	case 1:
		return out, nil
	default:
		return nil, fmt.Errorf("readme: section %q in %d files: %s", heading, len(found), strings.Join(found, ", "))
	}
}

// Examples returns the ```go blocks of the section of the Markdown file
// path under heading (e.g. "### Writing a scenario"), which ends at the
// next heading of its level or above.
func Examples(path, heading string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	text := "\n" + string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		return nil, fmt.Errorf("readme: %s has no section %q", path, heading)
	}
	text = text[start+1+len(heading):]
	level := strings.IndexByte(heading, ' ') // its number of #
	for k := 1; k <= level; k++ {
		if end := strings.Index(text, "\n"+strings.Repeat("#", k)+" "); end >= 0 {
			text = text[:end]
		}
	}
	return goBlocks(text), nil
}

// GoExamples returns every ```go block of the Markdown file path.
func GoExamples(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	return goBlocks(string(data)), nil
}

func goBlocks(text string) []string {
	var out []string
	for _, m := range goBlock.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// Unshipped returns the examples that no file matching glob contains
// word for word.
func Unshipped(examples []string, glob string) ([]string, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	return unshippedIn(examples, files)
}

func unshippedIn(examples, files []string) ([]string, error) {
	var code strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("readme: %w", err)
		}
		code.Write(data)
	}
	var out []string
	for _, e := range examples {
		if !strings.Contains(code.String(), e) {
			out = append(out, e)
		}
	}
	return out, nil
}
