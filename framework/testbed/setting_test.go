package testbed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/testbed"
)

// TestWordsSay: without Words a setting is said in Go, with them in
// theirs.
func TestWordsSay(t *testing.T) {
	var none testbed.Words
	assert.Equal(t, "NodeCPU=agent", none.Say(testbed.SettingNodeCPU, "agent"))
	assert.Equal(t, "MeshInstall", none.Say(testbed.SettingMeshInstall, ""))
	flag := testbed.Words(func(s testbed.Setting) string { return "-" + s.Name + "/" + s.Value })
	assert.Equal(t, "-NodeCPU/agent", flag.Say(testbed.SettingNodeCPU, "agent"))
	assert.Equal(t, "-MeshInstall/", flag.Say(testbed.SettingMeshInstall, ""))
}
