package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// podLogs are the fake API server's pod logs, by namespace (the fake's
// log requests carry no pod name), the errors it answers instead, and
// the options each log was asked with.
type podLogs struct {
	logs  map[string]string
	fail  map[string]error
	asked map[string]*corev1.PodLogOptions
}

func stamp(at time.Time, line string) string {
	return at.UTC().Format(time.RFC3339Nano) + " " + line + "\n"
}

func lgPod(ns, name string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// logTarget is a target on a fake clientset whose pod logs are pl's, and
// that writes the loadgens' logs to a tally over file.
func logTarget(pl *podLogs) (*Target, *fake.Clientset, *load.LogTally, *bytes.Buffer) {
	c := fake.NewClientset()
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		ga := a.(k8stesting.GenericAction)
		opts := ga.GetValue().(*corev1.PodLogOptions)
		// The fake's GetLogs action carries no pod name: the test's pods
		// are told apart by their namespaces.
		pl.asked[a.GetNamespace()] = opts
		return true, &runtime.Unknown{Raw: []byte(pl.logs[a.GetNamespace()])}, pl.fail[a.GetNamespace()]
	})
	var file bytes.Buffer
	tally := load.NewLogTally(&file)
	return &Target{c: c, o: Options{LoadgenLog: tally}}, c, tally, &file
}

// TestCopyLoadgenLogs: after a run that failed requests, each loadgen
// pod's log since the run started (on the pod's clock) goes to the
// tally, line by line and without the kubelet's timestamps, and the
// tally counts the lines by message.
func TestCopyLoadgenLogs(t *testing.T) {
	pl := &podLogs{asked: map[string]*corev1.PodLogOptions{}}
	start := time.Date(2025, 3, 4, 10, 0, 0, 500_000_000, time.UTC)
	pl.logs = map[string]string{
		// Two seconds ahead of the harness.
		"ns-a": stamp(start.Add(1500*time.Millisecond), `{"level":"warn","msg":"Error reading from 10.0.0.7:80"}`) +
			stamp(start.Add(2100*time.Millisecond), `{"level":"warn","msg":"Non ok http code 503 (HTTP/1.1 503)"}`) +
			stamp(start.Add(2200*time.Millisecond), `{"level":"warn","msg":"Non ok http code 502 (HTTP/1.1 502)"}`),
		"ns-b": stamp(start.Add(300*time.Millisecond), `{"level":"err","msg":"Error reading from 10.0.0.9:80"}`) +
			"a line without a timestamp",
	}
	tg, _, tally, file := logTarget(pl)
	rs := &runState{failed: 3, countStart: start,
		lgPods: []corev1.Pod{lgPod("ns-a", "loadgen-0"), lgPod("ns-b", "loadgen-0")},
		lgs:    []*loadgen{{pod: "loadgen-0", offset: 2 * time.Second}, {pod: "loadgen-0"}}}
	run := &testbed.Run{}
	tg.copyLoadgenLogs(context.Background(), rs, run, 64<<20)

	assert.Empty(t, run.Warnings)
	assert.Equal(t, `{"level":"warn","msg":"Non ok http code 503 (HTTP/1.1 503)"}
{"level":"warn","msg":"Non ok http code 502 (HTTP/1.1 502)"}
{"level":"err","msg":"Error reading from 10.0.0.9:80"}
a line without a timestamp
`, file.String(), "the line before the run (on the pod's clock) is left out")
	assert.Equal(t, `4 loadgen log lines: 2× "Non ok http code N (HTTP/N.N N)", 1× "Error reading from N.N.N.N:N", 1× "a line without a timestamp"`,
		load.Summary(tally.Drain(), 3))

	a, b := pl.asked["ns-a"], pl.asked["ns-b"]
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.Equal(t, "loadgen", a.Container)
	assert.True(t, a.Timestamps)
	assert.Equal(t, start.Add(2*time.Second), a.SinceTime.Time)
	assert.Equal(t, start, b.SinceTime.Time)
	assert.Equal(t, int64(64<<20+1), *a.LimitBytes)
	assert.Equal(t, int64(64<<20+1)-int64(len(pl.logs["ns-a"])), *b.LimitBytes, "the limit is the run's, over its pods")
}

// TestCopyLoadgenLogsWarns: a log that cannot be read is a warning, and
// the other pods' logs are still read; past the limit the copy stops at
// a whole line, with a warning.
func TestCopyLoadgenLogsWarns(t *testing.T) {
	pl := &podLogs{asked: map[string]*corev1.PodLogOptions{},
		logs: map[string]string{"ns-b": "first line\nsecond line\nthird line\n", "ns-c": "never read\n"},
		fail: map[string]error{"ns-a": errors.New(`pods "loadgen-0" is forbidden`)}}
	tg, _, tally, file := logTarget(pl)
	rs := &runState{failed: 1,
		lgPods: []corev1.Pod{lgPod("ns-a", "loadgen-0"), lgPod("ns-b", "loadgen-1"), lgPod("ns-c", "loadgen-2")},
		lgs:    []*loadgen{{pod: "loadgen-0"}, {pod: "loadgen-1"}, {pod: "loadgen-2"}}}
	run := &testbed.Run{}
	tg.copyLoadgenLogs(context.Background(), rs, run, 30)

	assert.Equal(t, validity.Reasons{
		// The fake clientset's transport says the URL twice.
		{Kind: validity.LoadgenLogs, Detail: `loadgen logs: read the log of loadgen ns-a/loadgen-0: Get "https://localhost/api/v1/namespaces/ns-a/pods/loadgen-0/log": Get "https://localhost/api/v1/namespaces/ns-a/pods/loadgen-0/log": pods "loadgen-0" is forbidden`},
		{Kind: validity.LoadgenLogs, Detail: "loadgen logs: only the first 30 bytes of the run's loadgen logs were read, up to loadgen ns-b/loadgen-1; the rest is only in the pods' logs"},
	}, run.Warnings)
	assert.Equal(t, "first line\nsecond line\n", file.String())
	assert.Equal(t, `2 loadgen log lines: 1× "first line", 1× "second line"`, load.Summary(tally.Drain(), 3))
	assert.NotContains(t, pl.asked, "ns-c", "nothing is read past the limit")
}

// TestCopyLoadgenLogsOnlyAfterFailures: a run that failed no request, or
// a target with nowhere to write, reads no log.
func TestCopyLoadgenLogsOnlyAfterFailures(t *testing.T) {
	pl := &podLogs{asked: map[string]*corev1.PodLogOptions{}, logs: map[string]string{"ns-a": "a line\n"}}
	tg, c, tally, _ := logTarget(pl)
	rs := &runState{lgPods: []corev1.Pod{lgPod("ns-a", "loadgen-0")}, lgs: []*loadgen{{pod: "loadgen-0"}}}
	run := &testbed.Run{}
	tg.copyLoadgenLogs(context.Background(), rs, run, 64<<20)
	rs.failed = 5
	tg.o.LoadgenLog = nil
	tg.copyLoadgenLogs(context.Background(), rs, run, 64<<20)
	assert.Empty(t, c.Actions())
	assert.Empty(t, run.Warnings)
	assert.Empty(t, tally.Drain())
}

func TestFailedRequests(t *testing.T) {
	assert.Equal(t, int64(3), failedRequests([]*fortioResult{
		{RetCodes: map[int]int64{200: 10, 503: 2, -1: 1}}, nil, {RetCodes: map[int]int64{200: 5}},
	}, load.HTTP1))
	assert.Zero(t, failedRequests([]*fortioResult{{RetCodes: map[int]int64{200: 5}}}, load.H2))
	// gRPC status codes: OK (0) succeeded, everything else failed.
	assert.Equal(t, int64(4), failedRequests([]*fortioResult{
		{RetCodes: map[int]int64{0: 10, 14: 2, 4: 1}}, nil, {RetCodes: map[int]int64{0: 5, -1: 1}},
	}, load.GRPC))
	assert.Zero(t, failedRequests([]*fortioResult{{RetCodes: map[int]int64{0: 5}}}, load.GRPC))
	assert.Equal(t, int64(5), failedRequests([]*fortioResult{{RetCodes: map[int]int64{200: 5}}}, load.GRPC),
		"200 is no gRPC status: a gRPC run that answered it did not succeed")
}

// TestCopyLogLines: the copy stops before the line that would pass the
// limit, and copies a last line without its newline whole.
func TestCopyLogLines(t *testing.T) {
	var out bytes.Buffer
	n, err := copyLogLines(&out, strings.NewReader("a\nbb\nccc\n"), time.Time{}, 6)
	assert.ErrorIs(t, err, errLogCapped)
	assert.Equal(t, int64(5), n)
	assert.Equal(t, "a\nbb\n", out.String())

	out.Reset()
	n, err = copyLogLines(&out, strings.NewReader("a\nbb"), time.Time{}, 4)
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
	assert.Equal(t, "a\nbb\n", out.String())
}
