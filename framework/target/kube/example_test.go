package kube_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/target/kube"
)

// Deploy both arms on the cluster of $KUBECONFIG with Linkerd, four
// loadgen shards outside the mesh and the air-gapped images, run the
// two-hop path on each arm, print the mTLS table, and delete everything.
func Example() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		panic(err)
	}
	m, err := mesh.New("linkerd")
	if err != nil {
		panic(err)
	}
	tg, err := kube.New(ctx, cfg, kube.Options{
		Mesh:      m,
		Loadgens:  4,
		Placement: kube.OutOfMesh,
		Workloads: manifests.Params{
			Images:       manifests.Images{Nginx: "meshbench/nginx:1.22.1-9-deb12u3", Loadgen: "meshbench/mbloadgen:dev"},
			ResponseSize: 1024,
		},
	})
	if err != nil {
		panic(err) // a *kube.PodError carries the pod's events and logs
	}
	defer tg.Close(context.WithoutCancel(ctx))
	for _, arm := range target.Arms {
		run, err := tg.Run(ctx, target.Spec{Arm: arm, Workload: target.Workload{Path: target.TwoHop}, Load: load.Options{Concurrency: 32, Duration: 30 * time.Second, Warmup: 15 * time.Second}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %.0f req/s, p99 %.3f ms, valid %v\n", arm, run.Load.AchievedQPS, run.Load.Percentile(99)*1e3, run.Valid())
		target.PrintEdges(os.Stdout, run.Edges)
	}
	target.PrintEdges(os.Stdout, tg.Evidence().MTLS)
}
