package verdict

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/meshbench/meshbench/framework/fixture"
	"github.com/meshbench/meshbench/framework/metric"
	"maps"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Path is the request path a rule or an observation is about.
type Path string

// Paths. Observations use OneHop or TwoHop; a rule may also use AnyPath.
const (
	// OneHop is loadgen → backend.
	OneHop Path = "one-hop"
	// TwoHop is loadgen → frontend (a reverse proxy) → backend.
	TwoHop Path = "two-hop"
	// AnyPath, written "*" in a fixture, matches every path.
	AnyPath Path = "*"
)

// Concurrency is the range of load-generator concurrency (simultaneous
// connections) that a rule matches, both ends inclusive. A fixture writes it
// as "N" (exactly N), "N-M" (N to M), "N+" (N and above) or "*" (any, the
// same as "1+"); N ≥ 1 and N ≤ M.
type Concurrency struct {
	Min int // lowest concurrency matched, ≥ 1
	Max int // highest concurrency matched, or 0 for no upper bound
}

// Contains reports whether concurrency c falls in the range.
func (r Concurrency) Contains(c int) bool {
	return c >= r.Min && (r.Max == 0 || c <= r.Max)
}

// String returns the range in fixture syntax: "N", "N-M" or "N+".
func (r Concurrency) String() string {
	switch {
	case r.Max == 0:
		return fmt.Sprintf("%d+", r.Min)
	case r.Min == r.Max:
		return strconv.Itoa(r.Min)
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// Limit is one rule of a fixture: the largest overheads allowed for the
// scenarios whose path and concurrency it matches. Every limit is finite and
// ≥ 0.
type Limit struct {
	Line        int         // line in the fixture where the rule starts, 1-based
	Path        Path        // OneHop, TwoHop or AnyPath
	Concurrency Concurrency // concurrency range the rule matches
	// Match, when set, also requires labels of the scenario: label → value
	// or path.Match glob, e.g. {payload: 16KiB} or {benchmark: "*Payload"}.
	Match map[string]string

	// Allowed holds the largest value the rule allows of each metric it
	// limits, in that metric's unit (its limit in the table, package
	// metric: p50DeltaMs in milliseconds, p99DeltaPct in percent of the
	// baseline, sidecarRSSMiB in MiB, …). Every required metric is present;
	// an optional one only when the rule sets it, and a rule without it
	// does not gate it.
	Allowed map[Metric]float64
}

// Matches reports whether the rule applies to path p at concurrency c,
// ignoring the rules above it and its Match labels.
func (l Limit) Matches(p Path, c int) bool {
	return (l.Path == AnyPath || l.Path == p) && l.Concurrency.Contains(c)
}

// Applies reports whether the rule applies to o: its path, concurrency
// and every label of Match.
func (l Limit) Applies(o Observation) bool {
	return l.Matches(o.Path, o.Concurrency) && o.Labels.Matches(l.Match)
}

// Max returns the rule's limit for metric m, in m's unit, and false when
// the rule does not limit m: an optional metric it leaves out, or a key
// that is not a metric.
func (l Limit) Max(m Metric) (float64, bool) {
	v, ok := l.Allowed[m]
	return v, ok
}

// Thresholds is one decoded fixture: the rules for one target, in file order.
type Thresholds struct {
	File   string // name the fixture was loaded from, as used in messages
	Target string // target the rules are for, e.g. "local"
	// TargetLine is the line of target:, for messages about it.
	TargetLine int
	// CalibratedOn are the CPU models of the runs the fixture was
	// calibrated from (calibratedOn:, optional). Its limits pass quiet
	// runs of slower or faster machines, but their teeth carry less far
	// to another CPU, where the mesh's cost against its baseline differs:
	// a run on a CPU not named here says so.
	CalibratedOn []string
	Limits       []Limit // rules in file order; the first match wins
}

// OtherCPU says, for a run on cpu, why the fixture's limits may not
// catch a doubling there: it was calibrated on other CPUs. It returns ""
// when the fixture names none, or cpu among them.
func (t *Thresholds) OtherCPU(cpu string) string {
	if len(t.CalibratedOn) == 0 || slices.Contains(t.CalibratedOn, cpu) {
		return ""
	}
	return fmt.Sprintf("%s was calibrated on %s, not on this machine's %s: quiet runs here should pass its limits, but a doubled cost may stay within them at some points (docs/thresholds.md); for limits with teeth here, calibrate on this machine (meshbench calibrate)",
		t.File, strings.Join(t.CalibratedOn, ", "), cmp.Or(cpu, "unknown CPU"))
}

// Match returns the rule that applies to path p at concurrency c: the first
// in file order whose path and concurrency both match and that requires no
// label. It returns false when no rule matches.
func (t *Thresholds) Match(p Path, c int) (Limit, bool) {
	return t.MatchObservation(Observation{Path: p, Concurrency: c})
}

// MatchObservation returns the first rule in file order that applies to o.
func (t *Thresholds) MatchObservation(o Observation) (Limit, bool) {
	for _, l := range t.Limits {
		if l.Applies(o) {
			return l, true
		}
	}
	return Limit{}, false
}

// FixtureError is a fixture that cannot be used, located for a human:
// file, line, field and what to write instead.
type FixtureError = fixture.Error

// Load reads and parses the fixture at path; see [Parse].
func Load(path string) (*Thresholds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes the fixture data strictly; name is used in messages and kept
// in Thresholds.File. It fails on the first problem found, as a
// [*FixtureError]: a YAML syntax error, more than one document, an unknown or
// repeated key, a missing field, a limit that is not a finite number ≥ 0
// (quoted numbers, NaN and infinities included), a concurrency that does not
// parse, a path other than one-hop, two-hop or "*", an empty rule list, or a
// rule that never applies because the rules above it match everything it
// names.
func Parse(name string, data []byte) (*Thresholds, error) {
	p := parser{fixture.Parser{File: name, Top: wantTop, Want: wantField}}
	root, err := p.Document(data)
	if err != nil {
		return nil, err
	}
	t := &Thresholds{File: name, TargetLine: keyLine(root, "target")}
	if err = p.top(root, t); err != nil {
		return nil, err
	}
	if err := t.checkReachable(); err != nil {
		return nil, err
	}
	return t, nil
}

// topKeys are the keys of a fixture's top level.
var topKeys = []string{"target", "limits"}

// limitKeys returns every key a rule may have: path, concurrency, the
// limits of the table and match.
func limitKeys() []string {
	return append(append([]string{"path", "concurrency"}, toStrings(Metrics())...), "match")
}

// requiredKeys returns the keys a rule must have: all but match and the
// optional limits.
func requiredKeys() []string {
	return append([]string{"path", "concurrency"}, toStrings(required())...)
}

// required returns the limits every rule sets, in table order.
func required() []Metric {
	return metricsWhere(func(l metric.Limit) bool { return !l.Optional })
}

// theLimits is how the required limits read in messages, e.g. "the five
// limits": each required one, and one of each group (metric.Limit's
// OneOf).
func theLimits() string {
	n := len(required()) + len(oneOfGroups())
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n < len(words) {
		return "the " + words[n] + " limits"
	}
	return "the " + strconv.Itoa(n) + " limits"
}

func toStrings(ms []Metric) []string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return s
}

// parser walks the yaml.Node tree, so that every problem carries a line and
// a field path.
type parser struct{ fixture.Parser }

const wantTop = "want a mapping with target and limits"

// top checks the top-level mapping and sets t's target, CPUs and rules.
func (p *parser) top(n *yaml.Node, t *Thresholds) error {
	if n.Kind != yaml.MappingNode {
		return p.Fail(n.Line, "top level", "got %s, %s", fixture.Describe(n), wantTop)
	}
	fields, err := p.Fields(n, "", append(slices.Clone(topKeys), "calibratedOn"), topKeys)
	if err != nil {
		return err
	}
	if err := p.target(fields); err != nil {
		return err
	}
	if t.CalibratedOn, err = p.cpus(fields["calibratedOn"]); err != nil {
		return err
	}
	t.Target = fields["target"].Value
	t.Limits, err = p.limits(fields)
	return err
}

// cpus checks calibratedOn: a list of CPU models, each a string; nil when
// the fixture has none.
func (p *parser) cpus(v *yaml.Node) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return nil, p.Fail(v.Line, "calibratedOn", "got %s, %s", fixture.Describe(v), wantField("calibratedOn"))
	}
	out := make([]string, len(v.Content))
	for i, c := range v.Content {
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!str" || strings.TrimSpace(c.Value) == "" {
			return nil, p.Fail(c.Line, "calibratedOn", "got %s, %s", fixture.Describe(c), wantField("calibratedOn"))
		}
		out[i] = c.Value
	}
	return out, nil
}

// match checks a rule's labels: a mapping of label names to values or
// path.Match globs.
func (p *parser) match(v *yaml.Node, field string) error {
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return p.Fail(v.Line, field, "got %s, want labels to match, e.g. {payload: 16KiB, benchmark: \"*Payload\"}", fixture.Describe(v))
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], fixture.Deref(v.Content[i+1])
		if k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode || val.Value == "" {
			return p.Fail(k.Line, field, "label %s: got %s, want a value or a glob such as \"*\"", k.Value, fixture.Describe(val))
		}
		if _, err := path.Match(val.Value, ""); err != nil {
			return p.Fail(val.Line, field+"."+k.Value, "%q is not a glob: %v", val.Value, err)
		}
	}
	return nil
}

func (p *parser) target(fields map[string]*yaml.Node) error {
	v := fields["target"]
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || strings.TrimSpace(v.Value) == "" {
		return p.Fail(v.Line, "target", "got %s, %s", fixture.Describe(v), wantField("target"))
	}
	return nil
}

// limits checks the list of rules and returns them, in file order.
func (p *parser) limits(fields map[string]*yaml.Node) ([]Limit, error) {
	v := fields["limits"]
	if v.Kind != yaml.SequenceNode {
		return nil, p.Fail(v.Line, "limits", "got %s, %s", fixture.Describe(v), wantField("limits"))
	}
	if len(v.Content) == 0 {
		return nil, p.Fail(v.Line, "limits", "no rules; %s (with none, no scenario is gated)", wantField("limits"))
	}
	rules := make([]Limit, len(v.Content))
	matches := make([]*yaml.Node, len(v.Content))
	for i, r := range v.Content {
		r = fixture.Deref(r)
		field := fmt.Sprintf("limits[%d]", i)
		if r.Kind != yaml.MappingNode {
			return nil, p.Fail(r.Line, field, "got %s, want a mapping with path, concurrency and %s", fixture.Describe(r), theLimits())
		}
		fs, err := p.Fields(r, field+".", limitKeys(), requiredKeys())
		if err != nil {
			return nil, err
		}
		if rules[i], err = p.rule(fs, field); err != nil {
			return nil, err
		}
		if err := p.oneOf(rules[i], r.Line, field); err != nil {
			return nil, err
		}
		rules[i].Line, matches[i] = r.Line, fs["match"]
	}
	// Labels decode once every rule is checked, as the strict decode of
	// the whole file did, so that the first problem reported stays the same.
	for i, m := range matches {
		if m == nil {
			continue
		}
		if err := m.Decode(&rules[i].Match); err != nil {
			return nil, fmt.Errorf("%s: %w", p.File, err)
		}
	}
	return rules, nil
}

// rule checks one rule's fields, in the order of limitKeys but with match
// first, and returns the rule without its line and labels.
func (p *parser) rule(fs map[string]*yaml.Node, field string) (Limit, error) {
	var l Limit
	if m, ok := fs["match"]; ok {
		if err := p.match(m, field+".match"); err != nil {
			return l, err
		}
	}
	if err := p.path(fs["path"], field+".path"); err != nil {
		return l, err
	}
	l.Path = Path(fs["path"].Value)
	var err error
	if l.Concurrency, err = p.concurrency(fs["concurrency"], field+".concurrency"); err != nil {
		return l, err
	}
	l.Allowed = map[Metric]float64{}
	for _, m := range Metrics() {
		v, ok := fs[string(m)]
		if !ok {
			continue // an optional limit left out
		}
		if l.Allowed[m], err = p.limit(v, field+"."+string(m), m); err != nil {
			return l, err
		}
	}
	return l, nil
}

// oneOf checks that a rule sets at least one limit of each group of the
// table (metric.Limit's OneOf), so that leaving out an optional limit
// never leaves its metric ungated: p50 in ms or relative to the baseline,
// sidecar CPU in CPU-ms or relative to the baseline's CPU.
func (p *parser) oneOf(l Limit, line int, field string) error {
	for _, g := range oneOfGroups() {
		if !slices.ContainsFunc(g.keys, func(k string) bool { _, ok := l.Allowed[Metric(k)]; return ok }) {
			return p.Fail(line, field, "limits no %s: set one of %s (left out, the %s would not be gated)",
				g.name, strings.Join(g.keys, ", "), g.name)
		}
	}
	return nil
}

// group is a group of limits of the table a rule sets one of.
type group struct {
	name string   // metric.Limit's OneOf
	keys []string // its limits' keys, in table order
}

// oneOfGroups returns the table's groups in table order.
func oneOfGroups() []group {
	var gs []group
	for _, lim := range tableLimits() {
		if lim.OneOf == "" {
			continue
		}
		i := slices.IndexFunc(gs, func(g group) bool { return g.name == lim.OneOf })
		if i < 0 {
			i = len(gs)
			gs = append(gs, group{name: lim.OneOf})
		}
		gs[i].keys = append(gs[i].keys, lim.Key)
	}
	return gs
}

// path checks a rule's path: one-hop, two-hop or "*".
func (p *parser) path(v *yaml.Node, field string) error {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
		switch Path(v.Value) {
		case OneHop, TwoHop, AnyPath:
			return nil
		}
	}
	return p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), wantField("path"))
}

// concurrency checks a rule's concurrency range and returns it.
func (p *parser) concurrency(v *yaml.Node, field string) (Concurrency, error) {
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!str" && v.ShortTag() != "!!int") {
		return Concurrency{}, p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), wantField("concurrency"))
	}
	c, err := parseConcurrency(v.Value)
	if err != nil {
		return Concurrency{}, p.Fail(v.Line, field, "%q %s", v.Value, err)
	}
	return c, nil
}

// limit checks that a limit is a finite number ≥ 0 and returns it.
func (p *parser) limit(v *yaml.Node, field string, m Metric) (float64, error) {
	want := fmt.Sprintf("want %s ≥ 0, e.g. %s", m.info().Want, m.info().Sample)
	if v.Kind != yaml.ScalarNode {
		return 0, p.Fail(v.Line, field, "got %s, %s", fixture.Describe(v), want)
	}
	switch v.ShortTag() {
	case "!!int", "!!float":
	case "!!null":
		return 0, p.Fail(v.Line, field, "no value; %s (leaving it empty does not switch the gate off)", want)
	case "!!str":
		if _, err := strconv.ParseFloat(v.Value, 64); err == nil && v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			return 0, p.Fail(v.Line, field, "%q is quoted, so YAML reads it as text; write %s without quotes", v.Value, v.Value)
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
		return 0, p.Fail(v.Line, field, "%s is not a finite number; %s (to loosen a gate, write a large number)", v.Value, want)
	case f < 0:
		return 0, p.Fail(v.Line, field, "%s is negative; %s", v.Value, want)
	}
	return f, nil
}

// checkReachable rejects a rule that can never apply because the rules above
// it already match every path and concurrency it names: someone who adds a
// tighter rule below a broad one would otherwise believe the gate tightened.
func (t *Thresholds) checkReachable() error {
	for j, l := range t.Limits {
		paths := []Path{l.Path}
		if l.Path == AnyPath {
			paths = []Path{OneHop, TwoHop}
		}
		var above []int // lines of earlier rules that overlap this one
		shadowed := true
		for _, p := range paths {
			var ranges []Concurrency
			for _, e := range t.Limits[:j] {
				// A rule with labels shadows only rules with the same labels.
				if len(e.Match) > 0 && !maps.Equal(e.Match, l.Match) {
					continue
				}
				if (e.Path == AnyPath || e.Path == p) && overlaps(e.Concurrency, l.Concurrency) {
					ranges = append(ranges, e.Concurrency)
					if !slices.Contains(above, e.Line) {
						above = append(above, e.Line)
					}
				}
			}
			if !covers(ranges, l.Concurrency) {
				shadowed = false
			}
		}
		if shadowed {
			slices.Sort(above)
			ls := make([]string, len(above))
			for i, a := range above {
				ls[i] = strconv.Itoa(a)
			}
			where := "line " + ls[0]
			if len(ls) > 1 {
				where = "lines " + strings.Join(ls, ", ")
			}
			return &FixtureError{File: t.File, Line: l.Line, Field: fmt.Sprintf("limits[%d]", j),
				Problem: fmt.Sprintf("never applies: the first matching rule wins, and the rules above it (%s) already match %s at concurrency %s; move it above them or delete it",
					where, pathName(l.Path), l.Concurrency)}
		}
	}
	return nil
}

// pathName is how a rule's path reads in a sentence.
func pathName(p Path) string {
	if p == AnyPath {
		return "every path"
	}
	return string(p)
}

// upper returns the range's top, with no bound as the largest int.
func upper(r Concurrency) int {
	if r.Max == 0 {
		return math.MaxInt
	}
	return r.Max
}

func overlaps(a, b Concurrency) bool {
	return a.Min <= upper(b) && b.Min <= upper(a)
}

// covers reports whether the union of ranges contains every value of r.
func covers(ranges []Concurrency, r Concurrency) bool {
	slices.SortFunc(ranges, func(a, b Concurrency) int { return a.Min - b.Min })
	next := r.Min // lowest value of r not yet known to be covered
	for _, c := range ranges {
		if c.Min > next {
			break
		}
		if upper(c) >= upper(r) {
			return true
		}
		next = max(next, upper(c)+1)
	}
	return false
}

// parseConcurrency parses "N", "N-M", "N+" or "*".
func parseConcurrency(s string) (Concurrency, error) {
	const want = `want "N", "N-M", "N+" or "*", e.g. "1-4"`
	if s == "*" {
		return Concurrency{Min: 1}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	open := !isRange && strings.HasSuffix(s, "+")
	if open {
		lo = strings.TrimSuffix(s, "+")
	}
	n, err := count(lo)
	if err != nil {
		return Concurrency{}, fmt.Errorf("is not a concurrency; %s", want)
	}
	m := n
	if isRange {
		if m, err = count(hi); err != nil {
			return Concurrency{}, fmt.Errorf("is not a concurrency; %s", want)
		}
	}
	switch {
	case n < 1 || m < 1:
		return Concurrency{}, errors.New("is not a concurrency: it starts at 1")
	case n > m:
		return Concurrency{}, fmt.Errorf("is backwards: %d is above %d; write \"%d-%d\"", n, m, m, n)
	case open:
		return Concurrency{Min: n}, nil
	}
	return Concurrency{Min: n, Max: m}, nil
}

// count parses a plain decimal count: digits only, no sign or spaces.
func count(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a count")
	}
	return strconv.Atoi(s)
}

func wantField(key string) string {
	switch key {
	case "target":
		return "want the target's name, e.g. local"
	case "limits":
		return "want a list of rules, each with path, concurrency and " + theLimits()
	case "calibratedOn":
		return `want the CPU models of the calibration runs, e.g. ["Intel(R) Xeon(R) Processor"]`
	case "path":
		return `want one-hop, two-hop or "*"`
	case "concurrency":
		return `want "N", "N-M", "N+" or "*", e.g. "1-4"`
	}
	i := Metric(key).info()
	return fmt.Sprintf("every rule sets all %s (want %s ≥ 0, e.g. %s)", strings.TrimPrefix(theLimits(), "the "), i.Want, i.Sample)
}

// keyLine is the line of key in a mapping node, or 0.
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return 0
}

// CheckValues refuses a rule whose match names a value its label never
// takes, which would leave the points it was written for ungated: a
// benchmark the package does not have (BenchmarkOneHopp), or an axis
// value the benchmark does not sweep. Every rule's labels are checked
// against domains (e.g. benchmark: the package's benchmarks); a rule
// whose benchmark matches bench is also checked against the values
// points, bench's planned points, give its other labels. It returns every
// problem, each a [*FixtureError] naming the file, the line and the field.
func (t *Thresholds) CheckValues(bench string, points []map[string]string, domains map[string][]string) error {
	known := fixture.ValuesOf(points)
	maps.Copy(known, domains)
	var errs []error
	for i, l := range t.Limits {
		check := domains
		if pat, ok := l.Match["benchmark"]; ok && bench != "" {
			if m, _ := path.Match(pat, bench); m {
				check = known
			}
		}
		for _, k := range fixture.Unmatched(l.Match, check) {
			errs = append(errs, &FixtureError{File: t.File, Line: l.Line, Field: fmt.Sprintf("limits[%d].match.%s", i, k),
				Problem: fmt.Sprintf("%q matches no value of %s, so the rule gates nothing; %s", l.Match[k], k, fixture.Suggest(l.Match[k], check[k], k+" takes"))})
		}
	}
	return errors.Join(errs...)
}
