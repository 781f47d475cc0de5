package cgroups

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock ticks 1 ms per call, from 5 s of monotonic time.
func fakeClock() Clock {
	var n int64 = 5e9
	wall := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	return func() (int64, time.Time) {
		n += 1e6
		return n, wall.Add(time.Duration(n - 5e9))
	}
}

func get(t *testing.T, srv *httptest.Server, cs ...Container) (int, []byte) {
	t.Helper()
	u := srv.URL + CountersPath
	if len(cs) > 0 {
		u += "?" + Query(cs).Encode()
	}
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

func TestAgentReadsContainers(t *testing.T) {
	dir := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"
	srv := httptest.NewServer(NewHandler(tree(V2, dir), "node-1", fakeClock()))
	defer srv.Close()

	here := Container{PodUID: uid, ID: "containerd://" + cid, QOS: Burstable}
	gone := Container{PodUID: uid, ID: "containerd://" + strings.Repeat("e", 64), QOS: Burstable}
	code, body := get(t, srv, here, gone)
	require.Equal(t, http.StatusOK, code, string(body))
	var rd Reading
	require.NoError(t, json.Unmarshal(body, &rd))

	pod := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice"
	assert.Equal(t, Reading{
		Node:         "node-1",
		Layout:       Layout{Version: V2, Driver: Systemd, Kubepods: "kubepods.slice"},
		StartNanos:   5001000000,
		EndNanos:     5003000000,
		Time:         time.Date(2026, 12, 1, 23, 0, 0, 1000000, time.UTC),
		NodeCounters: Counters{UsageNanos: 5000000000},
		NodeNanos:    5001000000,
		Containers: []ContainerReading{
			{Container: here, Cgroup: dir, Nanos: 5002000000, Counters: &Counters{
				UsageNanos: 1500000, Periods: 40, ThrottledPeriods: 3, ThrottledNanos: 2500000,
				LimitCores: 0.25, WorkingSetBytes: 4000000, HasMemory: true, RSSBytes: 1000000, HasRSS: true}},
			{Container: gone, NotFound: true, Error: "container " + gone.ID + " of pod " + uid + " (Burstable): no cgroup at " +
				pod + "/cri-containerd-" + strings.Repeat("e", 64) + ".scope; the deepest directory on that path is " + pod +
				", which holds [cri-containerd-" + cid + ".scope/]: " +
				"the container is gone, or its cgroup layout is not one this reader recognises"},
		},
	}, rd)
}

func TestAgentNodeOnly(t *testing.T) {
	srv := httptest.NewServer(NewHandler(tree(V1, "kubepods/besteffort"), "node-2", fakeClock()))
	defer srv.Close()
	code, body := get(t, srv)
	require.Equal(t, http.StatusOK, code, string(body))
	var rd Reading
	require.NoError(t, json.Unmarshal(body, &rd))
	assert.Equal(t, Counters{UsageNanos: 30329123343, WorkingSetBytes: 1489514496 - 900009984, HasMemory: true}, rd.NodeCounters)
	assert.Equal(t, Layout{Version: V1, Driver: Cgroupfs, Kubepods: "kubepods", CPU: "cpu,cpuacct", CPUAcct: "cpu,cpuacct", Memory: "memory"}, rd.Layout)
	assert.Empty(t, rd.Containers)
}

func TestAgentErrors(t *testing.T) {
	srv := httptest.NewServer(NewHandler(tree(V2, "containers/x"), "node-3", fakeClock()))
	defer srv.Close()

	code, body := get(t, srv)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "node node-3: unrecognised cgroup layout: no kubepods cgroup (kubepods, or a systemd …kubepods.slice) in the top two levels of ., "+
		"whose top holds [containers/ init.scope/ system.slice/ user.slice/]\n", string(body))

	res, err := http.Get(srv.URL + CountersPath + "?" + url.Values{"c": {"only-a-uid"}}.Encode())
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Equal(t, "c=\"only-a-uid\": want <pod UID>,<QoS class>,<container ID>\n", string(b))

	res, err = http.Get(srv.URL + HealthPath)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

func TestQueryRoundTrip(t *testing.T) {
	cs := []Container{{PodUID: uid, QOS: Guaranteed, ID: "cri-o://" + cid}, {PodUID: "u2", QOS: BestEffort, ID: "containerd://abc"}}
	assert.Equal(t, "c="+uid+"%2CGuaranteed%2Ccri-o%3A%2F%2F"+cid+"&c=u2%2CBestEffort%2Ccontainerd%3A%2F%2Fabc", Query(cs).Encode())
	got, err := ParseQuery(Query(cs))
	require.NoError(t, err)
	assert.Equal(t, cs, got)
}
