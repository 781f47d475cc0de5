package kube

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
)

// compareMinMillicores is the CPU below which a container's two readings
// are not compared: a few millicores differ by more than 5 % from noise.
const compareMinMillicores = 20

// readPair is one node's reads by both readers at one instant.
type readPair struct{ node, agent kubelet.Snapshot }

// comparing returns fetch reading each node through primary (the node
// reads of NodeExec, which stay the run's figures) and, at the same time,
// through the node agent; from the second read of a node on, it logs
// each busy container's CPU over the span between the last two reads by
// both, for checking the agent against the node reads in one run.
func (t *Target) comparing(primary func(context.Context, string) (kubelet.Snapshot, error)) func(context.Context, string) (kubelet.Snapshot, error) {
	var mu sync.Mutex
	last := map[string]readPair{}
	return func(ctx context.Context, node string) (kubelet.Snapshot, error) {
		var shadow kubelet.Snapshot
		var serr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			shadow, serr = t.agent.fetch(ctx, node)
		}()
		s, err := primary(ctx, node)
		<-done
		if err != nil {
			return s, err
		}
		if serr != nil {
			t.o.Logf("node CPU agent vs node read: node %s: the agent's read failed: %v", node, serr)
			return s, nil
		}
		mu.Lock()
		prev, ok := last[node]
		last[node] = readPair{node: s, agent: shadow}
		mu.Unlock()
		if ok {
			for _, line := range compareReads(prev, readPair{node: s, agent: shadow}) {
				t.o.Logf("node CPU agent vs node read: %s", line)
			}
		}
		return s, nil
	}
}

// compareReads compares the CPU of every busy container between two
// pairs of reads: the node read's figure, the agent's, and how far apart.
func compareReads(before, after readPair) []string {
	nu, nerr := kubelet.Delta(before.node, after.node)
	au, aerr := kubelet.Delta(before.agent, after.agent)
	var out []string
	for _, e := range append(kubelet.Flatten(nerr), kubelet.Flatten(aerr)...) {
		out = append(out, fmt.Sprintf("node %s: %v", after.node.Node, e))
	}
	worst := 0.0
	for _, c := range nu.Containers {
		if c.Millicores < compareMinMillicores {
			continue
		}
		a, ok := au.Container(c.Container)
		if !ok {
			out = append(out, fmt.Sprintf("node %s: %v: %.1f millicores by the node read, not read by the agent", nu.Node, c.Container, c.Millicores))
			continue
		}
		diff := (a.Millicores - c.Millicores) / c.Millicores * 100
		worst = math.Max(worst, math.Abs(diff))
		out = append(out, fmt.Sprintf("node %s: %v: %.1f millicores over %v by the node read, %.1f over %v by the agent (%+.1f%%)",
			nu.Node, c.Container, c.Millicores, c.Window, a.Millicores, a.Window, diff))
	}
	out = append(out, fmt.Sprintf("node %s: node %.3f cores by the node read, %.3f by the agent; containers at most %.1f%% apart",
		nu.Node, nu.NodeCores, au.NodeCores, worst))
	return out
}
