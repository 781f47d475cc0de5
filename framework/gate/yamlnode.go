package gate

// The node helpers below follow framework/verdict's fixture parser, so that
// both fixtures fail the same way; they could move into one shared package.

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	// bareStar finds "key: *" or "- *", the usual cause of an alias error.
	bareStar = regexp.MustCompile(`^\s*(-\s+)?([^\s#:][^#:]*:\s+)?\*\s*(#.*)?$`)
	// flowStar finds a bare * as a value in a flow mapping: {c: *}.
	flowStar = regexp.MustCompile(`[{,]\s*[^\s{},:]+:\s*\*\s*[,}]`)
)

// document decodes data into one YAML document and returns its root.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.fail(1, "top level", "empty file; %s", wantTop)
		}
		return nil, p.syntax(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, p.fail(extra.Line, "top level", "a second YAML document; a fixture holds exactly one")
	case !errors.Is(err, io.EOF):
		return nil, p.syntax(data, err)
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, p.fail(1, "top level", "empty file; %s", wantTop)
	}
	return root, nil
}

// syntax turns a YAML syntax error into a FixtureError, with the line when
// YAML gave one and hints for an unquoted * and a tab.
func (p *parser) syntax(data []byte, err error) error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	lines := strings.Split(string(data), "\n")
	switch {
	case strings.Contains(msg, "did not find expected alphabetic or numeric character"):
		for i, l := range lines {
			if bareStar.MatchString(l) || flowStar.MatchString(l) {
				return p.fail(i+1, "", `invalid YAML: a bare * starts a YAML alias; quote it: "*"`)
			}
		}
	case strings.Contains(msg, "found character that cannot start any token"):
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " "), "\t") {
				return p.fail(i+1, "", "invalid YAML: a tab indents this line; YAML indents with spaces only")
			}
		}
	}
	return p.fail(line, "", "invalid YAML: %s", msg)
}

// fields checks a mapping's keys against known, requires those in required
// (all of known when required is nil), and returns value by key.
func (p *parser) fields(n *yaml.Node, prefix string, known, required []string) (map[string]*yaml.Node, error) {
	if required == nil {
		required = known
	}
	out := make(map[string]*yaml.Node, len(known))
	keyLine := make(map[string]int, len(known))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		field := prefix + k.Value
		if k.Kind != yaml.ScalarNode {
			where := strings.TrimSuffix(prefix, ".")
			if where == "" {
				where = "top level"
			}
			return nil, p.fail(k.Line, where, "a key is %s; keys are names such as %s", describe(k), known[0])
		}
		if k.ShortTag() == "!!merge" {
			return nil, p.fail(k.Line, field, "YAML merge keys are not supported; write every field out so each rule reads on its own")
		}
		if !slices.Contains(known, k.Value) {
			return nil, p.fail(k.Line, field, "unknown field; %s", suggest(k.Value, known, "known fields are"))
		}
		if first, dup := keyLine[k.Value]; dup {
			return nil, p.fail(k.Line, field, "repeated; it is already set on line %d", first)
		}
		keyLine[k.Value] = k.Line
		out[k.Value] = v
	}
	for _, k := range required {
		if _, ok := out[k]; !ok {
			return nil, p.fail(n.Line, prefix+k, "missing; %s", wantField(k))
		}
	}
	return out, nil
}

func wantField(key string) string {
	switch key {
	case "target":
		return "want the target's name, e.g. local"
	case "rules":
		return "want a list of rules, each with metric, match and maxIncreasePct or maxDecreasePct"
	case "metric":
		return "want the gated metric, e.g. sidecarCPUPer1kReq"
	case "match":
		return `want the labels of the scenarios it gates, e.g. {path: one-hop, c: "8"}, or {} for every scenario`
	}
	return "want a value"
}

// describe names what a node holds, for "got …" in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!null":
		return "no value"
	case "!!str":
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// deref follows YAML aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// suggest names the known word closest to an unknown one, or lists them
// all after intro.
func suggest(word string, known []string, intro string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	for _, k := range known {
		if distance(norm(word), norm(k)) <= 1 {
			return "did you mean " + k + "?"
		}
	}
	return intro + " " + strings.Join(known, ", ")
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
