package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// parseStubStatus reads the requests counter of nginx's stub_status page:
//
//	Active connections: 1
//	server accepts handled requests
//	 16 16 31
//	Reading: 0 Writing: 1 Waiting: 0
func parseStubStatus(body string) (int64, error) {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "server accepts handled requests" && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			if len(f) != 3 {
				break
			}
			return strconv.ParseInt(f[2], 10, 64)
		}
	}
	return 0, fmt.Errorf("not an nginx stub_status page: %q", snippet([]byte(body)))
}

// counters reads the request counters of every tunnel's nginx and sums
// them per component.
func (pa podAccess) counters(ctx context.Context, tunnels map[manifests.Component][]*tunnel) (map[manifests.Component]int64, error) {
	type res struct {
		c   manifests.Component
		n   int64
		err error
	}
	var wg sync.WaitGroup
	ch := make(chan res, 8)
	for c, ts := range tunnels {
		for _, tn := range ts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := pa.stubStatus(ctx, tn.Addr)
				ch <- res{c, n, err}
			}()
		}
	}
	go func() { wg.Wait(); close(ch) }()
	out := map[manifests.Component]int64{}
	var errs []string
	for r := range ch {
		if r.err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", r.c, r.err))
			continue
		}
		out[r.c] += r.n
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("read nginx request counters: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func (pa podAccess) stubStatus(ctx context.Context, addr string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+manifests.StatusPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := pa.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", manifests.StatusPath, resp.Status)
	}
	return parseStubStatus(string(b))
}

// counted is what the nginx counters of one arm saw during one run.
type counted struct {
	// Delta is each component's requests counter difference over the run,
	// warm-up included.
	Delta map[manifests.Component]int64
	// Pods is the number of pods of each component (each counted one read
	// of its own counter).
	Pods map[manifests.Component]int
	// Allowance is the most requests probes may have added to one
	// component's counter.
	Allowance map[manifests.Component]int64
}

func (c counted) served(comp manifests.Component) int64 {
	return max(0, c.Delta[comp]-int64(c.Pods[comp]))
}

// pathEdges proves the path of one run of a: the nginx counters give how
// many requests each hop's destination served, the mesh's telemetry (mtls,
// nil without one) whether the hop was mutually authenticated, and its
// evidence. nginx does
// not know who called it, so each destination's requests are attributed to
// the path's caller, and what exceeds what the path explains (beyond the
// probes' allowance) is reported as a stray edge from "unknown".
func pathEdges(a *arm, p testbed.Path, c counted, mtls []mesh.Edge) []testbed.Edge {
	edge := func(src, dst string, n int64) testbed.Edge { return armEdge(a, src, dst, n, mtls) }
	be, fe := c.served(manifests.Backend), c.served(manifests.Frontend)
	var out []testbed.Edge
	switch p {
	case testbed.OneHop:
		out = append(out, edge("loadgen", "backend", be))
		if extra := fe - c.Allowance[manifests.Frontend]; extra > 0 {
			out = append(out, testbed.Edge{Src: "unknown", Dst: "frontend", Requests: extra})
		}
	case testbed.TwoHop:
		out = append(out, edge("loadgen", "frontend", fe), edge("frontend", "backend", min(be, fe)))
		if extra := be - fe - c.Allowance[manifests.Backend]; extra > 0 {
			out = append(out, testbed.Edge{Src: "unknown", Dst: "backend", Requests: extra})
		}
	}
	return out
}

// armEdge is the hop src → dst of arm a that carried n requests, secured
// (with src as its verified peer) when a is meshed and the mesh's
// telemetry (mtls) says the pair was mutually authenticated, with that
// telemetry's evidence.
func armEdge(a *arm, src, dst string, n int64, mtls []mesh.Edge) testbed.Edge {
	ns := func(w string) string {
		if w == string(manifests.Loadgen) {
			return a.loadgenNS
		}
		return a.ns
	}
	e := testbed.Edge{Src: src, Dst: dst, Requests: n}
	if !a.name.IsMeshed() {
		return e
	}
	for _, m := range mtls {
		if m.Src == ns(src)+"/"+src && m.Dst == ns(dst)+"/"+dst {
			e.Evidence = m.Evidence
			if m.Secured {
				e.Peer, e.Secured = src, true
			}
		}
	}
	return e
}

// probeAllowance is how many probe requests n pods may have served in d.
func probeAllowance(n int, d time.Duration) int64 {
	per := int64(d/(manifests.ProbePeriodSeconds*time.Second)) + 2
	return int64(n) * per
}

// checkEdges is testbed.CheckEdges, except that a hop from an out-of-mesh
// loadgen is plain text by design: in the meshed arm it must carry the
// requests but is not required to be secured.
func checkEdges(a testbed.Arm, p testbed.Path, edges []testbed.Edge, minReq int64, plainFirstHop bool) validity.Reasons {
	var plain []testbed.Hop
	if plainFirstHop {
		plain = testbed.Hops(p)[:1]
	}
	return testbed.CheckEdges(a, p, edges, minReq, plain...)
}
