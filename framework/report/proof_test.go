package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestProofsMergeEdges(t *testing.T) {
	rec := func(arm testbed.Arm, p testbed.Path, invalid bool, edges ...testbed.Edge) Record {
		r := &testbed.Run{Arm: arm, Path: p, Edges: edges}
		if invalid {
			r.Invalidate(validity.MeshNotOn, "an edge was plain")
		}
		return Record{Run: r}
	}
	lg := func(secured bool, n int64, peer string) testbed.Edge {
		return testbed.Edge{Src: "loadgen", Dst: "backend", Secured: secured, Requests: n, Peer: peer}
	}
	recs := []Record{
		rec(testbed.Baseline, testbed.OneHop, false, lg(false, 100, "")),
		rec(testbed.Meshed, testbed.OneHop, false, lg(true, 90, "")),
		rec(testbed.Baseline, testbed.OneHop, false, lg(false, 110, "")),
		rec(testbed.Meshed, testbed.OneHop, true, lg(false, 80, "CN=loadgen"), testbed.Edge{Src: "frontend", Dst: "backend", Requests: 1}),
		rec(testbed.Meshed, testbed.TwoHop, false),
	}
	ps := Proofs(recs)
	assert.Equal(t, []Proof{
		{Path: testbed.OneHop, Arm: testbed.Baseline, Runs: 2, Edges: []testbed.Edge{lg(false, 210, "")}},
		{Path: testbed.OneHop, Arm: testbed.Meshed, Runs: 2, Invalid: 1, Edges: []testbed.Edge{
			lg(false, 170, "CN=loadgen"), // one plain record makes the edge plain
			{Src: "frontend", Dst: "backend", Requests: 1},
		}},
		{Path: testbed.TwoHop, Arm: testbed.Meshed, Runs: 1},
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
		return Record{Run: &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Edges: []testbed.Edge{
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
	rec := func(pl testbed.Placement, secured bool, evidence string) Record {
		return Record{Run: &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Workload: testbed.Workload{Placement: pl},
			Edges: []testbed.Edge{{Src: "loadgen", Dst: "backend", Secured: secured, Requests: 10, Evidence: evidence}}}}
	}
	ps := Proofs([]Record{rec(testbed.InMesh, true, "verified"), rec(testbed.OutOfMesh, false, "plain"), rec("", true, "verified")})
	assert.Equal(t, []Proof{
		{Path: testbed.OneHop, Arm: testbed.Meshed, Runs: 2, Edges: []testbed.Edge{{Src: "loadgen", Dst: "backend", Secured: true, Requests: 20, Evidence: "verified"}}},
		{Path: testbed.OneHop, Arm: testbed.Meshed, Placement: testbed.OutOfMesh, Runs: 1, Edges: []testbed.Edge{{Src: "loadgen", Dst: "backend", Requests: 10, Evidence: "plain"}}},
	}, ps)
	assert.Equal(t, "one-hop meshed, loadgen out-of-mesh", ps[1].Title())
	var b bytes.Buffer
	PrintProofs(&b, "# ", ps[1:])
	assert.Equal(t, "# path proof: one-hop meshed, loadgen out-of-mesh (1 runs)\nSRC      DST      SECURED  REQUESTS  EVIDENCE\nloadgen  backend  no       10        plain\n", b.String())
}

// TestProofsMergeConnections: connections add up over the runs like
// requests, and the Markdown table shows them per request only when the
// runs counted them.
func TestProofsMergeConnections(t *testing.T) {
	rec := func(arm testbed.Arm, req, conns int64) Record {
		return Record{Run: &testbed.Run{Arm: arm, Path: testbed.OneHop, Edges: []testbed.Edge{
			{Src: "loadgen", Dst: "backend", Secured: arm == testbed.Meshed, Peer: map[bool]string{true: "loadgen"}[arm == testbed.Meshed], Requests: req, Connections: conns}}}}
	}
	ps := Proofs([]Record{rec(testbed.Baseline, 300, 300), rec(testbed.Baseline, 700, 700), rec(testbed.Meshed, 500, 2), rec(testbed.Meshed, 500, 2)})
	require.Len(t, ps, 2)
	assert.Equal(t, []int64{1000, 4}, []int64{ps[0].Edges[0].Connections, ps[1].Edges[0].Connections})
	var b strings.Builder
	mdProofs(&b, ps)
	assert.Equal(t, `one-hop baseline (2 runs):

| SRC | DST | SECURED | VERIFIED PEER | REQUESTS | CONNECTIONS |
| --- | --- | --- | --- | --- | --- |
| loadgen | backend | no | - | 1000 | 1000 (1 per request) |

one-hop meshed (2 runs):

| SRC | DST | SECURED | VERIFIED PEER | REQUESTS | CONNECTIONS |
| --- | --- | --- | --- | --- | --- |
| loadgen | backend | yes (mTLS) | loadgen | 1000 | 4 (0.004 per request) |

`, b.String())
	b.Reset()
	mdProofs(&b, Proofs([]Record{rec(testbed.Baseline, 10, 0)}))
	assert.NotContains(t, b.String(), "CONNECTIONS", "not counted: no column")
}
