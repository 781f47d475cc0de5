// Command mbapp runs one meshbench workload as its own process: the echo
// backend (HTTP, or with -grpc fortio's gRPC ping service) or the
// reverse-proxy frontend. The local target starts it; users rarely need it
// by hand.
//
//	mbapp echo  -listen 127.0.0.1:8080 -size 1024
//	mbapp echo  -listen 127.0.0.1:8080 -size 1024 -grpc
//	mbapp proxy -listen 127.0.0.1:8081 -upstream http://127.0.0.1:8080 -h2c
//
// The frontend fans out on request: GET /?fanout=3 calls the backend three
// times, in parallel, and answers with the three bodies (a BFF).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/framework/workload"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mbapp:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: mbapp echo|proxy [flags]")
	}
	fs := flag.NewFlagSet("mbapp "+args[0], flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	h2c := fs.Bool("h2c", false, "also accept cleartext HTTP/2 (and, for proxy, speak it upstream, which carries gRPC too)")
	grpc := fs.Bool("grpc", false, "echo: answer fortio's gRPC ping with a reply of -size bytes (implies -h2c)")
	size := fs.Int("size", 0, "echo: response body size in bytes")
	delay := fs.Duration("delay", 0, "echo: delay added to every answer")
	upstream := fs.String("upstream", "", "proxy: upstream URL, e.g. http://127.0.0.1:8080")
	name := fs.String("name", "frontend", "proxy: its own name, sent upstream as the caller's")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var h http.Handler
	switch args[0] {
	case "echo":
		if *size < 0 {
			return fmt.Errorf("-size %d: must be >= 0", *size)
		}
		h = workload.Echo(workload.EchoOptions{Size: *size, Delay: *delay})
		if *grpc {
			h, *h2c = workload.GRPCEcho(workload.EchoOptions{Size: *size, Delay: *delay}), true
		}
	case "proxy":
		if *grpc {
			return errors.New("-grpc: only for echo; the proxy carries gRPC with -h2c")
		}
		u, err := url.Parse(*upstream)
		if err != nil || u.Host == "" {
			return fmt.Errorf("-upstream %q: want a URL such as http://127.0.0.1:8080", *upstream)
		}
		h = workload.Proxy(workload.ProxyOptions{Upstream: u, H2C: *h2c, Name: *name})
	default:
		return fmt.Errorf("unknown workload %q: want echo or proxy", args[0])
	}
	srv := workload.Server(*listen, h, *h2c)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", *listen, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
