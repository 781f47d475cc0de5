// Package mesh puts each service mesh meshbench measures behind one small
// interface: detect it and its version and configuration, turn injection on
// for a namespace, name the containers and pods whose CPU is the mesh's, and
// verify that a namespace really is (or really is not) meshed.
//
// Requirements beyond that are extra interfaces, checked with a type
// assertion: MTLSChecker for meshes that can prove mTLS between workloads,
// Installer for those that can install themselves, Injector for those that
// edit the meshed arm's pod templates (the bring-your-own sidecar adds its
// proxy, Istio makes its sidecar's threads and resources explicit), Cleaner
// for those that change the cluster beyond the run's namespaces (ambient's
// Gateway API CRDs for a waypoint). Implementations are unexported; New
// returns the interface.
//
// Every check reads what the cluster reports (labels, annotations, pod specs,
// proxy metrics) and fails with a message naming the pod and what is wrong,
// so a run never measures the wrong thing quietly.
package mesh
