package suite

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kube"
)

// TestFlagWords: every setting the targets' and meshes' messages advise
// (testbed.Settings) is said as a flag RegisterFlags registers, and the
// suite passes those words to the kube target, its installs and the mesh
// adapters.
func TestFlagWords(t *testing.T) {
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	RegisterFlags(fs)
	for _, s := range testbed.Settings() {
		name, ok := settingFlags[s]
		if assert.True(t, ok, "setting %s has no flag", s) {
			assert.NotNil(t, fs.Lookup(name), "setting %s: no flag -%s", s, name)
		}
	}
	var words testbed.Words = flagWords
	assert.Equal(t, "-node-cpu=agent", words.Say(testbed.SettingNodeCPU, "agent"))
	assert.Equal(t, "-mesh-install", words.Say(testbed.SettingMeshInstall, ""))
	assert.Equal(t, "-payload=128", words.Say(testbed.SettingResponseSize, "128"))

	s := &Suite{}
	o, err := s.kubeOptions(&Config{Target: "remote", Mesh: "none"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "-node-cpu=kubelet", o.Words.Say(testbed.SettingNodeCPU, kube.NodeCPUKubelet))
	assert.Equal(t, "http", o.Workloads.Protocol)
	assert.Equal(t, "-protocol=grpc", o.Words.Say(testbed.SettingProtocol, "grpc"))
	o, err = s.kubeOptions(&Config{Target: "remote", Mesh: "none", Protocol: load.GRPC}, nil)
	require.NoError(t, err)
	assert.Equal(t, "grpc", o.Workloads.Protocol, "-protocol=grpc deploys the gRPC backends")

	c := &Config{Mesh: "cilium", CiliumEncryption: "none"}
	m, err := c.NewMesh()
	require.NoError(t, err)
	assert.Equal(t, "cilium: encryption off (-cilium-encryption=none): the meshed arm is Cilium's eBPF datapath as the CNI, every hop plain text by design",
		mesh.PlainByDesign(m, mesh.Info{}))
}
