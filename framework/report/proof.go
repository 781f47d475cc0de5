package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/meshbench/meshbench/framework/testbed"
)

// Proof is what one arm's requests on one path went through, over every
// concurrency and repeat of the run: the path proof the summary prints.
type Proof struct {
	// Path is the request path proved.
	Path testbed.Path `json:"path"`
	// Arm is the arm whose requests went through it.
	Arm testbed.Arm `json:"arm"`
	// Placement is set for a loadgen out of the mesh, whose first hop is
	// plain text by design: its runs are proved apart from the others.
	Placement testbed.Placement `json:"placement,omitempty"`
	// Edges are the hops the requests went through, merged over the runs.
	Edges []testbed.Edge `json:"edges"`
	// Runs is the number of records merged; Invalid how many of them
	// failed a check (their edges are merged too: they show why).
	Runs    int `json:"runs"`
	Invalid int `json:"invalid"`
}

// Title names the proof: "one-hop meshed", "one-hop meshed, loadgen
// out-of-mesh".
func (p Proof) Title() string {
	if p.Placement != "" {
		return fmt.Sprintf("%s %s, loadgen %s", p.Path, p.Arm, p.Placement)
	}
	return fmt.Sprintf("%s %s", p.Path, p.Arm)
}

// Proofs merges the records' edges per path and arm (and apart, the runs
// of a loadgen out of the mesh): requests and connections add up, an edge is secured only
// when it was secured in every record, and the verified peer and evidence
// are the first record's that has them. Paths and arms come in the
// records' order.
func Proofs(recs []Record) []Proof {
	type key struct {
		p  testbed.Path
		a  testbed.Arm
		pl testbed.Placement
	}
	var order []key
	byKey := map[key]*Proof{}
	edgeAt := map[key]map[[2]string]int{}
	for _, r := range recs {
		if r.Run == nil {
			continue
		}
		k := key{r.Path, r.Arm, ""}
		if r.Run.Workload.Placement == testbed.OutOfMesh {
			k.pl = testbed.OutOfMesh
		}
		pr, ok := byKey[k]
		if !ok {
			pr = &Proof{Path: r.Path, Arm: r.Arm, Placement: k.pl}
			byKey[k], edgeAt[k] = pr, map[[2]string]int{}
			order = append(order, k)
		}
		pr.Runs++
		if len(r.Invalid) > 0 {
			pr.Invalid++
		}
		for _, e := range r.Edges {
			ek := [2]string{e.Src, e.Dst}
			i, seen := edgeAt[k][ek]
			if !seen {
				edgeAt[k][ek] = len(pr.Edges)
				pr.Edges = append(pr.Edges, e)
				continue
			}
			m := &pr.Edges[i]
			m.Requests += e.Requests
			m.Connections += e.Connections
			m.Secured = m.Secured && e.Secured
			if m.Peer == "" {
				m.Peer = e.Peer
			}
			if m.Proto != e.Proto && !strings.Contains(m.Proto, e.Proto) {
				m.Proto = strings.TrimPrefix(m.Proto+"+"+e.Proto, "+") // mixed over runs: both are shown
			}
			if m.Evidence == "" {
				m.Evidence = e.Evidence
			}
		}
	}
	out := make([]Proof, 0, len(order))
	for _, k := range order {
		pr := byKey[k]
		out = append(out, *pr)
	}
	return out
}

// Connections tells whether any of p's edges counted its connections, so
// that the reports show the column only then.
func (p Proof) Connections() bool {
	for _, e := range p.Edges {
		if e.Connections > 0 {
			return true
		}
	}
	return false
}

// PrintProofs writes one SRC / DST / SECURED table per path and arm.
func PrintProofs(w io.Writer, prefix string, ps []Proof) {
	for _, p := range ps {
		note := ""
		if p.Invalid > 0 {
			note = fmt.Sprintf(", %d of them INVALID", p.Invalid)
		}
		fmt.Fprintf(w, "%spath proof: %s (%d runs%s)\n", prefix, p.Title(), p.Runs, note)
		if len(p.Edges) == 0 {
			fmt.Fprintf(w, "%s  no edge observed\n", prefix)
			continue
		}
		testbed.PrintEdges(w, p.Edges)
	}
}
