package cgroups

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CountersPath is the agent's read: GET CountersPath?c=<pod UID>,<QoS
// class>,<container ID>, repeated for each container.
const CountersPath = "/v1/counters"

// HealthPath answers 200 while the agent runs.
const HealthPath = "/healthz"

// AgentPort is the port the agent (cmd/mbnodecpu) listens on in its pod.
const AgentPort = 9110

// Reading is the agent's answer: the node's counters and those of each
// container asked for, with the node's clocks around the read.
type Reading struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Layout is the node's cgroup layout, as detected.
	Layout Layout `json:"layout"`
	// StartNanos and EndNanos are the node's CLOCK_MONOTONIC when the read
	// began and ended, in ns; Time is its wall clock when it began.
	StartNanos int64     `json:"startNanos"`
	EndNanos   int64     `json:"endNanos"`
	Time       time.Time `json:"time"`
	// NodeCounters are the counters of the tree's root: the whole node.
	NodeCounters Counters `json:"nodeCounters"`
	// NodeNanos is the monotonic clock when they were read.
	NodeNanos int64 `json:"nodeNanos"`
	// Containers are the containers asked for, in the order asked.
	Containers []ContainerReading `json:"containers"`
}

// ContainerReading is one container's part of a Reading: its cgroup and
// counters, or why it has none.
type ContainerReading struct {
	Container
	// Cgroup is the directory read, relative to the tree's root.
	Cgroup string `json:"cgroup,omitempty"`
	// Nanos is the node's monotonic clock when the counters were read.
	Nanos int64 `json:"nanos,omitempty"`
	// Counters are the container's counters; nil when it has none (Error).
	Counters *Counters `json:"counters,omitempty"`
	// Error says why Counters is nil; NotFound that the cgroup is not
	// where the layout puts it (the container is gone, or the layout is
	// not recognised: Error names what was found).
	Error    string `json:"error,omitempty"`
	NotFound bool   `json:"notFound,omitempty"`
}

// Clock returns the node's monotonic clock in ns and its wall clock.
type Clock func() (mono int64, wall time.Time)

// Handler serves the counters of the cgroup tree fsys (the host's
// /sys/fs/cgroup, mounted read-only) on node. It detects the layout on
// the first read that succeeds, and keeps it.
type Handler struct {
	fsys  fs.FS
	node  string
	clock Clock

	mu     sync.Mutex
	layout *Layout
}

// NewHandler returns the agent's HTTP handler for the tree fsys on node,
// timed by clock.
func NewHandler(fsys fs.FS, node string, clock Clock) *Handler {
	return &Handler{fsys: fsys, node: node, clock: clock}
}

// ServeHTTP answers CountersPath and HealthPath.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case HealthPath:
		_, _ = w.Write([]byte("ok\n"))
	case CountersPath:
		h.serveCounters(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) serveCounters(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	cs, err := ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rd, err := h.Read(cs)
	if err != nil {
		http.Error(w, fmt.Sprintf("node %s: %v", h.node, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rd)
}

// Read reads the node's counters and those of cs, now. A container that
// cannot be read has its error in its ContainerReading; the error
// returned is the node's: an unrecognised tree, an unreadable root.
func (h *Handler) Read(cs []Container) (Reading, error) {
	l, err := h.detect()
	if err != nil {
		return Reading{}, err
	}
	rd := Reading{Node: h.node, Layout: l, Containers: make([]ContainerReading, 0, len(cs))}
	rd.StartNanos, rd.Time = h.clock()
	rd.NodeNanos = rd.StartNanos
	if rd.NodeCounters, err = l.ReadNode(h.fsys); err != nil {
		return Reading{}, fmt.Errorf("the node's own counters: %w", err)
	}
	for _, c := range cs {
		rd.Containers = append(rd.Containers, h.readContainer(l, c))
	}
	rd.EndNanos, _ = h.clock()
	return rd, nil
}

func (h *Handler) readContainer(l Layout, c Container) ContainerReading {
	cr := ContainerReading{Container: c}
	dir, err := l.Find(h.fsys, c)
	if err != nil {
		var nf *NotFoundError
		cr.Error, cr.NotFound = err.Error(), errors.As(err, &nf)
		return cr
	}
	cr.Cgroup = dir
	rel, _ := l.Dir(c)
	cr.Nanos, _ = h.clock()
	n, err := l.Read(h.fsys, rel)
	if err != nil {
		cr.Error = fmt.Sprintf("%v: %v", c, err)
		return cr
	}
	cr.Counters = &n
	return cr
}

func (h *Handler) detect() (Layout, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.layout != nil {
		return *h.layout, nil
	}
	l, err := Detect(h.fsys)
	if err != nil {
		return Layout{}, err
	}
	h.layout = &l
	return l, nil
}

// Query encodes cs as CountersPath's query.
func Query(cs []Container) url.Values {
	q := url.Values{}
	for _, c := range cs {
		q.Add("c", c.PodUID+","+string(c.QOS)+","+c.ID)
	}
	return q
}

// ParseQuery decodes CountersPath's query.
func ParseQuery(q url.Values) ([]Container, error) {
	var cs []Container
	for _, v := range q["c"] {
		parts := strings.Split(v, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("c=%q: want <pod UID>,<QoS class>,<container ID>", v)
		}
		cs = append(cs, Container{PodUID: parts[0], QOS: QOSClass(parts[1]), ID: parts[2]})
	}
	return cs, nil
}
