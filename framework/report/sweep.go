package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// sweep is one scenario's sweep over one axis: the comparisons of one
// benchmark and path whose labels differ only in that axis, in sweep
// order. A chart draws one sweep, so that a line only ever joins the points
// of one scenario.
type sweep struct {
	// Scenario is the comparisons' labels without the axis, e.g.
	// "BenchmarkPayload/c=8" for a sweep over payload.
	Scenario string
	Path     testbed.Path
	// Axis is the swept label's key (labels.Concurrency, labels.Payload …).
	Axis string
	// Numeric says every value of the axis is a number (a count, a size, a
	// rate or a duration), drawn on a logarithmic axis; otherwise it is a
	// category, drawn as points or bars, never as a line.
	Numeric bool
	Points  []Comparison
	// Values are the axis' label values, and X their positions: the
	// number for a numeric axis, the index for a category.
	Values []string
	X      []float64
}

// sweeps splits comparisons into sweeps. Within a benchmark and path the
// axis is the innermost label whose value varies; when none varies (one
// point) it is the scenario's own axis, the last label other than c. Outer
// labels that vary too split the benchmark into several sweeps.
func sweeps(cs []Comparison) []sweep {
	type group struct {
		bench string
		path  testbed.Path
	}
	var groups []group
	members := map[group][]Comparison{}
	for _, c := range cs {
		g := group{c.Benchmark, c.Path}
		if _, ok := members[g]; !ok {
			groups = append(groups, g)
		}
		members[g] = append(members[g], c)
	}
	var out []sweep
	for _, g := range groups {
		axis := sweptAxis(members[g])
		var order []string
		byName := map[string]*sweep{}
		for _, c := range members[g] {
			name := c.Labels.Without(axis).String()
			s, ok := byName[name]
			if !ok {
				s = &sweep{Scenario: name, Path: g.path, Axis: axis}
				byName[name] = s
				order = append(order, name)
			}
			s.Points = append(s.Points, c)
		}
		for _, name := range order {
			out = append(out, byName[name].place())
		}
	}
	return out
}

// sweptAxis is the axis of one benchmark's comparisons on one path.
func sweptAxis(cs []Comparison) string {
	var keys []string
	values := map[string]map[string]bool{}
	for _, c := range cs {
		for _, l := range c.Labels {
			if l.Key == labels.Benchmark {
				continue
			}
			if values[l.Key] == nil {
				values[l.Key] = map[string]bool{}
				keys = append(keys, l.Key)
			}
			values[l.Key][l.Value] = true
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if len(values[keys[i]]) > 1 {
			return keys[i]
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i] != labels.Concurrency {
			return keys[i]
		}
	}
	return labels.Concurrency
}

// place sets the sweep's values and their positions on the x axis.
func (s sweep) place() sweep {
	s.Numeric = true
	for _, c := range s.Points {
		v := c.Labels.Value(s.Axis)
		x, ok := axisValue(v)
		if s.Axis == labels.Concurrency && v == "" {
			v, x, ok = strconv.Itoa(c.Concurrency), float64(c.Concurrency), c.Concurrency > 0
		}
		s.Numeric = s.Numeric && ok && x > 0
		s.Values, s.X = append(s.Values, v), append(s.X, x)
	}
	if !s.Numeric {
		for i := range s.X {
			s.X[i] = float64(i)
		}
	}
	return s
}

// axisValue reads an axis' label value as a number: a plain number (c,
// users, qps, threads), a size (128B, 16KiB, 1MiB, in bytes) or a duration
// (50ms, in milliseconds).
func axisValue(v string) (float64, bool) {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		return x, true
	}
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			if x, err := strconv.ParseFloat(n, 64); err == nil {
				return x * u.scale, true
			}
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		return float64(d) / float64(time.Millisecond), true
	}
	return 0, false
}

// axisTitles name the well-known axes on a chart.
var axisTitles = map[string]string{
	labels.Concurrency: "concurrency (connections)",
	labels.Users:       "users",
	labels.Payload:     "response body (bytes)",
	labels.QPS:         "requested rate (req/s)",
	labels.Threads:     "proxy worker threads",
	labels.Placement:   "loadgen placement",
	labels.ServiceTime: "backend service time (ms)",
	labels.Protocol:    "protocol",
	labels.Path:        "path",
}

func axisTitle(axis string) string {
	if t, ok := axisTitles[axis]; ok {
		return t
	}
	return axis
}

// tick is how the value at i is printed under the axis: "c=8", "users=20",
// but "16KiB" or "in-mesh-x4", which say what they are.
func (s sweep) tick(i int) string {
	if _, err := strconv.ParseFloat(s.Values[i], 64); err == nil {
		return s.Axis + "=" + s.Values[i]
	}
	return s.Values[i]
}

// slug is the sweep's part of a chart id: its scenario and path with every
// character but letters and digits turned into '-'.
func (s sweep) slug() string {
	return strings.Map(slugRune, s.Scenario+"-"+string(s.Path))
}

// slugRune keeps letters and digits and turns anything else into '-'.
func slugRune(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return r
	}
	return '-'
}

// chart is an empty chart of the sweep: lines on a numeric axis, points on
// a categorical one.
func (s sweep) chart(id, title, yLabel string) Chart {
	kind := Lines
	if !s.Numeric {
		kind = Points
	}
	return Chart{ID: id + "-" + s.slug(), Title: fmt.Sprintf("%s, %s", title, s.Path), Kind: kind,
		XLabel: axisTitle(s.Axis), YLabel: yLabel, Scenario: s.Scenario, Axis: s.Axis}
}

// series is one figure of each point of the sweep, skipping points that
// lack it (get returns a Summary with N = 0).
func (s sweep) series(name string, colour int, dashed bool, get func(Comparison) stats.Summary) Series {
	out := Series{Name: name, Scenario: s.Scenario, Colour: colour, Dashed: dashed}
	for i, c := range s.Points {
		if v := get(c); v.N > 0 {
			out.Points = append(out.Points, Point{X: s.X[i], Y: v.Median, Lo: v.Lo, Hi: v.Hi, Label: s.tick(i), Run: c.Scenario()})
		}
	}
	return out
}
