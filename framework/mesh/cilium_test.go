package mesh

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCiliumDetect(t *testing.T) {
	info, err := newMesh(t, "cilium").Detect(ctx, clientset(load(t, "cilium/cilium-1.19.3.yaml")...))
	require.NoError(t, err)
	assert.True(t, info.Installed)
	assert.Equal(t, "v1.19.3", info.Version)
	assert.Equal(t, map[string]string{
		"cluster-name":           "default",
		"enable-l7-proxy":        "true",
		"external-envoy-proxy":   "true",
		"kube-proxy-replacement": "false",
		"mesh-auth-enabled":      "false",
		"routing-mode":           "tunnel",
		"tunnel-protocol":        "vxlan",
	}, info.Config)
	assert.Equal(t, Threads{Mode: "all-cores", Source: "cilium-envoy has no --concurrency: Envoy runs one worker per hardware thread"}, info.Threads)
	require.Len(t, info.Components, 2)
	assert.Equal(t, "cilium-envoy", info.Components[1].Name)

	_, err = newMesh(t, "cilium").Detect(ctx, clientset())
	assert.EqualError(t, err, "cilium is not installed: no DaemonSet kube-system/cilium")
}

func TestCiliumVerify(t *testing.T) {
	agentDS := loadOne[*appsv1.DaemonSet](t, "cilium/cilium-1.19.3.yaml")
	agent := podFrom(t, agentDS, "cilium-4xq8z", "", "kind-worker")
	app := podFrom(t, loadOne[*appsv1.Deployment](t, "istio/deployment-plain.yaml"), "hello-5d6f7-fghij", "mb", "kind-worker")
	ns := namespace("mb", nil, nil)
	ci := newMesh(t, "cilium")

	t.Run("a config without encryption or authentication fails the meshed arm", func(t *testing.T) {
		objs := append(load(t, "cilium/cilium-1.19.3.yaml"), ns, agent, app)
		_, err := ci.Verify(ctx, clientset(objs...), "mb", true)
		assert.EqualError(t, err, `cilium: meshed namespace "mb" failed verification: cilium-config enables neither `+
			`enable-wireguard, enable-ipsec nor mesh-auth-enabled: the meshed arm would be identical to the baseline`)
	})
	t.Run("mutual authentication on, an agent on every node: passes", func(t *testing.T) {
		objs := append(load(t, "cilium/cilium-config-1.18.5.yaml"), ns, agent, app)
		v, err := ci.Verify(ctx, clientset(objs...), "mb", true)
		require.NoError(t, err)
		assert.Equal(t, []string{"cilium-agent"}, v.Pods[0].Proxies)
		assert.Contains(t, v.Notes[0], "on for every node")
	})
	t.Run("a node without an agent fails", func(t *testing.T) {
		away := app.DeepCopy()
		away.Spec.NodeName = "kind-worker2"
		objs := append(load(t, "cilium/cilium-config-1.18.5.yaml"), ns, agent, away)
		_, err := ci.Verify(ctx, clientset(objs...), "mb", true)
		assert.ErrorContains(t, err, `pod hello-5d6f7-fghij runs on node "kind-worker2", which has no ready cilium agent`)
	})
	t.Run("the baseline passes, with the caveat", func(t *testing.T) {
		v, err := ci.Verify(ctx, clientset(ns, app), "mb", false)
		require.NoError(t, err)
		assert.Equal(t, []string{ciliumSharedNote}, v.Notes)
	})
}

func TestCiliumEdges(t *testing.T) {
	cm := loadOne[*corev1.ConfigMap](t, "cilium/cilium-config-1.18.5.yaml")
	front := pod2("mb", "frontend-6b7c8-aaaaa", "frontend", "6b7c8", "n1")
	back := pod2("mb", "backend-5f6d7-bbbbb", "backend", "5f6d7", "n2")

	edges := CiliumEdges(cm.Data, []corev1.Pod{*front, *back})
	assert.Equal(t, []Edge{
		{Src: "mb/backend", Dst: "mb/frontend", Evidence: "cilium-config mesh-auth-enabled=true: no transparent encryption"},
		{Src: "mb/frontend", Dst: "mb/backend", Evidence: "cilium-config mesh-auth-enabled=true: no transparent encryption"},
	}, edges)

	// With WireGuard on (the recorded config, one key changed), pods on
	// different nodes are encrypted and pods sharing a node are not.
	wg := map[string]string{}
	for k, v := range cm.Data {
		wg[k] = v
	}
	wg["enable-wireguard"] = "true"
	edges = CiliumEdges(wg, []corev1.Pod{*front, *back})
	assert.True(t, edges[0].Secured)
	assert.Equal(t, "cilium-config enable-wireguard=true, mesh-auth-enabled=true", edges[0].Evidence)
	back.Spec.NodeName = "n1"
	edges = CiliumEdges(wg, []corev1.Pod{*front, *back})
	assert.False(t, edges[0].Secured)
	assert.Equal(t, "cilium-config enable-wireguard=true, mesh-auth-enabled=true: both run on node n1, "+
		"and node-local pod traffic is not encrypted", edges[0].Evidence)
}

// pod2 is a Deployment's pod as the ReplicaSet controller names it.
func pod2(ns, name, deploy, hash, node string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: deploy + "-" + hash, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node},
	}
}
