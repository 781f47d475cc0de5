package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// The loadgens' fortio logs one line per failed request (tens of
// thousands a run when a backend dies mid-window) to its pod's stdout.
// After a run that failed requests, the target copies what the run's
// loadgen pods logged to Options.LoadgenLog, where the suite counts the
// lines by message and keeps them whole next to the results.

// maxLoadgenLog is how much of its loadgen pods' logs one run reads, at
// most.
const maxLoadgenLog = 64 << 20

// loadgenLogTimeout bounds the reading of one run's loadgen logs.
const loadgenLogTimeout = 2 * time.Minute

// errLogCapped is what a copy that stopped at its limit returns.
var errLogCapped = errors.New("loadgen log capped")

// failedRequests is how many requests of the shards' results in protocol
// proto failed, as load.NewResult counts a result's errors (load.Failed
// of fortioResult.codes: for grpc every status but OK).
func failedRequests(frs []*fortioResult, proto load.Protocol) int64 {
	var n int64
	for _, fr := range frs {
		if fr != nil {
			n += load.Failed(fr.codes(proto))
		}
	}
	return n
}

// copyLoadgenLogs is podAccess.copyLoadgenLogs with the target's access.
func (t *Target) copyLoadgenLogs(ctx context.Context, rs *runState, run *testbed.Run, limit int64) {
	t.access().copyLoadgenLogs(ctx, rs, run, limit)
}

// copyLoadgenLogs writes to Options.LoadgenLog what the loadgen
// containers of the run's pods logged since the run started (counters
// read, then the warm-up and the window), when the run failed requests
// and there is somewhere to write; at most limit bytes of the logs. A log
// that cannot be read, or that passes limit, is a warning on run, never a
// failed run.
func (pa podAccess) copyLoadgenLogs(ctx context.Context, rs *runState, run *testbed.Run, limit int64) {
	if pa.loadgenLog == nil || rs.failed == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, loadgenLogTimeout)
	defer cancel()
	left := limit
	for i, p := range rs.lgPods {
		// The kubelet stamps the lines on the pod's node's clock, which
		// is the loadgen's.
		var offset time.Duration
		if i < len(rs.lgs) {
			offset = rs.lgs[i].offset
		}
		n, err := pa.copyPodLog(ctx, p, rs.countStart.Add(offset), left)
		left -= n
		if errors.Is(err, errLogCapped) {
			run.Warn(validity.LoadgenLogs, "loadgen logs: only the first %s of the run's loadgen logs were read, up to loadgen %s/%s; the rest is only in the pods' logs",
				byteSize(limit), p.Namespace, p.Name)
			return
		}
		if err != nil {
			run.Warn(validity.LoadgenLogs, "loadgen logs: %v", err)
		}
	}
}

// byteSize is n bytes in MiB when it is a whole number of them.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// copyPodLog copies the log of pod p's loadgen container from since (on
// the pod's clock) to Options.LoadgenLog, and returns how many bytes of
// the log it read: at most limit, then errLogCapped.
func (pa podAccess) copyPodLog(ctx context.Context, p corev1.Pod, since time.Time, limit int64) (int64, error) {
	// SinceTime goes to the API server in whole seconds: the lines'
	// timestamps tell the rest.
	st, ask := metav1.NewTime(since), limit+1
	opts := &corev1.PodLogOptions{Container: string(manifests.Loadgen), SinceTime: &st, Timestamps: true, LimitBytes: &ask}
	rc, err := pa.pods.c.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the log of loadgen %s/%s: %w", p.Namespace, p.Name, err)
	}
	defer rc.Close()
	n, err := copyLogLines(pa.loadgenLog, io.LimitReader(rc, ask), since, limit)
	if err != nil && !errors.Is(err, errLogCapped) {
		return n, fmt.Errorf("copy the log of loadgen %s/%s: %w", p.Namespace, p.Name, err)
	}
	return n, err
}

// copyLogLines copies a pod log read with timestamps from r to w, line by
// line (one Write each, so that a tally counts whole lines), without the
// timestamps and without the lines stamped before since; a line without
// a timestamp is copied whole. It returns how many bytes it read of r.
// Past limit it stops, after the last whole line within it, with
// errLogCapped.
func copyLogLines(w io.Writer, r io.Reader, since time.Time, limit int64) (int64, error) {
	br := bufio.NewReader(r)
	var read int64
	for {
		line, err := br.ReadString('\n')
		if read+int64(len(line)) > limit {
			return read, errLogCapped
		}
		read += int64(len(line))
		if text, ok := unstamp(strings.TrimSuffix(line, "\n"), since); ok && line != "" {
			if _, werr := io.WriteString(w, text+"\n"); werr != nil {
				return read, fmt.Errorf("write: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) {
			return read, nil
		}
		if err != nil {
			return read, fmt.Errorf("read: %w", err)
		}
	}
}

// unstamp is line without the timestamp the kubelet put before it, and
// whether it was logged at or after since: a line without a timestamp is
// kept whole.
func unstamp(line string, since time.Time) (string, bool) {
	stamp, text, ok := strings.Cut(line, " ")
	if !ok {
		stamp, text = line, ""
	}
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return line, true
	}
	return text, !at.Before(since)
}
