package kube

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// XFRM is what the kernel's IPsec states of one node hold: how many states
// there are, and the bytes and packets they have carried since they were
// made (`ip -s xfrm state`, "lifetime current").
type XFRM struct {
	States  int   `json:"states"`  // count
	Bytes   int64 `json:"bytes"`   // bytes carried, all states
	Packets int64 `json:"packets"` // packets carried, all states
}

var xfrmCurrent = regexp.MustCompile(`^(\d+)\(bytes\), (\d+)\(packets\)$`)

// ParseXFRM reads the output of `ip -s xfrm state`: one "src … dst …" line
// opens each state, and the line after its "lifetime current:" gives the
// bytes and packets it carried.
func ParseXFRM(out []byte) (XFRM, error) {
	var x XFRM
	sc := bufio.NewScanner(bytes.NewReader(out))
	current, counted := false, 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "src "):
			x.States++
		case line == "lifetime current:":
			current = true
		case current:
			current = false
			m := xfrmCurrent.FindStringSubmatch(line)
			if m == nil {
				return x, fmt.Errorf("xfrm state %d: lifetime current: want \"N(bytes), M(packets)\", got %q", x.States, line)
			}
			b, _ := strconv.ParseInt(m[1], 10, 64)
			p, _ := strconv.ParseInt(m[2], 10, 64)
			x.Bytes, x.Packets, counted = x.Bytes+b, x.Packets+p, counted+1
		}
	}
	if err := sc.Err(); err != nil {
		return x, err
	}
	if counted != x.States {
		return x, fmt.Errorf("xfrm: %d states but %d with counters (was ip run with -s?)", x.States, counted)
	}
	return x, nil
}

// readXFRM reads every node's IPsec states; nil without KernelProof.
func (t *Target) readXFRM(ctx context.Context) (map[string]XFRM, error) {
	if !t.o.KernelProof || t.o.NodeExec == nil {
		return nil, nil
	}
	out := make(map[string]XFRM, len(t.nodes))
	for _, n := range t.nodes {
		b, err := t.o.NodeExec(ctx, n.Name, "ip", "-s", "xfrm", "state")
		if err != nil {
			return nil, fmt.Errorf("node %s: ip -s xfrm state: %w", n.Name, err)
		}
		x, err := ParseXFRM(b)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		out[n.Name] = x
	}
	return out, nil
}

// encryptionOver is the growth of the nodes' IPsec states between two
// reads; nil when there was no read. States are those after the window.
func encryptionOver(before, after map[string]XFRM) *testbed.Encryption {
	if before == nil || after == nil {
		return nil
	}
	e := &testbed.Encryption{Mechanism: "IPsec", Source: "ip -s xfrm state on every node", Nodes: len(after)}
	for n, a := range after {
		b := before[n]
		e.States += a.States
		// A state replaced during the window (a key rotation) restarts its
		// counters: count what the new one carried.
		if a.Packets >= b.Packets {
			e.Packets += a.Packets - b.Packets
			e.Bytes += a.Bytes - b.Bytes
		} else {
			e.Packets += a.Packets
			e.Bytes += a.Bytes
		}
	}
	return e
}

// judgeEncryption checks the kernel's account of the window against the
// arm: a meshed arm of a mesh that encrypts with IPsec must have moved the
// nodes' XFRM counters, and a baseline must not have.
func judgeEncryption(run *testbed.Run, mechanism string) {
	e := run.Encryption
	if e == nil {
		return
	}
	switch {
	case run.Arm != testbed.Baseline && mechanism == "IPsec" && e.Packets == 0:
		run.Invalidate(validity.MeshNotOn,
			"IPsec not proven: the nodes' %d XFRM states carried no packets over the window", e.States)
		for i := range run.Edges {
			run.Edges[i].Secured = false
		}
	case run.Arm != testbed.Baseline && mechanism == "IPsec":
		for i := range run.Edges {
			if run.Edges[i].Secured {
				run.Edges[i].Mechanism = "IPsec"
				run.Edges[i].Evidence = strings.TrimSpace(fmt.Sprintf("%s; XFRM +%d packets, +%d bytes in %d states on %d nodes",
					run.Edges[i].Evidence, e.Packets, e.Bytes, e.States, e.Nodes))
			}
		}
	case run.Arm == testbed.Baseline && e.Packets > 0:
		run.Invalidate(validity.BaselineMeshed,
			"baseline encrypted: the nodes' XFRM states carried %d packets over the window (a cluster-wide mesh needs its baseline on another cluster)", e.Packets)
	}
}
