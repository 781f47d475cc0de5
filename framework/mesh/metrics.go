package mesh

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// series is one sample line of a Prometheus or OpenMetrics exposition.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// readSeries reads the samples of the named metrics from an exposition.
// It is deliberately tolerant: proxies expose text format, OpenMetrics
// (`# EOF`, families named without `_total`) and tool output with comment
// banners, and only the sample lines matter here.
func readSeries(r io.Reader, names ...string) ([]series, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []series
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		name, rest := text, ""
		if i := strings.IndexAny(text, "{ \t"); i >= 0 {
			name, rest = text[:i], text[i:]
		}
		if !want[name] {
			continue
		}
		s := series{name: name, labels: map[string]string{}}
		if strings.HasPrefix(rest, "{") {
			end, err := parseLabels(rest, s.labels)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			rest = rest[end:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("line %d: %s has no value", line, name)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: bad value %q", line, name, fields[0])
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels parses `{a="x",b="y"}` at the start of s into m and returns
// the index just past the closing brace.
func parseLabels(s string, m map[string]string) (int, error) {
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return 0, fmt.Errorf("unterminated label set")
		}
		if s[i] == '}' {
			return i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return 0, fmt.Errorf("label without value")
		}
		key := strings.TrimSpace(s[i : i+eq])
		i += eq + 1
		if i >= len(s) || s[i] != '"' {
			return 0, fmt.Errorf("label %s: value not quoted", key)
		}
		i++
		var b strings.Builder
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return 0, fmt.Errorf("label %s: unterminated value", key)
		}
		m[key] = b.String()
		i++
	}
}

// observation is one series' say about one edge.
type observation struct {
	src, dst string
	secured  bool
	// authoritative is false for telemetry that cannot know whether the
	// connection was mTLS (Istio's client-side reporter).
	authoritative bool
	evidence      string
}

// mergeEdges folds observations into one Edge per (src, dst). An edge is
// secured when every authoritative observation of it is; an edge seen only
// by non-authoritative telemetry is not secured, and says so.
func mergeEdges(obs []observation) []Edge {
	type acc struct {
		auth, other []observation
	}
	by := map[[2]string]*acc{}
	for _, o := range obs {
		k := [2]string{o.src, o.dst}
		a := by[k]
		if a == nil {
			a = &acc{}
			by[k] = a
		}
		if o.authoritative {
			a.auth = append(a.auth, o)
		} else {
			a.other = append(a.other, o)
		}
	}
	var out []Edge
	for k, a := range by {
		e := Edge{Src: k[0], Dst: k[1]}
		if len(a.auth) == 0 {
			e.Evidence = "unverified: only client-side telemetry (" + a.other[0].evidence +
				"), which cannot see mTLS; read the destination's proxy"
			out = append(out, e)
			continue
		}
		e.Secured = true
		var ev []string
		for _, o := range a.auth {
			e.Secured = e.Secured && o.secured
			ev = append(ev, o.evidence)
		}
		sort.Strings(ev)
		e.Evidence = strings.Join(dedup(ev), "; ")
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Src != out[j].Src {
			return out[i].Src < out[j].Src
		}
		return out[i].Dst < out[j].Dst
	})
	return out
}

// MergeEdges merges edges read from several pods: a pair is secured only if
// every read of it says so.
func MergeEdges(edges ...[]Edge) []Edge {
	var obs []observation
	for _, es := range edges {
		for _, e := range es {
			obs = append(obs, observation{src: e.Src, dst: e.Dst, secured: e.Secured, authoritative: true, evidence: e.Evidence})
		}
	}
	return mergeEdges(obs)
}

func dedup(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// describe renders a series with the labels that justify a verdict.
func describe(s series, keys ...string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := s.labels[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	return fmt.Sprintf("%s{%s} %g", s.name, strings.Join(parts, ","), s.value)
}

func workloadName(ns, name string) string {
	if ns == "" || ns == "unknown" || name == "" || name == "unknown" {
		return "unknown"
	}
	return ns + "/" + name
}
