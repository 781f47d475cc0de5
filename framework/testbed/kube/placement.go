package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// counterpart is the arm whose runs arm a's are compared with: the
// reference for the candidate, the baseline for the other meshed arms,
// none for the baseline.
func counterpart(a testbed.Arm) (testbed.Arm, bool) {
	switch {
	case a == testbed.Candidate:
		return testbed.Reference, true
	case a.IsMeshed():
		return testbed.Baseline, true
	}
	return "", false
}

// nodesOf is, per component of arm a, the sorted nodes its running pods
// are on; the loadgen's are in a.loadgenNS.
func nodesOf(a *arm, pods []corev1.Pod) map[manifests.Component][]string {
	out := map[manifests.Component][]string{}
	for _, p := range pods {
		c := manifests.Component(p.Labels[manifests.LabelComponent])
		ns := a.ns
		if c == manifests.Loadgen {
			ns = a.loadgenNS
		}
		if p.Namespace != ns || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		if !slices.Contains(out[c], p.Spec.NodeName) {
			out[c] = append(out[c], p.Spec.NodeName)
			slices.Sort(out[c])
		}
	}
	return out
}

// workloadNodes is nodesOf keyed by the workloads' names (Run.Nodes).
func workloadNodes(a *arm, pods []corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for c, nodes := range nodesOf(a, pods) {
		out[string(c)] = nodes
	}
	return out
}

// placedApart warns when a run's arm a has a workload on other nodes than
// its counterpart's same workload (other is that arm, as a's run sees it):
// the scheduler's placement is only preferred to match
// (manifests.affinity), and a backend on its loadgen's node in one arm
// and not in the other makes their ratio measure the placement as well.
func placedApart(a, other *arm, pods []corev1.Pod) validity.Reasons {
	if other == nil {
		return nil
	}
	mine, theirs := nodesOf(a, pods), nodesOf(other, pods)
	var diffs []string
	for _, c := range manifests.Components {
		if len(mine[c]) > 0 && len(theirs[c]) > 0 && !slices.Equal(mine[c], theirs[c]) {
			diffs = append(diffs, fmt.Sprintf("%s on %s, the %s arm's on %s", c, strings.Join(mine[c], ","), other.name, strings.Join(theirs[c], ",")))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	var why validity.Reasons
	why.Add(validity.PlacedApart, "placed apart from the %s arm: %s; ratios to that arm measure the placement as well as the arm (placement is only preferred to match: give the cluster a node per workload)",
		other.name, strings.Join(diffs, "; "))
	return why
}

// placedApartOf is placedApart for run rs, against its counterpart arm as
// rs's workload places it.
func (t *Target) placedApartOf(rs *runState, pods []corev1.Pod) validity.Reasons {
	name, ok := counterpart(rs.a.name)
	if !ok || t.arms[name] == nil {
		return nil
	}
	return placedApart(rs.a, t.runArm(t.arms[name], rs.w), pods)
}
