package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/testbed"
)

// angled says a setting as <Name:Value>, so that a test sees which
// setting a message advises and that it went through Options.Words.
func angled(s testbed.Setting) string { return "<" + s.Name + ":" + s.Value + ">" }

// TestAdviceInTheirWords: the settings kube's messages advise are said in
// Options.Words, and in Go without them.
func TestAdviceInTheirWords(t *testing.T) {
	tg := supportsTarget(t, "none")
	tg.o.Workloads = manifests.Params{ResponseSize: 128}
	assert.EqualError(t, tg.Supports(testbed.Workload{ResponseSize: 256}, nil),
		"payload 256 B: the backends were deployed with ResponseSize=128")
	tg.o.Words = angled
	assert.EqualError(t, tg.Supports(testbed.Workload{ResponseSize: 256}, nil),
		"payload 256 B: the backends were deployed with <ResponseSize:128>")

	const fallback = "without the agent, CPU can be read from the kubelets' cached counters (refreshed every 10-15 s; each run then waits for their refreshes under load: " +
		"about 27 s longer a run on kind, at most a minute): ask for it with "
	assert.Equal(t, fallback+"NodeCPU=kubelet", agentFallback(nil))
	assert.Equal(t, fallback+"<NodeCPU:kubelet>", agentFallback(angled))
}
