package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

func TestMeasuredThreads(t *testing.T) {
	envoy := &mesh.Threads{N: 2, Mode: "fixed", Source: "Envoy's envoy_server_concurrency (:15090/stats/prometheus)"}
	s, n := measuredThreads(mesh.Verification{Pods: []mesh.PodCheck{{Pod: "a", Threads: envoy}, {Pod: "b", Threads: envoy}, {Pod: "c"}}})
	assert.Equal(t, "2 (Envoy's envoy_server_concurrency (:15090/stats/prometheus)) on 2 of 3 pods", s)
	assert.Equal(t, 2, n)

	four := &mesh.Threads{N: 4, Mode: "fixed", Source: "Envoy's envoy_server_concurrency (:15090/stats/prometheus)"}
	s, n = measuredThreads(mesh.Verification{Pods: []mesh.PodCheck{{Pod: "a", Threads: envoy}, {Pod: "b", Threads: four}}})
	assert.Equal(t, "2 (Envoy's envoy_server_concurrency (:15090/stats/prometheus)) on 1 of 2 pods; "+
		"4 (Envoy's envoy_server_concurrency (:15090/stats/prometheus)) on 1 of 2 pods", s)
	assert.Equal(t, 0, n, "pods that disagree give no single count")

	s, n = measuredThreads(mesh.Verification{})
	assert.Equal(t, "", s)
	assert.Equal(t, 0, n)
}

func TestMeshThreadsPreferWhatTheProxiesRun(t *testing.T) {
	configured := mesh.Threads{N: 4, Mode: "fixed", Source: "pod annotation"}
	tg := &Target{verified: map[testbed.Arm]mesh.Verification{}}
	n, s := tg.meshThreads(configured)
	assert.Equal(t, 4, n)
	assert.Equal(t, "not read from the proxies", s)

	envoy := &mesh.Threads{N: 2, Mode: "fixed", Source: "envoy_server_concurrency"}
	tg.verified[testbed.Meshed] = mesh.Verification{Pods: []mesh.PodCheck{{Pod: "a", Threads: envoy}}}
	n, s = tg.meshThreads(configured)
	assert.Equal(t, 2, n)
	assert.Equal(t, "2 (envoy_server_concurrency) on 1 of 1 pods", s)
}
