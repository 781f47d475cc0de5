package kube

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestParseXFRM(t *testing.T) {
	b, err := os.ReadFile("testdata/xfrm-state.txt")
	require.NoError(t, err)
	x, err := ParseXFRM(b)
	require.NoError(t, err)
	assert.Equal(t, XFRM{States: 2, Bytes: 5312, Packets: 50}, x)

	x, err = ParseXFRM(nil)
	require.NoError(t, err)
	assert.Equal(t, XFRM{}, x, "a node without IPsec has no state")

	_, err = ParseXFRM([]byte("src 1.1.1.1 dst 2.2.2.2\n\tproto esp\n"))
	assert.EqualError(t, err, "xfrm: 1 states but 0 with counters (was ip run with -s?)")
	_, err = ParseXFRM([]byte("src 1.1.1.1 dst 2.2.2.2\n\tlifetime current:\n\t  lots\n"))
	assert.EqualError(t, err, `xfrm state 1: lifetime current: want "N(bytes), M(packets)", got "lots"`)
}

func TestEncryptionOver(t *testing.T) {
	assert.Nil(t, encryptionOver(nil, nil), "nodes not read")
	e := encryptionOver(
		map[string]XFRM{"w1": {States: 2, Bytes: 100, Packets: 10}, "w2": {States: 2, Bytes: 900, Packets: 90}},
		map[string]XFRM{"w1": {States: 2, Bytes: 1100, Packets: 30}, "w2": {States: 2, Bytes: 50, Packets: 5}})
	// w2's state was replaced during the window: its counters restarted.
	assert.Equal(t, &testbed.Encryption{Mechanism: "IPsec", Source: "ip -s xfrm state on every node",
		Nodes: 2, States: 4, Packets: 25, Bytes: 1050}, e)
}

func TestJudgeEncryption(t *testing.T) {
	edges := func() []testbed.Edge {
		return []testbed.Edge{{Src: "loadgen", Dst: "backend", Secured: true, Evidence: "cilium-config enable-ipsec=true", Mechanism: "IPsec"}}
	}
	moved := &testbed.Encryption{Mechanism: "IPsec", Nodes: 4, States: 6, Packets: 900, Bytes: 90000}
	still := &testbed.Encryption{Mechanism: "IPsec", Nodes: 4, States: 6}

	run := &testbed.Run{Arm: testbed.Meshed, Edges: edges(), Encryption: moved}
	judgeEncryption(run, "IPsec")
	assert.Empty(t, run.Invalid)
	assert.Equal(t, "cilium-config enable-ipsec=true; XFRM +900 packets, +90000 bytes in 6 states on 4 nodes", run.Edges[0].Evidence)

	run = &testbed.Run{Arm: testbed.Meshed, Edges: edges(), Encryption: still}
	judgeEncryption(run, "IPsec")
	assert.Equal(t, validity.Reasons{{Kind: validity.MeshNotOn, Detail: "IPsec not proven: the nodes' 6 XFRM states carried no packets over the window"}}, run.Invalid)
	assert.False(t, run.Edges[0].Secured)

	run = &testbed.Run{Arm: testbed.Baseline, Encryption: moved}
	judgeEncryption(run, "")
	assert.Equal(t, validity.Reasons{{Kind: validity.BaselineMeshed, Detail: "baseline encrypted: the nodes' XFRM states carried 900 packets over the window " +
		"(a cluster-wide mesh needs its baseline on another cluster)"}}, run.Invalid)

	run = &testbed.Run{Arm: testbed.Baseline, Encryption: &testbed.Encryption{Mechanism: "IPsec", Nodes: 4}}
	judgeEncryption(run, "")
	assert.Empty(t, run.Invalid, "no IPsec state on the baseline's cluster")
}
