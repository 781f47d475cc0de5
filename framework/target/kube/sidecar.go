package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/pki"
	"github.com/meshbench/meshbench/framework/target"
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

// sidecarEdges proves the path of one run of the sidecar-meshed arm. Each
// hop's requests are those the callee's sidecar verified the caller's
// certificate for during the run (the difference of its log of verified
// peers, before and after): such a hop is Secured with the verified peer.
// Requests a callee's app served beyond what its sidecar verified (and the
// probes' allowance) did not come through the mesh: they are an unsecured
// edge from "unknown".
func sidecarEdges(p target.Path, c counted, before, after []mesh.Edge) []target.Edge {
	type pair struct{ src, dst string }
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
	verifiedAt := map[string]int64{}
	for k, n := range delta {
		verifiedAt[k.dst] += n
	}
	var out []target.Edge
	seen := map[pair]bool{}
	for _, h := range target.Hops(p) {
		k := pair{h.Src, h.Dst}
		seen[k] = true
		e := target.Edge{Src: h.Src, Dst: h.Dst, Requests: delta[k]}
		if e.Requests > 0 {
			e.Peer, e.Secured = h.Src, true
			e.Evidence = fmt.Sprintf("%s's sidecar verified the client certificate CN=%s", h.Dst, h.Src)
		}
		out = append(out, e)
	}
	var extra []target.Edge
	for k, n := range delta {
		if seen[k] {
			continue
		}
		e := target.Edge{Src: k.src, Dst: k.dst, Requests: n}
		if k.src != "unknown" {
			e.Peer, e.Secured = k.src, true
			e.Evidence = fmt.Sprintf("%s's sidecar verified the client certificate CN=%s", k.dst, k.src)
		}
		extra = append(extra, e)
	}
	for _, comp := range []manifests.Component{manifests.Backend, manifests.Frontend} {
		if bypass := c.served(comp) - verifiedAt[string(comp)] - c.Allowance[comp]; bypass > 0 {
			extra = append(extra, target.Edge{Src: "unknown", Dst: string(comp), Requests: bypass,
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
