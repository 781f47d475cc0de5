package mesh

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// An Adapter is one mesh as meshbench knows it: each mesh's file registers
// its own (register, from an init func), and New, Names, the baseline's
// checks and the help of the option that picks a mesh all read the registry.
type Adapter struct {
	// Name is what New takes, e.g. "istio".
	Name string
	// Rank orders Names (and so the mesh option's help and error messages):
	// lower first, then by name.
	Rank int
	// New makes the adapter from the options New was given.
	New func(config) Mesh
	// Proxies are the proxy containers the mesh injects into workload
	// pods: a baseline pod must run none of any mesh's.
	Proxies []string
	// Marks are the namespace labels and annotations that make the mesh
	// inject new pods: a baseline namespace must carry none of any mesh's.
	Marks []InjectionMark
}

// An InjectionMark is a namespace label or annotation that makes a mesh
// inject new pods: Key set to Value ("" for any value).
type InjectionMark struct {
	// Key is the label's or annotation's name, and Value the value it
	// must have ("" for any value).
	Key, Value string
	Annotation bool // an annotation, not a label
}

func (m InjectionMark) kind() string {
	if m.Annotation {
		return "annotation"
	}
	return "label"
}

var registry = struct {
	sync.Mutex
	byName map[string]Adapter
}{byName: map[string]Adapter{}}

// register adds a mesh's adapter; a name registered twice, an empty name
// or one without New panics at init, naming it.
func register(a Adapter) {
	if err := add(a); err != nil {
		panic(err)
	}
}

// add is register's check and insertion.
func add(a Adapter) error {
	registry.Lock()
	defer registry.Unlock()
	switch {
	case a.Name == "":
		return fmt.Errorf("mesh: an adapter without a name")
	case a.New == nil:
		return fmt.Errorf("mesh: adapter %q has no New", a.Name)
	}
	if _, dup := registry.byName[a.Name]; dup {
		return fmt.Errorf("mesh: adapter %q registered twice", a.Name)
	}
	registry.byName[a.Name] = a
	return nil
}

// adapters are the registered adapters in Names' order.
func adapters() []Adapter {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Adapter, 0, len(registry.byName))
	for _, a := range registry.byName {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Adapter) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Name, b.Name)) })
	return out
}

// lookup is the adapter registered as name.
func lookup(name string) (Adapter, bool) {
	registry.Lock()
	defer registry.Unlock()
	a, ok := registry.byName[name]
	return a, ok
}

// knownProxies are the proxy containers of every registered mesh.
func knownProxies() []string {
	return union(func(a Adapter) []string { return a.Proxies })
}

// injectionMarks are the injection marks of every registered mesh.
func injectionMarks() []InjectionMark {
	return union(func(a Adapter) []InjectionMark { return a.Marks })
}

// union is what of every registered adapter in Names' order, each once.
func union[T comparable](what func(Adapter) []T) []T {
	var out []T
	for _, a := range adapters() {
		for _, v := range what(a) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}
