package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/pki"
	"github.com/meshbench/meshbench/framework/testbed"
)

// newSidecar makes the bring-your-own sidecar's wiring for one run: a
// run-scoped CA and a certificate per workload (framework/pki), which go to
// the cluster as one Secret per workload and nowhere else. The proxy image
// defaults to the workloads' nginx image.
func newSidecar(sp mesh.SidecarProxy, workers int) (*manifests.Sidecar, error) {
	name, image, args := sp.Proxy()
	ca, err := pki.NewAuthority(0)
	if err != nil {
		return nil, fmt.Errorf("kube target: sidecar CA: %w", err)
	}
	dir, err := os.MkdirTemp("", "meshbench-pki-")
	if err != nil {
		return nil, fmt.Errorf("kube target: sidecar certificates: %w", err)
	}
	defer os.RemoveAll(dir)
	sc := &manifests.Sidecar{Name: name, Image: image, Args: args, Workers: workers, CA: ca.CertPEM(),
		Identities: map[manifests.Component]manifests.KeyPair{}}
	for _, c := range manifests.Components {
		id, err := ca.Issue(string(c), dir)
		if err != nil {
			return nil, fmt.Errorf("kube target: sidecar certificate of %s: %w", c, err)
		}
		if id.ServerName() != manifests.ServerName(c) {
			return nil, fmt.Errorf("kube target: certificate of %s names %s, the sidecars expect %s", c, id.ServerName(), manifests.ServerName(c))
		}
		sc.Identities[c] = manifests.KeyPair{Cert: id.CertPEM, Key: id.KeyPEM}
	}
	return sc, nil
}

// peerCounts reads the sidecar mesh's verified-peer counters of arm a.
func (t *Target) peerCounts(ctx context.Context, a *arm) ([]mesh.Edge, error) {
	mc, ok := t.o.Mesh.(mesh.MTLSChecker)
	if !ok {
		return nil, errors.New("the sidecar mesh has no mTLS evidence")
	}
	es, err := mc.MTLS(ctx, t.c, a.ns)
	if err != nil {
		return nil, fmt.Errorf("verified peers before the run: %w", err)
	}
	return es, nil
}

// plainCounts reads, per workload of arm a, the requests its sidecars
// took on their plain (permissive) port, from each sidecar's log of them
// through the API server's pod proxy; cumulative since the pods started.
func (pa podAccess) plainCounts(ctx context.Context, a *arm) (map[string]int64, error) {
	out := map[string]int64{}
	for _, c := range []manifests.Component{manifests.Backend, manifests.Frontend} {
		pods, err := pa.pods.ready(ctx, a.ns, c)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			body, err := pa.pods.c.CoreV1().Pods(a.ns).ProxyGet("http", p.Name, strconv.Itoa(manifests.SidecarStatusPort), manifests.PlainPath, nil).DoRaw(ctx)
			if err != nil {
				return nil, fmt.Errorf("read the plain requests of %s/%s (port %d%s): %w", a.ns, p.Name, manifests.SidecarStatusPort, manifests.PlainPath, err)
			}
			out[string(c)] += int64(strings.Count(string(body), "\n"))
		}
	}
	return out, nil
}

// plainDelta is the plain requests per workload between two reads; a
// workload whose count went down (its sidecar's log restarted) counts
// from zero.
func plainDelta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for w, n := range after {
		if d := n - before[w]; d > 0 {
			out[w] = d
		} else if d < 0 {
			out[w] = n
		}
	}
	return out
}

// sidecarEdges proves the path of one run of the sidecar-meshed arm. Each
// hop's requests are those the callee's sidecar verified the caller's
// certificate for during the run (the difference of its log of verified
// peers, before and after): such a hop is Secured with the verified peer.
// Requests a sidecar took on its plain (permissive) port, plain, are the
// first hop's when the loadgen is out of the mesh (plain text by design),
// and a stray unsecured edge from "unknown" otherwise. Requests a callee's
// app served beyond what its sidecar verified or took plain (and the
// probes' allowance) did not come through the mesh: they are an unsecured
// edge from "unknown".
func sidecarEdges(p testbed.Path, c counted, before, after []mesh.Edge, plain map[string]int64, outOfMesh bool) []testbed.Edge {
	delta := verifiedDelta(before, after)
	recordedAt := map[string]int64{}
	for k, n := range delta {
		recordedAt[k.dst] += n
	}
	for w, n := range plain {
		recordedAt[w] += n
	}
	var out []testbed.Edge
	seen := map[pair]bool{}
	first := testbed.Hops(p)[0]
	for _, h := range testbed.Hops(p) {
		k := pair{h.Src, h.Dst}
		seen[k] = true
		e := testbed.Edge{Src: h.Src, Dst: h.Dst, Requests: delta[k]}
		if e.Requests > 0 {
			e.Peer, e.Secured = h.Src, true
			e.Evidence = fmt.Sprintf("%s's sidecar verified the client certificate CN=%s", h.Dst, h.Src)
		}
		if h == first && outOfMesh {
			e = plainEdge(e, plain[h.Dst])
		}
		out = append(out, e)
	}
	extra := strayEdges(delta, seen)
	for w, n := range plain {
		if n > 0 && (!outOfMesh || w != first.Dst) {
			extra = append(extra, testbed.Edge{Src: "unknown", Dst: w, Requests: n, Evidence: "plain text on " + w + "'s sidecar's permissive port"})
		}
	}
	for _, comp := range []manifests.Component{manifests.Backend, manifests.Frontend} {
		if bypass := c.served(comp) - recordedAt[string(comp)] - c.Allowance[comp]; bypass > 0 {
			extra = append(extra, testbed.Edge{Src: "unknown", Dst: string(comp), Requests: bypass,
				Evidence: "served by the app without its sidecar's verification"})
		}
	}
	sort.Slice(extra, func(i, j int) bool {
		if extra[i].Dst != extra[j].Dst {
			return extra[i].Dst < extra[j].Dst
		}
		return extra[i].Src < extra[j].Src
	})
	return append(out, extra...)
}

// plainEdge is the out-of-mesh loadgen's hop: the plain requests its
// callee's sidecar took, unsecured by design (and, should the loadgen have
// been verified too, those).
func plainEdge(e testbed.Edge, plain int64) testbed.Edge {
	if plain == 0 {
		return e
	}
	e.Requests += plain
	e.Secured, e.Peer = false, ""
	e.Evidence = fmt.Sprintf("%s's sidecar took %d requests in plain text on its permissive port %d", e.Dst, plain, manifests.PlainPort)
	return e
}

// pair is a caller → callee pair, by workload.
type pair struct{ src, dst string }

// verifiedDelta is the run's verified requests per caller → callee pair,
// from two reads of the sidecars' logs of verified peers.
func verifiedDelta(before, after []mesh.Edge) map[pair]int64 {
	strip := func(s string) string {
		if _, w, ok := strings.Cut(s, "/"); ok {
			return w
		}
		return s
	}
	sum := func(es []mesh.Edge) map[pair]int64 {
		out := map[pair]int64{}
		for _, e := range es {
			src := e.Peer
			if src == "" || !e.Secured {
				src = "unknown"
			}
			out[pair{src, strip(e.Dst)}] += e.Requests
		}
		return out
	}
	b, aft := sum(before), sum(after)
	delta := map[pair]int64{}
	for k, n := range aft {
		if d := n - b[k]; d > 0 {
			delta[k] = d
		}
	}
	return delta
}

// strayEdges are the verified pairs off the path.
func strayEdges(delta map[pair]int64, seen map[pair]bool) []testbed.Edge {
	var extra []testbed.Edge
	for k, n := range delta {
		if seen[k] {
			continue
		}
		e := testbed.Edge{Src: k.src, Dst: k.dst, Requests: n}
		if k.src != "unknown" {
			e.Peer, e.Secured = k.src, true
			e.Evidence = fmt.Sprintf("%s's sidecar verified the client certificate CN=%s", k.dst, k.src)
		}
		extra = append(extra, e)
	}
	return extra
}
