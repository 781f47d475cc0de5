package cgroups

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadV2(t *testing.T) {
	dir := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"
	fsys := tree(V2, dir)
	l, err := Detect(fsys)
	require.NoError(t, err)
	c, err := l.Read(fsys, dir)
	require.NoError(t, err)
	assert.Equal(t, Counters{
		UsageNanos: 1500000, Periods: 40, ThrottledPeriods: 3, ThrottledNanos: 2500000,
		LimitCores: 0.25, WorkingSetBytes: 4096000 - 96000, HasMemory: true, RSSBytes: 1000000, HasRSS: true,
	}, c)

	// The root of v2 has no cpu.max and no memory files.
	n, err := l.ReadNode(fsys)
	require.NoError(t, err)
	assert.Equal(t, Counters{UsageNanos: 5000000000}, n)
}

func TestReadV1(t *testing.T) {
	dir := "kubepods/burstable/pod" + uid + "/" + cid
	fsys := tree(V1, dir)
	l, err := Detect(fsys)
	require.NoError(t, err)
	c, err := l.Read(fsys, dir)
	require.NoError(t, err)
	assert.Equal(t, Counters{
		UsageNanos: 52683072, Periods: 6, ThrottledPeriods: 4, ThrottledNanos: 219501777,
		LimitCores: 0.1, WorkingSetBytes: 2478080 - 8192, HasMemory: true, RSSBytes: 1929216, HasRSS: true,
	}, c)

	n, err := l.ReadNode(fsys)
	require.NoError(t, err)
	assert.Equal(t, Counters{UsageNanos: 30329123343, WorkingSetBytes: 1489514496 - 900009984, HasMemory: true}, n)
}

// The RSS is v1's total_rss (the cgroup and its children), rss where a
// kernel reports no total_rss, and v2's anon; memory.stat without them
// leaves HasRSS false, and the working set is read as before.
func TestReadRSS(t *testing.T) {
	v1 := Layout{Version: V1, CPU: "cpu,cpuacct", CPUAcct: "cpu,cpuacct", Memory: "memory"}
	v2 := Layout{Version: V2}
	for name, tc := range map[string]struct {
		l    Layout
		stat string
		want Counters
	}{
		"v1 total_rss": {v1, "cache 4096\nrss 8192\ntotal_cache 4096\ntotal_rss 12288\ntotal_inactive_file 4096\n",
			Counters{WorkingSetBytes: 16384 - 4096, HasMemory: true, RSSBytes: 12288, HasRSS: true}},
		"v1 rss": {v1, "cache 4096\nrss 8192\ntotal_inactive_file 4096\n",
			Counters{WorkingSetBytes: 16384 - 4096, HasMemory: true, RSSBytes: 8192, HasRSS: true}},
		"v1 none": {v1, "cache 4096\ntotal_inactive_file 4096\n",
			Counters{WorkingSetBytes: 16384 - 4096, HasMemory: true}},
		"v2 anon": {v2, "anon 12288\nfile 4096\ninactive_file 4096\n",
			Counters{WorkingSetBytes: 16384 - 4096, HasMemory: true, RSSBytes: 12288, HasRSS: true}},
		"v2 none": {v2, "file 4096\ninactive_file 4096\n",
			Counters{WorkingSetBytes: 16384 - 4096, HasMemory: true}},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"cpu,cpuacct/c/cpuacct.usage": {Data: []byte("0\n")}, "cpu,cpuacct/c/cpu.stat": {Data: []byte("nr_periods 0\n")},
				"memory/c/memory.usage_in_bytes": {Data: []byte("16384\n")}, "memory/c/memory.stat": {Data: []byte(tc.stat)},
				"c/cpu.stat": {Data: []byte("usage_usec 0\n")}, "c/memory.current": {Data: []byte("16384\n")}, "c/memory.stat": {Data: []byte(tc.stat)},
			}
			c, err := tc.l.Read(fsys, "c")
			require.NoError(t, err)
			assert.Equal(t, tc.want, c)
		})
	}
}

func TestReadNoLimit(t *testing.T) {
	v1 := fstest.MapFS{
		"cpu,cpuacct/c/cpuacct.usage":     {Data: []byte("7\n")},
		"cpu,cpuacct/c/cpu.stat":          {Data: []byte("nr_periods 0\nnr_throttled 0\nthrottled_time 0\nnr_bursts 0\nburst_time 0\n")},
		"cpu,cpuacct/c/cpu.cfs_quota_us":  {Data: []byte("-1\n")},
		"cpu,cpuacct/c/cpu.cfs_period_us": {Data: []byte("100000\n")},
	}
	c, err := Layout{Version: V1, CPU: "cpu,cpuacct", CPUAcct: "cpu,cpuacct", Memory: "memory"}.Read(v1, "c")
	require.NoError(t, err)
	assert.Equal(t, Counters{UsageNanos: 7}, c)

	v2 := fstest.MapFS{"c/cpu.stat": {Data: []byte("usage_usec 9\nuser_usec 9\nsystem_usec 0\n")}, "c/cpu.max": {Data: []byte("max 100000\n")}}
	c, err = Layout{Version: V2}.Read(v2, "c")
	require.NoError(t, err)
	assert.Equal(t, Counters{UsageNanos: 9000}, c)
}

func TestReadBrokenFiles(t *testing.T) {
	v2 := Layout{Version: V2}
	for name, tc := range map[string]struct {
		fsys fstest.MapFS
		err  string
	}{
		"gone":     {fstest.MapFS{}, "read c/cpu.stat: open c/cpu.stat: file does not exist"},
		"no usage": {fstest.MapFS{"c/cpu.stat": {Data: []byte("nr_periods 1\n")}}, "c/cpu.stat: no usage_usec"},
		"garbage": {fstest.MapFS{"c/cpu.stat": {Data: []byte("usage_usec x\n")}},
			`c/cpu.stat: line "usage_usec x": strconv.ParseUint: parsing "x": invalid syntax`},
		"cpu.max": {fstest.MapFS{"c/cpu.stat": {Data: []byte("usage_usec 1\n")}, "c/cpu.max": {Data: []byte("max\n")}},
			`c/cpu.max: "max\n": want "<quota|max> <period>"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v2.Read(tc.fsys, "c")
			assert.EqualError(t, err, tc.err)
		})
	}
}

func TestParseKeyed(t *testing.T) {
	m, err := ParseKeyed([]byte("usage_usec 123456789\nuser_usec 100000000\ncore_sched.force_idle_usec 0\nnr_throttled 120\n\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"usage_usec": 123456789, "user_usec": 100000000, "core_sched.force_idle_usec": 0, "nr_throttled": 120}, m)
	_, err = ParseKeyed([]byte("usage_usec\n"))
	assert.EqualError(t, err, `line "usage_usec": want "key value"`)
}

func TestParseCPUMax(t *testing.T) {
	for in, want := range map[string]float64{"max 100000\n": 0, "25000 100000\n": 0.25, "150000 100000": 1.5, "50000 50000\n": 1} {
		got, err := ParseCPUMax([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseCPUMax([]byte("1000 0\n"))
	assert.EqualError(t, err, `period "0": want a positive integer`)
}
