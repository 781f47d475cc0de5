package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
)

// cniConfPath is where the package's CNI config goes on every node.
const cniConfPath = "/etc/cni/net.d/10-meshbench.conflist"

// CNI plugins the package can configure.
const (
	// PluginBridge puts the pods of a node on a Linux bridge (cni0). The
	// offline node image ships it; kind's public images do not.
	PluginBridge = "bridge"
	// PluginPTP gives every pod a veth pair routed by the node, as kindnet
	// does; every kind node image ships it.
	PluginPTP = "ptp"
)

// conflist renders the CNI config for a node whose pods get IPs from
// podCIDR: the main plugin (PluginBridge or PluginPTP) with host-local IPAM,
// then portmap for hostPort. Pod traffic is not masqueraded, so a pod sees
// its peers' pod IPs.
func conflist(plugin, podCIDR string) ([]byte, error) {
	if _, _, err := net.ParseCIDR(podCIDR); err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	type obj = map[string]any
	ipam := obj{
		"type":   "host-local",
		"ranges": [][]obj{{{"subnet": podCIDR}}},
		"routes": []obj{{"dst": "0.0.0.0/0"}},
	}
	var main obj
	switch plugin {
	case PluginBridge:
		main = obj{"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true, "ipam": ipam}
	case PluginPTP:
		main = obj{"type": "ptp", "ipMasq": false, "ipam": ipam}
	default:
		return nil, fmt.Errorf("CNI plugin %q: want %q or %q", plugin, PluginBridge, PluginPTP)
	}
	c := obj{
		"cniVersion": "1.0.0",
		"name":       "meshbench",
		"plugins":    []obj{main, {"type": "portmap", "capabilities": obj{"portMappings": true}}},
	}
	return json.MarshalIndent(c, "", "  ")
}

// pickPlugin returns plugin if set, else PluginBridge when the node has it,
// else PluginPTP.
func pickPlugin(n nodes.Node, plugin string) string {
	if plugin != "" {
		return plugin
	}
	if n.Command("test", "-x", "/opt/cni/bin/bridge").Run() == nil {
		return PluginBridge
	}
	return PluginPTP
}

// nodeNet is what the CNI step needs to know about one node.
type nodeNet struct {
	node    nodes.Node
	ip      string // IPv4 address on the kind network
	podCIDR string
	plugin  string // PluginBridge or PluginPTP
}

// routeCmds returns, for node self, the commands that route every other
// node's pod CIDR through that node's IP.
func routeCmds(self nodeNet, all []nodeNet) [][]string {
	var cmds [][]string
	for _, o := range all {
		if o.node.String() == self.node.String() {
			continue
		}
		cmds = append(cmds, []string{"ip", "route", "replace", o.podCIDR, "via", o.ip})
	}
	return cmds
}

// guardScript keeps cluster-internal traffic on the nodes: a pod IP of no
// node is unreachable (instead of following the default route off the
// node), and service-IP traffic that kube-proxy has not (yet) translated is
// rejected. Both fail fast, so clients retry at once rather than after a
// lost SYN, and nothing addressed to a cluster range leaves the cluster.
// The filter chains see packets after kube-proxy's DNAT, so translated
// traffic passes. Idempotent.
func guardScript(podSubnet, serviceSubnet string) string {
	const comment = "meshbench: cluster ranges stay in the cluster"
	var b strings.Builder
	b.WriteString("set -e\n")
	fmt.Fprintf(&b, "ip route replace unreachable %s\n", podSubnet)
	for _, chain := range []string{"FORWARD", "OUTPUT"} {
		rule := fmt.Sprintf("%s -d %s -m comment --comment %q -j REJECT", chain, serviceSubnet, comment)
		fmt.Fprintf(&b, "iptables -C %s 2>/dev/null || iptables -I %s\n", rule, rule)
	}
	return b.String()
}

// installCNI waits for every node's spec.podCIDR, then writes the conflist
// on each node, adds the routes to the other nodes' pod CIDRs, and the
// guards of guardScript.
// plugin "" picks one per node (see pickPlugin).
func installCNI(ctx context.Context, cs kubernetes.Interface, kindNodes []nodes.Node, plugin, podSubnet, serviceSubnet string, timeout time.Duration) ([]nodeNet, error) {
	for _, cidr := range []string{podSubnet, serviceSubnet} {
		if ip, _, err := net.ParseCIDR(cidr); err != nil || ip.To4() == nil {
			return nil, fmt.Errorf("subnet %q: only single IPv4 subnets are supported", cidr)
		}
	}
	cidrs, err := waitPodCIDRs(ctx, cs, kindNodes, timeout)
	if err != nil {
		return nil, err
	}
	nets, err := nodeNets(kindNodes, cidrs, plugin)
	if err != nil {
		return nil, err
	}
	for _, n := range nets {
		if err := configureNode(n, nets, podSubnet, serviceSubnet); err != nil {
			return nil, err
		}
	}
	return nets, nil
}

// waitPodCIDRs polls until every one of kindNodes has a spec.podCIDR, and
// returns them by node name.
func waitPodCIDRs(ctx context.Context, cs kubernetes.Interface, kindNodes []nodes.Node, timeout time.Duration) (map[string]string, error) {
	cidrs := map[string]string{}
	err := wait.For(func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the API server may still be settling
		}
		for _, n := range list.Items {
			if n.Spec.PodCIDR != "" {
				cidrs[n.Name] = n.Spec.PodCIDR
			}
		}
		for _, kn := range kindNodes {
			if cidrs[kn.String()] == "" {
				return false, nil
			}
		}
		return true, nil
	}, wait.WithContext(ctx), wait.WithInterval(time.Second), wait.WithTimeout(timeout), wait.WithImmediate())
	if err != nil {
		return nil, fmt.Errorf("wait for pod CIDRs (have %v): %w", cidrs, err)
	}
	return cidrs, nil
}

// nodeNets returns each node's IPv4 address, pod CIDR (from cidrs, by node
// name) and CNI plugin (see pickPlugin).
func nodeNets(kindNodes []nodes.Node, cidrs map[string]string, plugin string) ([]nodeNet, error) {
	nets := make([]nodeNet, 0, len(kindNodes))
	for _, kn := range kindNodes {
		ip, _, err := kn.IP()
		if err != nil {
			return nil, fmt.Errorf("node %s IP: %w", kn, err)
		}
		if ip == "" {
			return nil, fmt.Errorf("node %s has no IPv4 address (only IPv4 is supported)", kn)
		}
		nets = append(nets, nodeNet{node: kn, ip: ip, podCIDR: cidrs[kn.String()], plugin: pickPlugin(kn, plugin)})
	}
	return nets, nil
}

// configureNode writes n's conflist, runs guardScript on it, and routes the
// pod CIDRs of the other nodes of all through their IPs.
func configureNode(n nodeNet, all []nodeNet, podSubnet, serviceSubnet string) error {
	conf, err := conflist(n.plugin, n.podCIDR)
	if err != nil {
		return err
	}
	var out strings.Builder
	cmd := n.node.Command("sh", "-c", "mkdir -p /etc/cni/net.d && cat > "+cniConfPath+".tmp && mv "+cniConfPath+".tmp "+cniConfPath)
	if err := cmd.SetStdin(strings.NewReader(string(conf))).SetStderr(&out).Run(); err != nil {
		return fmt.Errorf("write CNI config on %s: %w: %s", n.node, err, out.String())
	}
	out.Reset()
	if err := n.node.Command("sh", "-c", guardScript(podSubnet, serviceSubnet)).SetStderr(&out).Run(); err != nil {
		return fmt.Errorf("guard cluster ranges on %s: %w: %s", n.node, err, out.String())
	}
	for _, args := range routeCmds(n, all) {
		out.Reset()
		if err := n.node.Command(args[0], args[1:]...).SetStderr(&out).Run(); err != nil {
			return fmt.Errorf("on %s: %s: %w: %s", n.node, strings.Join(args, " "), err, out.String())
		}
	}
	return nil
}

// waitNodesReady polls until want nodes exist and all are Ready.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, want int, timeout time.Duration) error {
	var notReady []string
	err := wait.For(func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		notReady = notReady[:0]
		for _, n := range list.Items {
			if !nodeReady(&n) {
				notReady = append(notReady, n.Name)
			}
		}
		return len(list.Items) == want && len(notReady) == 0, nil
	}, wait.WithContext(ctx), wait.WithInterval(time.Second), wait.WithTimeout(timeout), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("wait for %d nodes Ready (not Ready: %v): %w", want, notReady, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitSystemPods polls until every pod in kube-system is Running and Ready.
func waitSystemPods(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	var pending []string
	err := wait.For(func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pending = pending[:0]
		for _, p := range list.Items {
			if !podReady(&p) {
				pending = append(pending, p.Name+"("+string(p.Status.Phase)+")")
			}
		}
		return len(list.Items) > 0 && len(pending) == 0, nil
	}, wait.WithContext(ctx), wait.WithInterval(time.Second), wait.WithTimeout(timeout), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("wait for kube-system pods Ready (pending: %v): %w", pending, err)
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
