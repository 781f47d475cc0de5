// Package kube is the target for any Kubernetes cluster reachable with a
// rest.Config: a kind cluster meshbench created, or a remote one it only
// borrows.
//
// New creates one namespace per arm (and, with the loadgen out of the mesh,
// a third one for the loadgen), with a random suffix so that two runs never
// collide; asks the mesh adapter to turn injection on in the meshed one;
// deploys the workloads of fixtures/manifests in all of them at the same
// time; and waits for them while watching their pods, failing within
// seconds — with the pod's events and last log lines — on CrashLoopBackOff,
// an image that cannot be pulled, a container that cannot be created, a
// probe that keeps failing or a pod the admission controller rejects. It
// then verifies both arms with the mesh adapter: proxies in every meshed
// pod, none in the baseline.
//
// With a candidate sidecar (Options.Candidate, candidate.go: the
// bring-your-own sidecar mesh only) the meshed arm is two: reference and
// candidate, each in its own namespace with its own workloads, whose
// sidecars differ in image and/or configuration (keep-alive between
// sidecars off). The target then reports the arms baseline, reference and
// candidate (testbed.Armed), which the suite interleaves and an upgrade
// gate judges; both meshed arms are verified and prove their path.
//
// Run drives the loadgen replicas through client-go port-forwards and
// fortio's REST API (cmd/mbloadgen): N replicas share the connections and
// the rate, run concurrently, and their histograms are merged bucket by
// bucket (never averaged). Around the measured window it reads every node's
// CPU, memory and CFS counters — on the node itself at the moment of the
// read when it can run commands there (Options.NodeExec, kind:
// framework/measure/nodestats), else from the kubelet through the API
// server's node proxy — and turns the counter deltas into CPU and memory
// per role: app, sidecar, node proxy, control plane, loadgen. The path is proved with the nginx request counters of the
// arm's frontend and backend and, in the meshed arm, the mesh's own mTLS
// telemetry.
//
// With gRPC backends (Options.Workloads.Protocol grpc, grpc.go) runs are
// one hop: the baseline's loadgen dials plain gRPC, a proxyless mesh's
// (mesh.InApp) meshed arm its xDS scheme; the hop counts the loadgen's
// calls answered OK, and its mTLS is the mesh's telemetry.
//
// A scenario's loadgen placement and shards are deployed when it first
// runs (loadgens.go): the out-of-mesh namespace on first use, the arms'
// loadgens scaled up alike. A fault (fault.go) kills a container of the
// measured arm mid-window, through its node (Options.NodeExec: SIGKILL,
// as a crash) or by exec into it (SIGTERM to its PID 1); the kubelet
// restarts it, the run waits for it to be ready, and the recovery is
// judged on the loadgens' timelines (testbed.JudgeFault).
//
// Close deletes every namespace New created and waits until they are gone;
// it is also called when New fails half-way.
//
// Target is a coordinator: installing the mesh (install.go), deploying
// the workloads (deploy.go), the upgrade gate's arms (candidate.go,
// revision.go), the counters and their alignment (align.go), the
// resources per role (resources.go), the faults (fault.go) and the
// tunnels and logs (portforward.go) are each a small type with its own
// state, so that a new mesh adds to one of them, not to Target.
package kube
