// Package labels names a measurement by the values of its axes, in the
// key=value form benchstat pivots on (payload=16KiB/c=8/arm=meshed). Every
// record, comparison, threshold rule and gate rule is keyed by a label set,
// so a sweep over any axis, nested to any depth, keeps every record apart.
package labels

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Well-known axes. A scenario may add its own; these are the ones the
// framework itself sets or reads.
const (
	Benchmark   = "benchmark" // top-level benchmark, e.g. BenchmarkOneHop
	Path        = "path"      // one-hop, two-hop, 3-hop …
	Concurrency = "c"         // connections
	Arm         = "arm"       // baseline, meshed, reference, candidate
	QPS         = "qps"       // open-loop rate
	Payload     = "payload"   // response body size
	Placement   = "placement" // in-mesh, out-of-mesh
	Threads     = "threads"   // proxy worker threads
	Protocol    = "protocol"  // http1, h2, grpc
	ServiceTime = "service"   // backend service time
	Users       = "users"     // user-flow users
)

// Label is one axis and its value.
type Label struct {
	// Key is the axis, e.g. "c".
	Key string `json:"k"`
	// Value is the axis's value, e.g. "8".
	Value string `json:"v"`
}

// String is "key=value".
func (l Label) String() string { return l.Key + "=" + l.Value }

// Set is an ordered list of labels with unique keys. The order is the
// order of the sub-benchmark name, outermost first.
type Set []Label

// Parse reads a benchmark name such as
// "BenchmarkPayload/payload=16KiB/c=8/arm=meshed" (testing.B.Name): the
// first element is the benchmark, each "key=value" element is a label, and
// any other element is kept under the key "sub1", "sub2" … so that nothing
// is lost. testing's "#01" de-duplication suffix stays part of the value:
// two sweeps of the same name are two scenarios.
func Parse(name string) Set {
	parts := strings.Split(name, "/")
	var s Set
	if parts[0] != "" {
		s = s.With(Benchmark, parts[0])
	}
	anon := 0
	for _, p := range parts[1:] {
		if k, v, ok := strings.Cut(p, "="); ok && k != "" {
			s = s.With(k, v)
			continue
		}
		anon++
		s = s.With(fmt.Sprintf("sub%d", anon), p)
	}
	return s
}

// Get returns the value of key and whether it is set.
func (s Set) Get(key string) (string, bool) {
	for _, l := range s {
		if l.Key == key {
			return l.Value, true
		}
	}
	return "", false
}

// Value returns the value of key, or "".
func (s Set) Value(key string) string { v, _ := s.Get(key); return v }

// With returns a copy of s with key set to value: replaced in place when
// key is already there, appended otherwise.
func (s Set) With(key, value string) Set {
	out := slices.Clone(s)
	for i, l := range out {
		if l.Key == key {
			out[i].Value = value
			return out
		}
	}
	return append(out, Label{key, value})
}

// Without returns a copy of s without the given keys.
func (s Set) Without(keys ...string) Set {
	var out Set
	for _, l := range s {
		if !slices.Contains(keys, l.Key) {
			out = append(out, l)
		}
	}
	return out
}

// String is the benchstat-style name: the benchmark, then key=value for
// every other label, joined by "/".
func (s Set) String() string {
	var parts []string
	if b, ok := s.Get(Benchmark); ok {
		parts = append(parts, b)
	}
	for _, l := range s {
		if l.Key != Benchmark {
			parts = append(parts, l.String())
		}
	}
	return strings.Join(parts, "/")
}

// Key is a comparable form of s, for maps.
func (s Set) Key() string { return s.String() }

// Map returns s as a map.
func (s Set) Map() map[string]string {
	m := make(map[string]string, len(s))
	for _, l := range s {
		m[l.Key] = l.Value
	}
	return m
}

// Matches reports whether every key of want is in s with a value that
// matches want's, where want's value may be a path.Match glob ("*",
// "1?KiB"). A key want has and s lacks never matches, unless want's value
// is "*".
func (s Set) Matches(want map[string]string) bool {
	for k, pattern := range want {
		v, ok := s.Get(k)
		if !ok {
			if pattern == "*" {
				continue
			}
			return false
		}
		if ok, err := path.Match(pattern, v); err != nil || !ok {
			return false
		}
	}
	return true
}

// MarshalJSON writes s as a JSON object in label order, so results files
// read like the benchmark name.
func (s Set) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(l.Key)
		v, _ := json.Marshal(l.Value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// UnmarshalJSON reads the object MarshalJSON writes, keeping its order.
func (s *Set) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("labels: want an object, got %v", tok)
	}
	var out Set
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("labels: value of %q: %w", kt, err)
		}
		out = out.With(kt.(string), v)
	}
	*s = out
	return nil
}
