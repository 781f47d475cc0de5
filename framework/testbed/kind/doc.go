// Package kind runs meshbench's target clusters on kind, through the kind Go
// library (never a kind binary), on hosts with or without a registry.
//
// A cluster comes from the users' kind-config.yaml. On hosts that need them,
// and only there, the package adds two quirks to that config: containerd's
// restrict_oom_score_adj (when the host's capability bounding set lacks
// CAP_SYS_RESOURCE) and the kubelet's failCgroupV1: false (when the host has
// cgroup v1). When the config disables kind's default CNI, the package
// installs its own: a bridge (or, where a node lacks it, ptp) + host-local
// conflist on every node, from the node's spec.podCIDR, routes to the other
// nodes' pod CIDRs through their node IPs, and guards that keep traffic for
// the pod and service ranges inside the cluster. It then waits, by polling
// with a context, until every node is Ready and every kube-system pod runs.
//
// The node image is, in order: WithNodeImage; the MESHBENCH_KIND_NODE_IMAGE
// environment variable; the offline image built by hack/offline/node-image.sh
// (meshbench/kind-node:<version>) when Docker has it; and else kind's own
// default (public) image.
//
// NewProvider returns an e2e-framework cluster provider; Create and Destroy
// are the matching env funcs. Every step is logged as one line with its
// duration.
package kind
