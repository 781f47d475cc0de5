package gate

import (
	"errors"
	"fmt"
	"github.com/meshbench/meshbench/framework/fixture"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/verdict"
)

// Check validates the fixture against the scenarios a run will measure, so
// that it fails before the first run rather than after the sweep. It
// returns every problem found, each a [*verdict.FixtureError]:
//
//   - a rule matches on a label no scenario has (a misspelt label would
//     otherwise gate nothing, silently);
//   - a rule matches no scenario;
//   - every scenario a rule matches is already gated on its metric by the
//     rules above it, so it never applies.
//
// With none of these, every rule gates at least one scenario.
func (g *Gate) Check(scenarios []Labels) error {
	if len(scenarios) == 0 {
		return fmt.Errorf("%s: no scenarios to gate", g.File)
	}
	known := knownLabels(scenarios)
	var errs []error
	for i, r := range g.Rules {
		field := fmt.Sprintf("rules[%d].match", i)
		if err := g.checkLabels(r, field, known); err != nil {
			errs = append(errs, err)
			continue
		}
		matched, applied := 0, 0
		for _, s := range scenarios {
			if !r.Matches(s) {
				continue
			}
			matched++
			if g.ruleIndex(s, r.Metric) == i {
				applied++
			}
		}
		switch {
		case matched == 0:
			errs = append(errs, g.fail(r.Line, field, "matches none of the %d scenarios; their labels are %s", len(scenarios), labelValues(scenarios)))
		case applied == 0:
			errs = append(errs, g.fail(r.Line, fmt.Sprintf("rules[%d]", i), "never applies: the rules above it already gate %s on all %d scenarios it matches, and the first matching rule wins; move it above them or delete it", r.Metric, matched))
		}
	}
	return errors.Join(errs...)
}

// CheckLabels is the part of Check that needs only some of the run's
// scenarios, such as the points of one benchmark before its first run: a
// rule that matches on a label none of them has (a misspelt label would
// otherwise gate nothing, silently). It returns every such rule, each a
// [*verdict.FixtureError].
func (g *Gate) CheckLabels(scenarios []Labels) error {
	known := knownLabels(scenarios)
	var errs []error
	for i, r := range g.Rules {
		if err := g.checkLabels(r, fmt.Sprintf("rules[%d].match", i), known); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Domains are the values a label can take whatever the run measures:
// loop is closed (maximum rate) or open (a fixed rate), path one-hop or
// two-hop. A rule's value for such a label is checked against these, so
// that a rule for open loop stays valid on a run with only closed-loop
// points, while a typo (loop: opn) is refused.
var Domains = map[string][]string{"loop": {"closed", "open"}, "path": {"one-hop", "two-hop"}}

// CheckValues refuses, before anything is measured, a rule whose value
// for a label matches none of the values that label can take: those of
// domains (e.g. Domains, and benchmark: every benchmark of the package)
// where it has some, else those the points (the run's planned scenarios)
// give it. A misspelt value (loop: opn, benchmark: BenchmarkUpgradeGat)
// would otherwise gate nothing and let the run pass. A label no point
// has is CheckLabels' to refuse. It returns every problem, each a
// [*verdict.FixtureError] naming the file, the line and the field.
func (g *Gate) CheckValues(points []Labels, domains map[string][]string) error {
	ps := make([]map[string]string, len(points))
	for i, p := range points {
		ps[i] = p
	}
	known := fixture.ValuesOf(ps)
	maps.Copy(known, domains)
	var errs []error
	for i, r := range g.Rules {
		for _, k := range fixture.Unmatched(r.Match, known) {
			errs = append(errs, g.fail(r.Line, fmt.Sprintf("rules[%d].match.%s", i, k), "%q matches no value of %s, so the rule gates nothing; %s",
				r.Match[k], k, fixture.Suggest(r.Match[k], known[k], k+" takes")))
		}
	}
	return errors.Join(errs...)
}

// knownLabels is the set of label names the scenarios have.
func knownLabels(scenarios []Labels) map[string]bool {
	known := map[string]bool{}
	for _, s := range scenarios {
		for k := range s {
			known[k] = true
		}
	}
	return known
}

// Unused returns the rules that gated none of ms, in file order: what a
// run whose scenarios were not all known in advance can only say after it.
func (g *Gate) Unused(ms []Measurement) []Rule {
	var out []Rule
	for i, r := range g.Rules {
		used := slices.ContainsFunc(ms, func(m Measurement) bool { return m.Metric == r.Metric && g.ruleIndex(m.Scenario, m.Metric) == i })
		if !used {
			out = append(out, r)
		}
	}
	return out
}

// Gated returns the metrics the fixture gates on the scenario labelled l,
// in [Metrics] order: what the run must measure for it.
func (g *Gate) Gated(l Labels) []Metric {
	var out []Metric
	for _, m := range Metrics() {
		if _, ok := g.Rule(l, m); ok {
			out = append(out, m)
		}
	}
	return out
}

func (g *Gate) checkLabels(r Rule, field string, known map[string]bool) error {
	names := sortedKeys(known)
	for _, k := range sortedKeys(r.Match) {
		if !known[k] {
			return g.fail(r.Line, field+"."+k, "no scenario has the label %s; %s", k, fixture.Suggest(k, names, "scenarios have"))
		}
	}
	return nil
}

func (g *Gate) fail(line int, field, format string, args ...any) error {
	return &verdict.FixtureError{File: g.File, Line: line, Field: field, Problem: fmt.Sprintf(format, args...)}
}

// labelValues lists each label with the values the scenarios give it, e.g.
// "c=1,8 path=one-hop,two-hop".
func labelValues(scenarios []Labels) string {
	vals := map[string][]string{}
	for _, s := range scenarios {
		for k, v := range s {
			if !slices.Contains(vals[k], v) {
				vals[k] = append(vals[k], v)
			}
		}
	}
	parts := make([]string, 0, len(vals))
	for _, k := range sortedKeys(vals) {
		parts = append(parts, k+"="+strings.Join(vals[k], ","))
	}
	return strings.Join(parts, " ")
}
