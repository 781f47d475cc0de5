package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Link is one Markdown link of a doc: the file it is in, its line, and
// its target as written.
type Link struct {
	File   string
	Line   int
	Target string
}

func (l Link) String() string { return fmt.Sprintf("%s:%d: %s", l.File, l.Line, l.Target) }

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	headingRe  = regexp.MustCompile(`^(#{1,6}) (.*)$`)
	notInSlug  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// Links returns the links of the Markdown file path, outside code
// blocks and inline code.
func Links(path string) ([]Link, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	var out []Link
	fenced := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{File: path, Line: i + 1, Target: m[1]})
		}
	}
	return out, nil
}

// Anchors returns the anchors of the headings of the Markdown file path,
// as GitHub makes them: the heading's text without its inline code's
// backticks or link syntax, lower-cased, with every character but
// letters, digits, spaces, hyphens and underscores dropped, and spaces
// turned into hyphens; a repeated anchor gets -1, -2 ….
func Anchors(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("readme: %w", err)
	}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		slug := Slug(m[2])
		a := slug
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", slug, n)
		}
		out[a] = true
	}
	return out, nil
}

// Slug is the anchor GitHub gives a heading's text.
func Slug(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	s := notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), "")
	return strings.ReplaceAll(s, " ", "-")
}

// BrokenLinks returns the relative links of files that name a file that
// does not exist, or an anchor its file's headings do not make. Links to
// other sites (a scheme such as https:) are not followed. A link to a file
// in pending (a path relative to root, as "docs/workflows.md") is not
// broken while the file is absent: it names a doc another branch adds.
func BrokenLinks(root string, files []string, pending map[string]string) ([]string, error) {
	anchors := map[string]map[string]bool{}
	var broken []string
	for _, f := range files {
		links, err := Links(f)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if strings.Contains(l.Target, ":") { // https:, mailto:
				continue
			}
			file, anchor, _ := strings.Cut(l.Target, "#")
			target := f
			if file != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(file))
			}
			if _, err := os.Stat(target); err != nil {
				rel, _ := filepath.Rel(root, target)
				if _, ok := pending[filepath.ToSlash(rel)]; ok {
					continue
				}
				broken = append(broken, fmt.Sprintf("%s: no such file", l))
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				broken = append(broken, fmt.Sprintf("%s: an anchor into a file that is not Markdown", l))
				continue
			}
			if anchors[target] == nil {
				a, err := Anchors(target)
				if err != nil {
					return nil, err
				}
				anchors[target] = a
			}
			if !anchors[target][anchor] {
				broken = append(broken, fmt.Sprintf("%s: no heading makes #%s", l, anchor))
			}
		}
	}
	return broken, nil
}
