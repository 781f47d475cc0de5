package suite

import "github.com/meshbench/meshbench/framework/testbed"

// settingFlags are the flags that set the settings the targets' and the
// meshes' messages advise (testbed.Settings), by the settings' Go names:
// the suite, whose flags they are, says them to its users.
var settingFlags = map[string]string{
	testbed.SettingTarget:           "target",
	testbed.SettingNodeCPU:          "node-cpu",
	testbed.SettingCandidate:        "candidate",
	testbed.SettingMeshInstall:      "mesh-install",
	testbed.SettingMeshRevision:     "mesh-revision",
	testbed.SettingMeshVersion:      "mesh-version",
	testbed.SettingMeshCharts:       "mesh-charts",
	testbed.SettingMeshRegistry:     "mesh-registry",
	testbed.SettingResponseSize:     "payload",
	testbed.SettingProtocol:         "protocol",
	testbed.SettingDuration:         "duration",
	testbed.SettingCiliumEncryption: "cilium-encryption",
}

// flagWords say a setting as its flag: "-node-cpu=agent", or
// "-mesh-install" for the setting alone. A setting without a flag is said
// in Go (TestFlagWords keeps the table whole).
func flagWords(s testbed.Setting) string {
	name, ok := settingFlags[s.Name]
	if !ok {
		return testbed.Words(nil).Say(s.Name, s.Value)
	}
	if s.Value == "" {
		return "-" + name
	}
	return "-" + name + "=" + s.Value
}
