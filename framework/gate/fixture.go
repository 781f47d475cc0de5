package gate

import (
	"fmt"
	"github.com/meshbench/meshbench/framework/fixture"
	"maps"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/meshbench/meshbench/framework/verdict"
)

// Rule is one limit of a gate fixture: for the scenarios its Match selects,
// how much worse than the reference the candidate may be on Metric.
type Rule struct {
	File string // fixture the rule comes from
	Line int    // line where the rule starts, 1-based
	// Metric is the gated figure.
	Metric Metric
	// Match selects scenarios: every label named here must be present on
	// the scenario and match the value, a literal or a path.Match glob
	// ("*", "1?", "[1-9]*"). An empty Match selects every scenario.
	Match map[string]string
	// Worse is Metric's direction; LimitPct how far in that direction the
	// candidate may be from the reference, in percent (maxIncreasePct or
	// maxDecreasePct in the fixture).
	Worse    Direction
	LimitPct float64
	// RunSD is the run-level SD of ln(candidate/reference), as a fraction
	// (runSDPct in the fixture, in percent): an offset between the arms
	// that holds for a whole run, measured over many A/A runs by
	// `meshbench offsets`, which the decision's interval adds to its
	// standard error (stats.RatioInterval.WithRunSD). 0: none.
	RunSD float64
}

// Limit returns the rule's limit on the candidate/reference ratio: 1.10 for
// maxIncreasePct 10, 0.95 for maxDecreasePct 5.
func (r Rule) Limit() float64 {
	if r.Worse == LowerIsWorse {
		return 1 - r.LimitPct/100
	}
	return 1 + r.LimitPct/100
}

// Matches reports whether the rule selects the scenario labelled l,
// ignoring the rules above it.
func (r Rule) Matches(l Labels) bool {
	for k, pat := range r.Match {
		v, ok := l[k]
		if !ok {
			return false
		}
		if m, _ := path.Match(pat, v); !m { // patterns are checked by Parse
			return false
		}
	}
	return true
}

// Gate is one decoded gate fixture: relative limits for one target.
type Gate struct {
	File   string // name the fixture was loaded from, as used in messages
	Target string // target the fixture is written for, e.g. "local"
	Rules  []Rule // in file order; per metric, the first match wins
}

// Rule returns the rule that gates metric m on the scenario labelled l: the
// first in file order for m that matches l. It returns false when m is not
// gated there.
func (g *Gate) Rule(l Labels, m Metric) (Rule, bool) {
	if i := g.ruleIndex(l, m); i >= 0 {
		return g.Rules[i], true
	}
	return Rule{}, false
}

// ruleIndex is Rule's index in g.Rules, or -1.
func (g *Gate) ruleIndex(l Labels, m Metric) int {
	for i, r := range g.Rules {
		if r.Metric == m && r.Matches(l) {
			return i
		}
	}
	return -1
}

// CheckTarget fails when the fixture is written for another target than
// the run's: limits calibrated on a cluster say nothing about loopback.
func (g *Gate) CheckTarget(target string) error {
	if g.Target == target {
		return nil
	}
	return &verdict.FixtureError{File: g.File, Line: 1, Field: "target",
		Problem: fmt.Sprintf("the fixture is for target %s, but this run is on %s; use a gate fixture written for %s (fixtures/gates/%s.yaml)", g.Target, target, target, target)}
}

// Load reads and parses the fixture at file; see [Parse].
func Load(file string) (*Gate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read gate fixture: %w", err)
	}
	return Parse(file, data)
}

// Parse decodes a gate fixture strictly; name is used in messages. It fails
// on the first problem, as a [*verdict.FixtureError] naming the file, the
// line and the field: a YAML syntax error, more than one document, an
// unknown, repeated or missing key, an unknown metric, a limit that is not
// a finite number (≥ 0, and < 100 for a decrease), a limit in the
// direction that is not the metric's worse one, a match that is not a
// mapping of labels to values, a bad glob, no rules, or a rule that never
// applies because an earlier rule for the same metric matches all it does.
func Parse(name string, data []byte) (*Gate, error) {
	p := parser{fixture.Parser{File: name, Top: wantTop, Want: wantField}}
	root, err := p.Document(data)
	if err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.Fail(root.Line, "top level", "got %s, %s", fixture.Describe(root), wantTop)
	}
	fields, err := p.Fields(root, "", []string{"target", "rules"}, nil)
	if err != nil {
		return nil, err
	}
	g := &Gate{File: name}
	t := fields["target"]
	if t.Kind != yaml.ScalarNode || t.ShortTag() != "!!str" || strings.TrimSpace(t.Value) == "" {
		return nil, p.Fail(t.Line, "target", "got %s, want the target's name, e.g. local", fixture.Describe(t))
	}
	g.Target = t.Value
	if g.Rules, err = p.rules(fields["rules"]); err != nil {
		return nil, err
	}
	return g, nil
}

const wantTop = "want a mapping with target and rules"

// parser walks the yaml.Node tree so that every problem has a line and a
// field; it follows framework/verdict's parser.
type parser struct{ fixture.Parser }

func (p *parser) rules(v *yaml.Node) ([]Rule, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, p.Fail(v.Line, "rules", "got %s, want a list of rules, each with metric, match and maxIncreasePct or maxDecreasePct", fixture.Describe(v))
	}
	if len(v.Content) == 0 {
		return nil, p.Fail(v.Line, "rules", "no rules; want at least one (with none, nothing is gated)")
	}
	var out []Rule
	for i, n := range v.Content {
		r, err := p.rule(fixture.Deref(n), fmt.Sprintf("rules[%d]", i))
		if err != nil {
			return nil, err
		}
		if err := p.reachable(out, r, fmt.Sprintf("rules[%d]", i)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

var ruleKeys = []string{"metric", "match", "maxIncreasePct", "maxDecreasePct", "runSDPct"}

// rule decodes one rule.
func (p *parser) rule(n *yaml.Node, field string) (Rule, error) {
	if n.Kind != yaml.MappingNode {
		return Rule{}, p.Fail(n.Line, field, "got %s, want a mapping with metric, match and maxIncreasePct or maxDecreasePct", fixture.Describe(n))
	}
	fs, err := p.Fields(n, field+".", ruleKeys, []string{"metric", "match"})
	if err != nil {
		return Rule{}, err
	}
	r := Rule{File: p.File, Line: n.Line}
	if r.Metric, err = p.metric(fs["metric"], field+".metric"); err != nil {
		return Rule{}, err
	}
	if r.Match, err = p.match(fs["match"], field+".match"); err != nil {
		return Rule{}, err
	}
	r.Worse = r.Metric.Worse()
	want, other := "maxIncreasePct", "maxDecreasePct"
	if r.Worse == LowerIsWorse {
		want, other = other, want
	}
	if o, ok := fs[other]; ok {
		worse, change := "higher", "increase"
		if r.Worse == LowerIsWorse {
			worse, change = "lower", "decrease"
		}
		return Rule{}, p.Fail(o.Line, field+"."+other, "%s is worse when %s, so a gate limits its %s; write %s", r.Metric, worse, change, want)
	}
	v, ok := fs[want]
	if !ok {
		return Rule{}, p.Fail(n.Line, field+"."+want, "missing; want %s, e.g. %s: 10", limitWant(r.Worse), want)
	}
	if r.LimitPct, err = p.percent(v, field+"."+want, r.Worse); err != nil {
		return Rule{}, err
	}
	if v, ok := fs["runSDPct"]; ok {
		pct, err := p.runSDPct(v, field+".runSDPct", r.LimitPct)
		if err != nil {
			return Rule{}, err
		}
		r.RunSD = pct / 100
	}
	return r, nil
}

// runSDPct decodes a rule's run-level SD, in percent: a number ≥ 0 below
// the rule's limit (an offset as wide as the limit leaves nothing to
// decide).
func (p *parser) runSDPct(v *yaml.Node, field string, limitPct float64) (float64, error) {
	want := fmt.Sprintf("want the run-level SD of ln(candidate/reference) in percent, ≥ 0 and below the rule's limit %g, as `meshbench offsets` prints it", limitPct)
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") {
		return 0, p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), want)
	}
	var f float64
	if err := v.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f >= limitPct {
		return 0, p.Fail(v.Line, field, "%s: %s", v.Value, want)
	}
	return f, nil
}

func limitWant(d Direction) string {
	if d == LowerIsWorse {
		return "the largest decrease of candidate against reference, in percent, > 0 and < 100"
	}
	return "the largest increase of candidate against reference, in percent, > 0"
}

func (p *parser) metric(v *yaml.Node, field string) (Metric, error) {
	ms := Metrics()
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, string(m))
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return "", p.Fail(v.Line, field, "got %s, want one of %s", fixture.Describe(v), strings.Join(names, ", "))
	}
	m := Metric(v.Value)
	if m.Worse() == 0 {
		return "", p.Fail(v.Line, field, "unknown metric %q; %s", v.Value, fixture.Suggest(v.Value, names, "known metrics are"))
	}
	return m, nil
}

var labelName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// match decodes a rule's label selector.
func (p *parser) match(v *yaml.Node, field string) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.Fail(v.Line, field, "got %s, want a mapping of label to value, e.g. {path: one-hop, c: \"8\"}, or {} for every scenario", fixture.Describe(v))
	}
	out := map[string]string{}
	lines := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], fixture.Deref(v.Content[i+1])
		if k.Kind != yaml.ScalarNode || !labelName.MatchString(k.Value) {
			return nil, p.Fail(k.Line, field, "label %s is not a label name such as path or c", fixture.Describe(k))
		}
		f := field + "." + k.Value
		if first, dup := lines[k.Value]; dup {
			return nil, p.Fail(k.Line, f, "repeated; it is already set on line %d", first)
		}
		lines[k.Value] = k.Line
		switch {
		case val.Kind != yaml.ScalarNode || val.ShortTag() == "!!null":
			return nil, p.Fail(val.Line, f, "got %s, want a value or a glob such as \"*\" (a bare * is a YAML alias: quote it)", fixture.Describe(val))
		case val.Value == "":
			return nil, p.Fail(val.Line, f, "empty; want a value or a glob such as \"*\"")
		}
		if _, err := path.Match(val.Value, ""); err != nil {
			return nil, p.Fail(val.Line, f, "%q is not a valid glob: %v", val.Value, err)
		}
		out[k.Value] = val.Value
	}
	return out, nil
}

// percent checks a limit: a finite number ≥ 0, and < 100 for a decrease.
func (p *parser) percent(v *yaml.Node, field string, d Direction) (float64, error) {
	want := "want " + limitWant(d)
	if v.Kind != yaml.ScalarNode {
		return 0, p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), want)
	}
	switch v.ShortTag() {
	case "!!int", "!!float":
	case "!!null":
		return 0, p.Fail(v.Line, field, "no value; %s (leaving it empty does not switch the gate off)", want)
	case "!!str":
		if _, err := strconv.ParseFloat(strings.TrimSuffix(v.Value, "%"), 64); err == nil {
			return 0, p.Fail(v.Line, field, "%q is text to YAML; write the number alone, without quotes or %%", v.Value)
		}
		return 0, p.Fail(v.Line, field, "%q is not a number; %s", v.Value, want)
	default:
		return 0, p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), want)
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		return 0, p.Fail(v.Line, field, "%q is not a number; %s", v.Value, want)
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, p.Fail(v.Line, field, "%s is not a finite number; %s", v.Value, want)
	case f < 0:
		return 0, p.Fail(v.Line, field, "%s is negative; %s", v.Value, want)
	case f == 0:
		return 0, p.Fail(v.Line, field, "%s allows no change at all: no interval can lie inside it, so the gate could never pass; %s", v.Value, want)
	case d == LowerIsWorse && f >= 100:
		return 0, p.Fail(v.Line, field, "%s allows the metric to fall to nothing; %s", v.Value, want)
	}
	return f, nil
}

// reachable rejects a rule that an earlier rule for the same metric hides
// for every scenario: the earlier one matches everything (match: {}) or
// selects exactly the same labels. Hiding that depends on globs is caught
// against the real scenarios by [Gate.Check].
func (p *parser) reachable(above []Rule, r Rule, field string) error {
	for _, a := range above {
		if a.Metric == r.Metric && (len(a.Match) == 0 || maps.Equal(a.Match, r.Match)) {
			return p.Fail(r.Line, field, "never applies: the rule on line %d already gates %s on every scenario this one matches, and the first matching rule wins; move this one above it or delete it", a.Line, r.Metric)
		}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
