package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestProofsMergeEdges(t *testing.T) {
	rec := func(arm target.Arm, p target.Path, invalid bool, edges ...target.Edge) Record {
		r := &target.Run{Arm: arm, Path: p, Edges: edges}
		if invalid {
			r.Invalidate(validity.MeshNotOn, "an edge was plain")
		}
		return Record{Run: r}
	}
	lg := func(secured bool, n int64, peer string) target.Edge {
		return target.Edge{Src: "loadgen", Dst: "backend", Secured: secured, Requests: n, Peer: peer}
	}
	recs := []Record{
		rec(target.Baseline, target.OneHop, false, lg(false, 100, "")),
		rec(target.Meshed, target.OneHop, false, lg(true, 90, "")),
		rec(target.Baseline, target.OneHop, false, lg(false, 110, "")),
		rec(target.Meshed, target.OneHop, true, lg(false, 80, "CN=loadgen"), target.Edge{Src: "frontend", Dst: "backend", Requests: 1}),
		rec(target.Meshed, target.TwoHop, false),
	}
	ps := Proofs(recs)
	assert.Equal(t, []Proof{
		{Path: target.OneHop, Arm: target.Baseline, Runs: 2, Edges: []target.Edge{lg(false, 210, "")}},
		{Path: target.OneHop, Arm: target.Meshed, Runs: 2, Invalid: 1, Edges: []target.Edge{
			lg(false, 170, "CN=loadgen"), // one plain record makes the edge plain
			{Src: "frontend", Dst: "backend", Requests: 1},
		}},
		{Path: target.TwoHop, Arm: target.Meshed, Runs: 1},
	}, ps)

	var b bytes.Buffer
	PrintProofs(&b, "# ", ps)
	assert.Equal(t, `# path proof: one-hop baseline (2 runs)
SRC      DST      SECURED  REQUESTS
loadgen  backend  no       210
# path proof: one-hop meshed (2 runs, 1 of them INVALID)
SRC       DST      SECURED  VERIFIED PEER  REQUESTS
loadgen   backend  no       CN=loadgen     170
frontend  backend  no       -              1
# path proof: two-hop meshed (1 runs)
#   no edge observed
`, b.String())
}

// TestProofsMergeProtocols: an edge keeps the protocol its runs spoke, and
// shows both when runs of one path and arm spoke different ones.
func TestProofsMergeProtocols(t *testing.T) {
	rec := func(proto string) Record {
		return Record{Run: &target.Run{Arm: target.Meshed, Path: target.OneHop, Edges: []target.Edge{
			{Src: "loadgen", Dst: "backend", Secured: true, Proto: proto, Requests: 10}}}}
	}
	ps := Proofs([]Record{rec("HTTP/2.0"), rec("HTTP/2.0")})
	assert.Equal(t, "HTTP/2.0", ps[0].Edges[0].Proto)
	ps = Proofs([]Record{rec(""), rec("HTTP/2.0"), rec("HTTP/1.1"), rec("HTTP/2.0")})
	assert.Equal(t, "HTTP/2.0+HTTP/1.1", ps[0].Edges[0].Proto)
	assert.Equal(t, int64(40), ps[0].Edges[0].Requests)
}

// TestProofsApartOutOfMesh: the runs of a loadgen out of the mesh, whose
// first hop is plain by design, are proved apart, so that they do not
// make the in-mesh runs' edge look plain.
func TestProofsApartOutOfMesh(t *testing.T) {
	rec := func(pl target.Placement, secured bool, evidence string) Record {
		return Record{Run: &target.Run{Arm: target.Meshed, Path: target.OneHop, Workload: target.Workload{Placement: pl},
			Edges: []target.Edge{{Src: "loadgen", Dst: "backend", Secured: secured, Requests: 10, Evidence: evidence}}}}
	}
	ps := Proofs([]Record{rec(target.InMesh, true, "verified"), rec(target.OutOfMesh, false, "plain"), rec("", true, "verified")})
	assert.Equal(t, []Proof{
		{Path: target.OneHop, Arm: target.Meshed, Runs: 2, Edges: []target.Edge{{Src: "loadgen", Dst: "backend", Secured: true, Requests: 20, Evidence: "verified"}}},
		{Path: target.OneHop, Arm: target.Meshed, Placement: target.OutOfMesh, Runs: 1, Edges: []target.Edge{{Src: "loadgen", Dst: "backend", Requests: 10, Evidence: "plain"}}},
	}, ps)
	assert.Equal(t, "one-hop meshed, loadgen out-of-mesh", ps[1].Title())
	var b bytes.Buffer
	PrintProofs(&b, "# ", ps[1:])
	assert.Equal(t, "# path proof: one-hop meshed, loadgen out-of-mesh (1 runs)\nSRC      DST      SECURED  REQUESTS  EVIDENCE\nloadgen  backend  no       10        plain\n", b.String())
}
