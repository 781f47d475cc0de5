package kind

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/cluster/nodes"
)

func TestLoadConfigRepoFile(t *testing.T) {
	cfg, err := loadConfig("../../../kind-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != 3 {
		t.Errorf("nodes: got %d, want 3", len(cfg.Nodes))
	}
	if !cfg.Networking.DisableDefaultCNI {
		t.Error("disableDefaultCNI: got false, want true")
	}
	if len(cfg.ContainerdConfigPatches) != 1 || !strings.Contains(cfg.ContainerdConfigPatches[0], `stats_collect_period = "10s"`) {
		t.Errorf("containerd patches: got %q, want the 10 s stats period", cfg.ContainerdConfigPatches)
	}
	if cfg.Networking.PodSubnet != "10.244.0.0/16" {
		t.Errorf("podSubnet: got %q, want the kind default 10.244.0.0/16", cfg.Networking.PodSubnet)
	}
}

func TestLoadConfigDefault(t *testing.T) {
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, n := range cfg.Nodes {
		roles = append(roles, string(n.Role))
	}
	if want := []string{"control-plane", "worker", "worker"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("roles: got %v, want %v", roles, want)
	}
	if want := []string{"[plugins.\"io.containerd.cri.v1.runtime\"]\n  stats_collect_period = \"10s\""}; !reflect.DeepEqual(cfg.ContainerdConfigPatches, want) {
		t.Errorf("containerd patches: got %q, want %q", cfg.ContainerdConfigPatches, want)
	}
}

func TestLoadConfigRejectsUnknownKey(t *testing.T) {
	_, err := loadConfig("testdata/unknown-key.yaml")
	if err == nil || !strings.Contains(err.Error(), "disableDefaultCNl") {
		t.Fatalf("got %v, want an error naming the misspelled key", err)
	}
}

func TestApplyQuirks(t *testing.T) {
	for _, tc := range []struct {
		q                   Quirks
		containerd, kubeadm int
	}{
		// the default config's own containerd patch, plus the host's
		{Quirks{}, 1, 0},
		{Quirks{CgroupV1: true}, 1, 1},
		{Quirks{NoSysResource: true}, 2, 0},
		{Quirks{CgroupV1: true, NoSysResource: true}, 2, 1},
	} {
		cfg, err := loadConfig("")
		if err != nil {
			t.Fatal(err)
		}
		applyQuirks(cfg, tc.q)
		if got := len(cfg.ContainerdConfigPatches); got != tc.containerd {
			t.Errorf("%v: containerd patches: got %d, want %d", tc.q, got, tc.containerd)
		}
		if got := len(cfg.KubeadmConfigPatches); got != tc.kubeadm {
			t.Errorf("%v: kubeadm patches: got %d, want %d", tc.q, got, tc.kubeadm)
		}
		if last := cfg.ContainerdConfigPatches[len(cfg.ContainerdConfigPatches)-1]; tc.q.NoSysResource && !strings.Contains(last, "restrict_oom_score_adj = true") {
			t.Errorf("containerd patch: %q", last)
		}
		if tc.kubeadm > 0 && !strings.Contains(cfg.KubeadmConfigPatches[0], "failCgroupV1: false") {
			t.Errorf("kubeadm patch: %q", cfg.KubeadmConfigPatches[0])
		}
	}
}

func TestCapBnd(t *testing.T) {
	f, err := os.Open("testdata/status-no-sys-resource")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bnd, err := capBnd(f)
	if err != nil {
		t.Fatal(err)
	}
	if bnd&(1<<capSysResource) != 0 {
		t.Errorf("CapBnd %x: CAP_SYS_RESOURCE reported present", bnd)
	}
	if bnd&(1<<21) == 0 {
		t.Errorf("CapBnd %x: CAP_SYS_ADMIN reported missing", bnd)
	}
}

func TestConflist(t *testing.T) {
	raw, err := conflist(PluginBridge, "10.244.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type   string `json:"type"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) != 2 || c.Plugins[0].Type != "bridge" || c.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins: %s", raw)
	}
	if c.Plugins[0].IPMasq {
		t.Error("bridge masquerades pod traffic; peers would see node IPs")
	}
	if got := c.Plugins[0].IPAM.Ranges[0][0]["subnet"]; got != "10.244.2.0/24" {
		t.Errorf("subnet: got %q", got)
	}
	if _, err := conflist(PluginBridge, "not-a-cidr"); err == nil {
		t.Error("conflist accepted a bad CIDR")
	}
	if _, err := conflist("flannel", "10.244.2.0/24"); err == nil {
		t.Error("conflist accepted an unknown plugin")
	}
	raw, err = conflist(PluginPTP, "10.244.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"type": "ptp"`) || strings.Contains(string(raw), "cni0") {
		t.Errorf("ptp conflist: %s", raw)
	}
}

type fakeNode struct {
	nodes.Node
	name string
}

func (f fakeNode) String() string { return f.name }

func TestRouteCmds(t *testing.T) {
	all := []nodeNet{
		{node: fakeNode{name: "cp"}, ip: "172.18.0.2", podCIDR: "10.244.0.0/24"},
		{node: fakeNode{name: "w1"}, ip: "172.18.0.3", podCIDR: "10.244.1.0/24"},
		{node: fakeNode{name: "w2"}, ip: "172.18.0.4", podCIDR: "10.244.2.0/24"},
	}
	got := routeCmds(all[1], all)
	want := [][]string{
		{"ip", "route", "replace", "10.244.0.0/24", "via", "172.18.0.2"},
		{"ip", "route", "replace", "10.244.2.0/24", "via", "172.18.0.4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestQuirksString(t *testing.T) {
	if got := (Quirks{}).String(); got != "none" {
		t.Errorf("got %q", got)
	}
	if got := (Quirks{CgroupV1: true, NoSysResource: true}).String(); !strings.Contains(got, "cgroup v1") || !strings.Contains(got, "CAP_SYS_RESOURCE") {
		t.Errorf("got %q", got)
	}
}

func TestGuardScript(t *testing.T) {
	got := guardScript("10.244.0.0/16", "10.96.0.0/16")
	for _, want := range []string{
		"ip route replace unreachable 10.244.0.0/16\n",
		`iptables -C FORWARD -d 10.96.0.0/16 -m comment --comment "meshbench: cluster ranges stay in the cluster" -j REJECT 2>/dev/null || iptables -I FORWARD`,
		"iptables -C OUTPUT -d 10.96.0.0/16",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
}
