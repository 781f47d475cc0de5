package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Placement is where the loadgen runs.
type Placement string

// Placements.
const (
	// InMesh puts a loadgen in each arm's namespace: in the meshed arm it
	// gets the mesh's outbound proxy, so "one hop" crosses two proxies, as a
	// meshed client's request does.
	InMesh Placement = "in-mesh"
	// OutOfMesh puts one loadgen in a separate, unmeshed namespace that
	// calls both arms' Services: only the server side is meshed, and the
	// first hop is plain text by design.
	OutOfMesh Placement = "out-of-mesh"
)

// ParsePlacement turns a flag value into a Placement.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case InMesh, OutOfMesh:
		return p, nil
	case "":
		return InMesh, nil
	}
	return "", fmt.Errorf("unknown loadgen placement %q: want %s or %s", s, InMesh, OutOfMesh)
}

// Options configure the target. The zero value of every field means its
// documented default, filled in by New.
type Options struct {
	// Name is what Target.Name returns: "kind" or "remote". Default "remote".
	Name string
	// Mesh is the meshed arm's mesh adapter. Default mesh "none" (an A/A run).
	Mesh mesh.Mesh
	// InstallMesh installs the mesh from its Helm charts when Detect does
	// not find it, if the adapter can (mesh.Installer), and uninstalls it
	// when the target closes. Default false: a missing mesh is an error.
	InstallMesh bool
	// Candidate, when set, is an upgrade gate's candidate sidecar or Istio
	// revision (arms.ParseCluster's spec; candidate.go): the arms are then
	// baseline, reference (Mesh's sidecar, or Mesh's revision) and
	// candidate, in namespaces of their own. Only the
	// bring-your-own sidecar mesh runs a candidate sidecar, and only Istio
	// (mesh.Revisioned) a candidate revision; New refuses any other before
	// touching the cluster. Default nil: the arms baseline and meshed.
	Candidate *arms.Spec
	// Install says which release to install and with which registry.
	Install mesh.InstallOptions
	// CandidateInstall, when set, is the release the candidate revision
	// is installed at, in a revision gate that installs the mesh: an
	// Istio canary of another version (1.30 to 1.31). Default nil: the
	// reference's (Install).
	CandidateInstall *mesh.InstallOptions
	// CandidateChartDir, when set, is where the candidate revision's
	// charts are looked for, as ChartDir is for the reference's. Default:
	// ChartDir.
	CandidateChartDir string
	// ChartDir, when set, is where the charts are looked for (by their
	// Chart.yaml name, or <name>-<version>.tgz) instead of downloading them
	// from their Helm repositories: for air-gapped clusters.
	ChartDir string
	// InstallTimeout bounds each release's install and rollout, and its
	// uninstall. Default 5m.
	InstallTimeout time.Duration
	// Placement of the loadgen deployed at set-up, and of every scenario
	// that does not say. A scenario's other placement is deployed when it
	// first runs. Default InMesh.
	Placement Placement
	// Loadgens is the number of loadgen replicas a run's connections and
	// rate are split over, unless a scenario asks for more, which scales
	// the loadgens up when it first runs. Default 1.
	Loadgens int
	// NodeExec runs a command on a node of the cluster, as root in the
	// node's own namespaces (kind: docker exec into the node container).
	// A fault then kills its container's main process with SIGKILL, as a
	// crash does. Without it, the fault execs a kill inside the container
	// (pods/exec), where a process can only ask the container's PID 1 to
	// stop (SIGTERM). With it, CPU, memory and CFS counters are read on
	// the nodes at the moment of the read (crictl stats and the cgroup
	// files: framework/measure/nodestats) instead of from the kubelets'
	// cached /metrics/resource and /metrics/cadvisor. Default nil.
	NodeExec NodeExec
	// NodeCPU is where CPU, memory and CFS counters are read without
	// NodeExec: NodeCPUKubelet, the kubelets' cached counters, or
	// NodeCPUAgent, the mbnodecpu DaemonSet (fixtures/manifests.NodeCPUAgent)
	// the target deploys in a namespace of its own and reads at the
	// instant through the API server's pod proxy. With NodeExec the node
	// reads stay the figures, and NodeCPUAgent also deploys the agent and
	// logs, read by read, how far its figures are from them (to check it
	// on kind). Default NodeCPUKubelet.
	NodeCPU string
	// NodeCPUImage is the agent's image. Default
	// manifests.DefaultNodeCPUImage.
	NodeCPUImage string
	// CheckExec checks the kubelets' counters in the same run: with them
	// as the figures (no NodeExec, NodeCPU NodeCPUKubelet), every node is
	// also read at the instant with CheckExec, as NodeExec would, right
	// after each read of the kubelets that opens or closes a window
	// aligned to their refreshes, under the same load. The run's
	// measure.Window then carries those reads' window as Check. Two runs
	// compared instead, one after the other, differ by the machine's
	// speed, which wanders within minutes. Default nil.
	CheckExec NodeExec
	// RestartTimeout bounds the wait, after a fault's window, for the
	// kubelet to restart the killed container and for its pod to be ready
	// again. Default 2m.
	RestartTimeout time.Duration
	// Workloads sets images, response size, resources and the protocol the
	// backends serve (see manifests.Params; Namespace, Arm, Run, Components
	// and LoadgenReplicas are set by the target). With Protocol
	// manifests.GRPC the backend serves gRPC and runs are one-hop grpc
	// only (grpc.go).
	Workloads manifests.Params
	// SidecarWorkers is the nginx worker_processes of the sidecars this
	// repository deploys (the bring-your-own sidecar mesh); 0 is
	// Workloads' NginxWorkers (auto: one per node CPU).
	SidecarWorkers int
	// NamespacePrefix starts every namespace name. Default "meshbench".
	NamespacePrefix string
	// ReadyTimeout bounds the wait for the workloads. Default 5m.
	ReadyTimeout time.Duration
	// DeleteTimeout bounds the wait for the namespaces to go. Default 3m.
	DeleteTimeout time.Duration
	// CounterWait bounds how long Run waits after the window for every
	// kubelet to refresh its counters (not with NodeExec: those are read
	// at once), so that the counter window covers
	// the whole measured window. Default 30s; negative: do not wait.
	CounterWait time.Duration
	// ProbeFailures is the number of failed probes of one pod that fails
	// the start-up. Default 3.
	ProbeFailures int
	// UnschedulableGrace is how long a pod may stay unschedulable before
	// the start-up fails. Default 30s.
	UnschedulableGrace time.Duration
	// KernelProof reads, with NodeExec, the nodes' IPsec (XFRM) counters
	// around each window: the proof of a transparent encryption, and of
	// its absence from a baseline. Default false.
	KernelProof bool
	// LoadgenLog, when set, is where a run that failed requests writes
	// what its loadgen pods logged since it started (fortio logs a line
	// per failed request): each line by one Write, as the container
	// logged it, so that a load.LogTally counts it by its message. At
	// most 64 MiB a run; a log that cannot be read is a warning on the
	// run. Default nil: the logs stay in the pods.
	LoadgenLog io.Writer
	// ControlPlane asks every meshed run for its mesh's control plane,
	// measured after the window. Default: not measured.
	ControlPlane ControlPlaneOptions
	// Logf prints progress. Default: discard.
	Logf func(format string, args ...any)
	// Words say the settings the target's messages advise (e.g.
	// testbed.SettingNodeCPU) as the user wrote them. Default nil: their
	// names in Go ("NodeCPU=agent").
	Words testbed.Words
}

func (o *Options) normalize() error {
	var errs []error
	if o.Name == "" {
		o.Name = "remote"
	}
	if o.Mesh == nil {
		m, err := mesh.New("none")
		if err != nil {
			return err
		}
		o.Mesh = m
	}
	if o.Candidate != nil {
		if err := CheckCandidate(o.Mesh, *o.Candidate); err != nil {
			errs = append(errs, err)
		}
	}
	if (o.CandidateInstall != nil || o.CandidateChartDir != "") && (o.Candidate == nil || o.Candidate.Revision == "" || !o.InstallMesh) {
		errs = append(errs, errors.New("a candidate release (CandidateInstall, CandidateChartDir) is installed only in a revision gate that installs the mesh (Candidate with a Revision, InstallMesh)"))
	}
	if err := o.ControlPlane.check(o.Mesh); err != nil {
		errs = append(errs, err)
	}
	p, err := ParsePlacement(string(o.Placement))
	if err != nil {
		errs = append(errs, err)
	}
	o.Placement = p
	switch o.NodeCPU {
	case "":
		o.NodeCPU = NodeCPUKubelet
	case NodeCPUKubelet, NodeCPUAgent:
	default:
		errs = append(errs, fmt.Errorf("node CPU %q: want %s or %s", o.NodeCPU, NodeCPUKubelet, NodeCPUAgent))
	}
	if o.CheckExec != nil && (o.NodeExec != nil || o.NodeCPU != NodeCPUKubelet || o.CounterWait < 0) {
		errs = append(errs, errors.New("CheckExec checks the kubelets' counters, read aligned to their refreshes: not with NodeExec, NodeCPU agent or a negative CounterWait"))
	}
	if o.Loadgens == 0 {
		o.Loadgens = 1
	}
	if o.Loadgens < 0 {
		errs = append(errs, fmt.Errorf("loadgens %d: must be >= 1", o.Loadgens))
	}
	o.defaults()
	// Check the workload parameters the target does not set itself.
	w := o.Workloads
	w.Namespace, w.Arm, w.Run, w.LoadgenReplicas, w.Components = "check", "check", "check", o.Loadgens, nil
	if err := w.Normalize(); err != nil {
		errs = append(errs, fmt.Errorf("workloads: %w", err))
	}
	if sp, ok := o.Mesh.(mesh.SidecarProxy); ok && sp.Wired() && w.Protocol == manifests.GRPC {
		errs = append(errs, fmt.Errorf("workloads: protocol grpc: the %s mesh's proxy, as the harness wires it, proxies HTTP/1.1 and h2c to its app, not gRPC", o.Mesh.Name()))
	}
	return errors.Join(errs...)
}

// defaults fills in the names, time limits and logger left zero.
func (o *Options) defaults() {
	o.NamespacePrefix = cmp.Or(o.NamespacePrefix, "meshbench")
	o.ReadyTimeout = cmp.Or(o.ReadyTimeout, 5*time.Minute)
	o.InstallTimeout = cmp.Or(o.InstallTimeout, 5*time.Minute)
	o.DeleteTimeout = cmp.Or(o.DeleteTimeout, 3*time.Minute)
	o.CounterWait = cmp.Or(o.CounterWait, 30*time.Second)
	o.RestartTimeout = cmp.Or(o.RestartTimeout, 2*time.Minute)
	o.ControlPlane.ChangeTimeout = cmp.Or(o.ControlPlane.ChangeTimeout, 30*time.Second)
	o.ProbeFailures = cmp.Or(o.ProbeFailures, 3)
	o.UnschedulableGrace = cmp.Or(o.UnschedulableGrace, 30*time.Second)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// NodeExec runs cmd on node and returns its combined output.
type NodeExec func(ctx context.Context, node string, cmd ...string) ([]byte, error)

// supported reports what the kube target cannot do with a load's options.
func supported(o load.Options) error {
	var errs []error
	if o.Resolution.Offset != 0 {
		errs = append(errs, fmt.Errorf("resolution offset %gs: fortio's REST API has no offset parameter", o.Resolution.Offset))
	}
	return errors.Join(errs...)
}
