package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func placedPod(ns string, c manifests.Component, node string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(c) + "-" + node, Labels: map[string]string{manifests.LabelComponent: string(c)}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// TestPlacedApart: the kind A/A gate's throughput ratio excluded 1 while
// the scheduler's placement is only preferred to match; a run says when
// its arm's workloads are on other nodes than its counterpart's.
func TestPlacedApart(t *testing.T) {
	ref := &arm{name: testbed.Reference, ns: "mb-ref", loadgenNS: "mb-ref"}
	cand := &arm{name: testbed.Candidate, ns: "mb-cand", loadgenNS: "mb-cand"}
	same := []corev1.Pod{
		placedPod("mb-ref", manifests.Backend, "w1"), placedPod("mb-ref", manifests.Frontend, "w2"), placedPod("mb-ref", manifests.Loadgen, "w2"),
		placedPod("mb-cand", manifests.Backend, "w1"), placedPod("mb-cand", manifests.Frontend, "w2"), placedPod("mb-cand", manifests.Loadgen, "w2"),
	}
	assert.Empty(t, placedApart(cand, ref, same))
	assert.Empty(t, placedApart(cand, nil, same), "the baseline has no counterpart")

	apart := append([]corev1.Pod(nil), same[:3]...)
	apart = append(apart, placedPod("mb-cand", manifests.Backend, "w2"), placedPod("mb-cand", manifests.Frontend, "w2"),
		placedPod("mb-cand", manifests.Loadgen, "w1"), placedPod("mb-cand", manifests.Loadgen, "w2"))
	deleting := placedPod("mb-ref", manifests.Backend, "w3")
	deleting.DeletionTimestamp = &metav1.Time{}
	apart = append(apart, deleting)
	why := placedApart(cand, ref, apart)
	require.Len(t, why, 1)
	assert.Equal(t, validity.PlacedApart, why[0].Kind)
	assert.Equal(t, "placed apart from the reference arm: backend on w2, the reference arm's on w1; loadgen on w1,w2, the reference arm's on w2; "+
		"ratios to that arm measure the placement as well as the arm (placement is only preferred to match: give the cluster a node per workload)", why[0].Detail)

	// Out of the mesh both arms' runs use the one shared loadgen.
	shared := []corev1.Pod{placedPod("mb-ref", manifests.Backend, "w1"), placedPod("mb-cand", manifests.Backend, "w1"), placedPod("mb-lg", manifests.Loadgen, "w2")}
	ref.loadgenNS, cand.loadgenNS = "mb-lg", "mb-lg"
	assert.Empty(t, placedApart(cand, ref, shared))

	for a, want := range map[testbed.Arm]testbed.Arm{testbed.Candidate: testbed.Reference, testbed.Reference: testbed.Baseline, testbed.Meshed: testbed.Baseline} {
		got, ok := counterpart(a)
		assert.True(t, ok)
		assert.Equal(t, want, got, "counterpart of %s", a)
	}
	_, ok := counterpart(testbed.Baseline)
	assert.False(t, ok)
}
