package kind

import (
	"fmt"
	"os"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// containerdOOMPatch lets containerd run pods on hosts where it may not lower
// a process's oom_score_adj (no CAP_SYS_RESOURCE).
const containerdOOMPatch = `[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
`

// statsPeriodPatch makes containerd 2.x sample every container's CPU
// (for the CRI's UsageNanoCores) every 10 s instead of every second: on a
// 2-core host its per-second burst on every node set the meshed arm's p99
// (kind-config.yaml says the figures). Cumulative counters, which
// meshbench reads, are read afresh either way.
const statsPeriodPatch = `[plugins."io.containerd.cri.v1.runtime"]
    stats_collect_period = "10s"`

// kubeletCgroupV1Patch lets the kubelet (v1.35+) start on a cgroup v1 host.
const kubeletCgroupV1Patch = `kind: KubeletConfiguration
failCgroupV1: false
`

// defaultConfig is used when no config file is given: 1 control plane and 2
// workers, with the package's CNI instead of kind's, and containerd's
// per-second CPU sampling slowed to every 10 s (statsPeriodPatch).
const defaultConfig = `kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  disableDefaultCNI: true
containerdConfigPatches:
- |-
  ` + statsPeriodPatch + `
nodes:
- role: control-plane
- role: worker
- role: worker
`

// loadConfig reads a kind v1alpha4 cluster config strictly (an unknown key is
// an error); path "" means defaultConfig.
func loadConfig(path string) (*v1alpha4.Cluster, error) {
	raw := []byte(defaultConfig)
	if path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read kind config: %w", err)
		}
	}
	var cfg v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return nil, fmt.Errorf("decode kind config %s: %w", path, err)
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" {
		return nil, fmt.Errorf("kind config %s: want kind Cluster, apiVersion kind.x-k8s.io/v1alpha4; got %q, %q",
			path, cfg.Kind, cfg.APIVersion)
	}
	v1alpha4.SetDefaultsCluster(&cfg)
	return &cfg, nil
}

// applyQuirks adds to cfg the patches the host needs, and only those.
func applyQuirks(cfg *v1alpha4.Cluster, q Quirks) {
	if q.NoSysResource {
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches, containerdOOMPatch)
	}
	if q.CgroupV1 {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, kubeletCgroupV1Patch)
	}
}
