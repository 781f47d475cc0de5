// Package readme reads the Go examples of a README's sections, for the
// tests that hold each example to the code that ships.
package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// Examples returns the ```go blocks of the section of the Markdown file
// path under heading (e.g. "### Writing a scenario"), which ends at the
// next heading of its level or above.
func Examples(path, heading string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	text := string(data)
	start := strings.Index(text, heading+"\n")
	if start < 0 {
		return nil, fmt.Errorf("readme: %s has no section %q", path, heading)
	}
	text = text[start+len(heading):]
	level := strings.IndexByte(heading, ' ') // its number of #
	for k := 1; k <= level; k++ {
		if end := strings.Index(text, "\n"+strings.Repeat("#", k)+" "); end >= 0 {
			text = text[:end]
		}
	}
	var out []string
	for _, m := range goBlock.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out, nil
}

// Unshipped returns the examples that no file matching glob contains
// word for word.
func Unshipped(examples []string, glob string) ([]string, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
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
