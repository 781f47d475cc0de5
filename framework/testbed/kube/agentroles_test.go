package kube

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/measure/cgroups"
	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// meshPods are a pod for each of a mesh's node proxies and control-plane
// workloads, as the adapter selects them, each with one running
// container, and the CPU each uses between two reads, in core-seconds.
func meshPods(r mesh.Roles) ([]corev1.Pod, map[string]float64, map[measure.Role]float64) {
	var pods []corev1.Pod
	used := map[string]float64{}
	want := map[measure.Role]float64{}
	add := func(role measure.Role, ws []mesh.Workload, cores float64) {
		for i, w := range ws {
			ns := w.Namespace
			if ns == "" {
				ns = "mesh-system"
			}
			ctr := w.Container
			if ctr == "" {
				ctr = "proxy"
			}
			id := fmt.Sprintf("containerd://%s%02d", role, i)
			pods = append(pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", role, i), UID: types.UID(fmt.Sprintf("5b1c9a2e-0000-4a00-8000-0000000000%02d", len(pods))), Labels: w.Labels},
				Spec:       corev1.PodSpec{NodeName: "n1"},
				Status: corev1.PodStatus{QOSClass: corev1.PodQOSBurstable, ContainerStatuses: []corev1.ContainerStatus{
					{Name: ctr, ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			})
			used[id] = cores
			want[role] += cores * 100 // over 10 s, in millicores
		}
	}
	add(measure.RoleNodeProxy, r.NodeProxies, 2.5)
	add(measure.RoleControlPlane, r.ControlPlane, 0.4)
	return pods, used, want
}

// reading is what the agent answers at monotonic time mono: every
// container's usage, scaled by f.
func reading(mono int64, used map[string]float64, f float64) cgroups.Reading {
	rd := cgroups.Reading{StartNanos: mono, EndNanos: mono + 1e6, NodeNanos: mono, NodeCounters: cgroups.Counters{UsageNanos: uint64(f * 20e9)}}
	for id, cores := range used {
		rd.Containers = append(rd.Containers, cgroups.ContainerReading{Container: cgroups.Container{ID: id}, Nanos: mono,
			Counters: &cgroups.Counters{UsageNanos: uint64(f * cores * 1e9), HasMemory: true, WorkingSetBytes: 64 << 20}})
	}
	return rd
}

// On a remote cluster the node agent reads the mesh's node proxies
// (ztunnel, Cilium's agent and envoy) and its control plane (istiod, the
// CNI node agent, Cilium's operator, Linkerd's) at the instant, as it
// reads the workloads, and each lands in its own role: the agent's
// reading of a node, of the shape mbnodecpu serves, through the same
// snapshot, delta and roles as the kubelet's.
func TestAgentReadsTheMeshInItsRoles(t *testing.T) {
	for _, name := range []string{"istio-ambient", "istio", "istio-proxyless", "cilium", "linkerd"} {
		t.Run(name, func(t *testing.T) {
			m, err := mesh.New(name)
			require.NoError(t, err)
			pods, used, want := meshPods(m.Roles())
			require.NotEmpty(t, want, "the adapter names its node proxies or control plane")
			c := fake.NewClientset()
			for i := range pods {
				_, err := c.CoreV1().Pods(pods[i].Namespace).Create(t.Context(), &pods[i], metav1.CreateOptions{})
				require.NoError(t, err)
			}
			a := &nodeAgent{c: c, pods: map[string]string{}, anchors: map[string]clockAnchor{}}
			cs, keys, err := a.containersOn(t.Context(), "n1")
			require.NoError(t, err)
			require.Len(t, cs, len(used), "every running container of the node is asked for")
			t0 := time.Unix(1000, 0)
			at := func(mono int64) time.Time { return t0.Add(time.Duration(mono - 100e9)) }
			before, problems := agentSnapshot("n1", reading(100e9, used, 1), keys, at)
			require.Empty(t, problems)
			after, _ := agentSnapshot("n1", reading(110e9, used, 2), keys, at)
			u, err := kubelet.Delta(before, after)
			require.NoError(t, err)

			tg, err := newTarget(fake.NewClientset(), Options{})
			require.NoError(t, err)
			tg.o.Mesh = m
			meshed := &arm{name: testbed.Meshed, ns: "mb-meshed", loadgenNS: "mb-meshed"}
			tg.arms = map[testbed.Arm]*arm{testbed.Meshed: meshed}
			w := kubelet.Window(tg.roleOf(meshed, pods), map[string]float64{"n1": 2}, u)
			for role, mc := range want {
				got, ok := w.Role(role)
				require.True(t, ok, "%s read in role %s", name, role)
				assert.InDelta(t, mc, got.MilliCores, 1e-6, "%s: %s", name, role)
			}
		})
	}
}
