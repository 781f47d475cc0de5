// Package ceiling holds the yardsticks a loadgen's ceiling is measured
// against (BenchmarkLoadgenCeiling): wrk, and a bare Go loop that is the
// floor of any Go loadgen.
package ceiling

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Result is one loadgen's window at its maximum rate.
type Result struct {
	// QPS is the rate achieved, in requests per second.
	QPS float64
	// MilliCores is the loadgen's CPU over the window, in millicores.
	MilliCores float64
	// NodePercent is the node's CPU utilisation over the window, in
	// percent; 0 when it was not measured.
	NodePercent float64
	// CPUPer1k is the loadgen's CPU per 1000 requests, in CPU-ms.
	CPUPer1k float64
}

// Wrk runs wrk (the binary at path wrk) at concurrency c against url for
// the window, and takes its CPU from its rusage: wrk has no warm-up, and
// its connection set-up is a negligible share.
func Wrk(ctx context.Context, wrk, url string, c int, window time.Duration) (Result, error) {
	secs := max(1, int(window.Seconds()+0.5))
	cmd := exec.CommandContext(ctx, wrk, "-t"+strconv.Itoa(min(c, runtime.NumCPU())), "-c"+strconv.Itoa(c), "-d"+strconv.Itoa(secs)+"s", url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	elapsed := time.Since(start).Seconds()
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	var r Result
	var requests float64
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes())) // out stays whole for the error below
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Requests/sec:"); ok {
			r.QPS, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if f := strings.Fields(line); len(f) > 2 && f[1] == "requests" && f[2] == "in" {
			requests, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if r.QPS == 0 || requests == 0 {
		return r, fmt.Errorf("wrk printed no Requests/sec or request count:\n%s", out.String())
	}
	r.MilliCores = cpu / elapsed * 1000
	r.CPUPer1k = cpu * 1e3 / (requests / 1e3)
	return r, nil
}
