// Command mbapp runs one meshbench workload as its own process: the echo
// backend or the reverse-proxy frontend. The local target starts it; users
// rarely need it by hand.
//
//	mbapp echo  -listen 127.0.0.1:8080 -size 1024
//	mbapp proxy -listen 127.0.0.1:8081 -upstream http://127.0.0.1:8080
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
	h2c := fs.Bool("h2c", false, "also accept cleartext HTTP/2 (and, for proxy, speak it upstream)")
	size := fs.Int("size", 0, "echo: response body size in bytes")
	delay := fs.Duration("delay", 0, "echo: delay added to every answer")
	upstream := fs.String("upstream", "", "proxy: upstream URL, e.g. http://127.0.0.1:8080")
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
	case "proxy":
		u, err := url.Parse(*upstream)
		if err != nil || u.Host == "" {
			return fmt.Errorf("-upstream %q: want a URL such as http://127.0.0.1:8080", *upstream)
		}
		h = workload.Proxy(workload.ProxyOptions{Upstream: u, H2C: *h2c})
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
