package ceiling

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// GoFloor is the floor of any Go loadgen, the yardstick beside wrk in
// BenchmarkLoadgenCeiling: c goroutines, each on one keep-alive HTTP/1.1
// connection, writing one pre-formatted GET and reading the answer's
// headers and Content-Length body, with no histogram, timing or parsing
// beyond that. What fortio costs beyond it is fortio's and ours; what it
// lacks against wrk is Go's netpoller and scheduler. Its CPU is this
// process's over the window (the test binary is otherwise idle then).
func GoFloor(ctx context.Context, rawURL string, c int, window time.Duration) (Result, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Result{}, fmt.Errorf("go floor: %w", err)
	}
	req := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n\r\n")
	conns := make([]net.Conn, c)
	for i := range conns {
		var d net.Dialer
		if conns[i], err = d.DialContext(ctx, "tcp", u.Host); err != nil {
			return Result{}, fmt.Errorf("go floor: %w", err)
		}
		defer conns[i].Close()
	}
	var done atomic.Int64
	var stop atomic.Bool
	errs := make([]error, c)
	var wg sync.WaitGroup
	cpu0, err := processCPU()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	for i, conn := range conns {
		wg.Go(func() {
			br := bufio.NewReaderSize(conn, 16<<10)
			for !stop.Load() {
				if errs[i] = exchange(conn, br, req); errs[i] != nil {
					return
				}
				done.Add(1)
			}
		})
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	cpu1, err := processCPU()
	if err != nil {
		return Result{}, err
	}
	for _, err := range errs {
		if err != nil {
			return Result{}, fmt.Errorf("go floor: %w", err)
		}
	}
	n, cpu := float64(done.Load()), (cpu1 - cpu0).Seconds()
	return Result{QPS: n / elapsed, MilliCores: cpu / elapsed * 1000, CPUPer1k: cpu * 1e3 / (n / 1e3)}, nil
}

// exchange writes req and reads one answer: its headers, then a body of
// its Content-Length.
func exchange(conn net.Conn, br *bufio.Reader, req []byte) error {
	if _, err := conn.Write(req); err != nil {
		return err
	}
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			v = bytes.TrimSpace(v)
			if length, err = strconv.Atoi(string(v)); err != nil {
				return fmt.Errorf("content-length %q: %w", v, err)
			}
		}
	}
	_, err := br.Discard(length)
	return err
}

// processCPU is this process's user and system CPU time so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
