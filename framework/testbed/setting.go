package testbed

// A message of a target (an error, a reason a run is invalid or a
// workload unsupported, a log line) may advise the user to change a
// setting of the run. The target does not know how the user wrote the
// setting: the package that built its options from a command line, a
// file or Go code does. So the target names the setting by its Go name
// and says it in the Words that package passes in its options.

// The settings targets advise, by their names in Go (the fields of the
// run's plan, suite.Config).
const (
	// SettingTarget is where the benchmark runs: local, kind or remote.
	SettingTarget = "Target"
	// SettingNodeCPU is where a cluster's CPU is read: kubelet or agent
	// (kube.Options.NodeCPU).
	SettingNodeCPU = "NodeCPU"
	// SettingCandidate is an upgrade gate's candidate
	// (kube.Options.Candidate, local.Options.Candidate).
	SettingCandidate = "Candidate"
	// SettingMeshInstall installs a missing mesh from its charts
	// (kube.Options.InstallMesh).
	SettingMeshInstall = "MeshInstall"
	// SettingMeshRevision is the Istio revision that injects the meshed
	// arm (mesh.WithRevision).
	SettingMeshRevision = "MeshRevision"
	// SettingMeshVersion is the mesh release a run installs
	// (mesh.InstallOptions.Version).
	SettingMeshVersion = "MeshVersion"
	// SettingMeshCharts is a directory of the mesh's charts
	// (kube.Options.ChartDir).
	SettingMeshCharts = "MeshCharts"
	// SettingMeshRegistry is the registry the installed mesh's images
	// come from (mesh.InstallOptions.Registry).
	SettingMeshRegistry = "MeshRegistry"
	// SettingResponseSize is the backends' response body, in bytes
	// (manifests.Params.ResponseSize).
	SettingResponseSize = "ResponseSize"
	// SettingProtocol is what the client speaks, and on a cluster what
	// the backends are deployed to serve: http1, h2 or grpc
	// (manifests.Params.Protocol).
	SettingProtocol = "Protocol"
	// SettingDuration is the measured window of each run.
	SettingDuration = "Duration"
	// SettingCiliumEncryption is Cilium's transparent encryption: ipsec,
	// wireguard or none (mesh.WithEncryption).
	SettingCiliumEncryption = "CiliumEncryption"
)

// Settings lists the settings targets advise, so that the plan can check
// that it has words for each.
func Settings() []string {
	return []string{SettingTarget, SettingNodeCPU, SettingCandidate, SettingMeshInstall, SettingMeshRevision,
		SettingMeshVersion, SettingMeshCharts, SettingMeshRegistry, SettingResponseSize, SettingProtocol, SettingDuration, SettingCiliumEncryption}
}

// Setting is a setting of the run a message names: one of Settings, and
// the value it advises ("" for the setting alone).
type Setting struct {
	// Name is the setting's name in Go, e.g. SettingNodeCPU.
	Name string
	// Value is the value advised, e.g. "agent"; "" names the setting.
	Value string
}

// Words say a setting as the user wrote it: for a command line, as the
// flag that sets it. The nil Words say it in Go: "NodeCPU=agent".
type Words func(Setting) string

// Say is setting name, set to value unless value is "", in w.
func (w Words) Say(name, value string) string {
	s := Setting{Name: name, Value: value}
	if w != nil {
		return w(s)
	}
	if value == "" {
		return name
	}
	return name + "=" + value
}
