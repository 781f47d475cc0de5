package kubelet

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(ns, name string, labels map[string]string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func TestSumByRole(t *testing.T) {
	before := parseResource(t, "resource_eks_stable.txt")
	var (
		server  = ContainerKey{"ersilia-core", "ersilia-hub-server-78554c56f7-klmrl", "server"}
		nginx   = ContainerKey{"ersilia-core", "ersilia-nginx-567d564fc-cpfvd", "nginx"}
		awsNode = ContainerKey{"kube-system", "aws-node-7k649", "aws-node"}
		agent   = ContainerKey{"kube-system", "aws-node-7k649", "aws-eks-nodeagent"}
		proxy   = ContainerKey{"kube-system", "kube-proxy-t748f", "kube-proxy"}
	)
	after := advance(before, 10*time.Second, 10, map[ContainerKey]float64{
		server: 3, nginx: 1, awsNode: 0.5, agent: 0.25, proxy: 0.1,
	})
	u, err := Delta(before, after)
	require.NoError(t, err)

	// In this recorded node, pretend nginx is the in-pod proxy of the
	// workload and aws-node the per-node daemon, to exercise every rule kind.
	pods := []corev1.Pod{
		pod("ersilia-core", "ersilia-hub-server-78554c56f7-klmrl", map[string]string{"app": "server"}),
		pod("ersilia-core", "ersilia-nginx-567d564fc-cpfvd", map[string]string{"app": "nginx"}),
		pod("kube-system", "aws-node-7k649", map[string]string{"k8s-app": "aws-node"}),
		pod("kube-system", "kube-proxy-t748f", map[string]string{"k8s-app": "kube-proxy"}),
	}
	roleOf := RolesFromPods(pods, RoleOther,
		RoleRule{Role: measure.RoleNodeProxy, Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "aws-node"}},
		RoleRule{Role: measure.RoleSidecar, Container: "nginx"},
		RoleRule{Role: measure.RoleApp, Namespace: "ersilia-core"},
	)
	assert.Equal(t, measure.RoleApp, roleOf(server.Namespace, server.Pod, server.Container))
	assert.Equal(t, RoleOther, roleOf("nowhere", "unknown-pod", "c"))

	sums := SumByRole(roleOf, u)
	require.Len(t, sums, 4)
	assert.Equal(t, []Role{measure.RoleApp, measure.RoleSidecar, measure.RoleNodeProxy, RoleOther},
		[]Role{sums[0].Role, sums[1].Role, sums[2].Role, sums[3].Role})

	app := sums[0]
	assert.Equal(t, 4, app.Containers) // server, frontend, postgresql, aws-load-balancer-controller
	assert.InDelta(t, 300, app.Millicores, 1e-6)
	assert.InDelta(t, 100, sums[1].Millicores, 1e-6)
	assert.Equal(t, 1, sums[1].Containers)
	node := sums[2]
	assert.Equal(t, 2, node.Containers)
	assert.InDelta(t, 75, node.Millicores, 1e-6)
	assert.Equal(t, 17391616.0+50237440.0, node.WorkingSetBytes)
	other := sums[3]
	assert.Equal(t, 5, other.Containers)
	assert.InDelta(t, 10, other.Millicores, 1e-6)

	w := Window(roleOf, map[string]float64{"": 2}, u)
	assert.Equal(t, 10*time.Second, w.Elapsed)
	assert.InDelta(t, 50.0, w.NodeUtilisation[""], 1e-9) // 10 core-seconds in 10 s on 2 cores
	app2, ok := w.Role(measure.RoleApp)
	require.True(t, ok)
	assert.Equal(t, 4, app2.Count)
	assert.InDelta(t, 300, app2.MilliCores, 1e-6)
}

func TestRestarts(t *testing.T) {
	before := parseResource(t, "resource_kind_v1.21.txt")
	after := advance(before, 15*time.Second, 1, nil)
	delete(after.Containers, coredns)
	_, err := Delta(before, after)
	assert.Equal(t, []string{"container kube-system/coredns-558bd4d5db-4dpjz/coredns: present in the first read but " +
		"missing from the second (restarted, evicted or deleted during the window); mark the run invalid"}, Restarts(err))
	assert.Nil(t, Restarts(nil))
}
