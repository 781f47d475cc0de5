package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure/cgroups"
)

// write makes files (path: contents) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o444))
	}
}

// The agent serves a cgroup v2 tree on disk, read through os.DirFS, with
// the node's monotonic clock, and stops when its context ends.
func TestAgentServesATreeOnDisk(t *testing.T) {
	root := t.TempDir()
	scope := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_ab.slice/cri-containerd-abc.scope"
	write(t, root, map[string]string{
		"cgroup.controllers":      "cpu memory\n",
		"cpu.stat":                "usage_usec 10\n",
		scope + "/cpu.stat":       "usage_usec 7\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		scope + "/cpu.max":        "max 100000\n",
		scope + "/memory.current": "100\n",
		scope + "/memory.stat":    "anon 50\nfile 50\ninactive_file 40\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	addrc, errc := make(chan net.Addr, 1), make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"-listen", "127.0.0.1:0", "-root", root, "-node", "n1"}, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatalf("run: %v", err)
	}
	c := cgroups.Container{PodUID: "1234-ab", QOS: cgroups.BestEffort, ID: "containerd://abc"}
	before, _ := monotonic()
	res, err := http.Get("http://" + addr.String() + cgroups.CountersPath + "?" + cgroups.Query([]cgroups.Container{c}).Encode())
	require.NoError(t, err)
	var rd cgroups.Reading
	require.NoError(t, json.NewDecoder(res.Body).Decode(&rd))
	res.Body.Close()
	after, _ := monotonic()

	assert.Equal(t, "n1", rd.Node)
	assert.Equal(t, cgroups.Counters{UsageNanos: 10000}, rd.NodeCounters)
	require.Len(t, rd.Containers, 1)
	assert.Equal(t, &cgroups.Counters{UsageNanos: 7000, WorkingSetBytes: 60, HasMemory: true, RSSBytes: 50, HasRSS: true}, rd.Containers[0].Counters)
	assert.Equal(t, scope, rd.Containers[0].Cgroup)
	assert.True(t, before <= rd.StartNanos && rd.StartNanos <= rd.Containers[0].Nanos && rd.Containers[0].Nanos <= rd.EndNanos && rd.EndNanos <= after,
		"monotonic: %d <= %d <= %d <= %d <= %d", before, rd.StartNanos, rd.Containers[0].Nanos, rd.EndNanos, after)

	cancel()
	select {
	case err := <-errc:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
