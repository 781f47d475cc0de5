// Command kindcluster creates, loads images into and deletes meshbench's kind
// clusters through framework/testbed/kind (the kind Go library, no kind
// binary). It only turns flags into library options.
//
//	go run ./hack/offline/kindcluster up [-config kind-config.yaml] [-image IMG] NAME
//	go run ./hack/offline/kindcluster load NAME IMAGE...
//	go run ./hack/offline/kindcluster down NAME
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/meshbench/meshbench/framework/testbed/kind"
)

func main() {
	log.SetFlags(log.Ltime)
	if len(os.Args) < 2 {
		usage()
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	config := fs.String("config", "kind-config.yaml", "kind config file (\"\": 1 control plane + 2 workers)")
	image := fs.String("image", "", "node image (default: the local offline image, else kind's default)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file to write (default: in the temp dir)")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on each wait")
	retain := fs.Bool("retain", false, "keep the nodes when creation fails")
	cni := fs.String("cni", "", "CNI plugin when kind's is disabled: bridge or ptp (default: bridge where nodes have it)")
	_ = fs.Parse(os.Args[2:])
	if fs.NArg() < 1 {
		usage()
	}
	name := fs.Arg(0)
	opts := []kind.Option{
		kind.WithLogger(kind.LoggerFunc(log.Printf)),
		kind.WithReadyTimeout(*timeout),
		kind.WithRetain(*retain),
		kind.WithCNIPlugin(*cni),
	}
	if *image != "" {
		opts = append(opts, kind.WithNodeImage(*image))
	}
	if *kubeconfig != "" {
		opts = append(opts, kind.WithKubeconfig(*kubeconfig))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch cmd {
	case "up":
		var c kind.Cluster
		if c, err = kind.Up(ctx, name, *config, opts...); err == nil {
			fmt.Println(c.Kubeconfig())
		}
	case "load":
		err = kind.Existing(name, opts...).LoadImages(ctx, fs.Args()[1:]...)
	case "down":
		err = kind.Down(ctx, name, opts...)
	default:
		usage()
	}
	if err != nil {
		log.Fatal(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kindcluster up|load|down [flags] NAME [IMAGE...]")
	os.Exit(2)
}
