// Command mbnodecpu is meshbench's node agent for clusters it cannot exec
// into: run as a DaemonSet (fixtures/manifests.NodeCPUAgent), it reads the
// host's cgroup tree through a read-only hostPath and answers, at the
// instant it is asked, the CPU, CFS throttling and memory counters of the
// node and of the containers named in the query, stamped with the node's
// monotonic clock (framework/measure/cgroups):
//
//	GET /v1/counters?c=<pod UID>,<QoS class>,<container ID>&c=...
//
// The harness calls it through the API server's pod proxy, so no network
// path from the harness to the pods is needed. It needs no privileges: the
// cgroup files it reads are world-readable, and it runs as a non-root user
// on a read-only root file system with no capabilities.
//
//	mbnodecpu -listen :9110 -root /host/cgroup -node $NODE_NAME
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/meshbench/meshbench/framework/measure/cgroups"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "mbnodecpu:", err)
		os.Exit(2)
	}
}

// run serves until ctx ends; listening, when set, is told the address.
func run(ctx context.Context, args []string, listening func(net.Addr)) error {
	fs := flag.NewFlagSet("mbnodecpu", flag.ContinueOnError)
	listen := fs.String("listen", fmt.Sprintf(":%d", cgroups.AgentPort), "address to serve the counters on")
	root := fs.String("root", "/host/cgroup", "where the host's /sys/fs/cgroup is mounted (read-only)")
	node := fs.String("node", os.Getenv("NODE_NAME"), "the node's name, for the answers (default $NODE_NAME)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h := cgroups.NewHandler(os.DirFS(*root), *node, monotonic)
	// Say at start what the tree is; an unrecognised one is served as an
	// error to every read, naming what was found.
	if rd, err := h.Read(nil); err != nil {
		log.Printf("mbnodecpu: %s: %v", *root, err)
	} else {
		log.Printf("mbnodecpu: %s: cgroup v%d, %s driver, pods under %s", *root, rd.Layout.Version, rd.Layout.Driver, rd.Layout.Kubepods)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	if listening != nil {
		listening(ln.Addr())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("mbnodecpu: serving node %q on %s", *node, ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// monotonic reads the node's CLOCK_MONOTONIC (containers share the host's
// unless a time namespace says otherwise) and the wall clock.
func monotonic() (int64, time.Time) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano(), time.Now()
}
