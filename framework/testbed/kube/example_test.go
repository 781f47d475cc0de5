package kube_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kube"
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
	for _, arm := range testbed.Arms {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.TwoHop}, Window: testbed.Window{Concurrency: 32, Duration: 30 * time.Second, Warmup: 15 * time.Second}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %.0f req/s, p99 %.3f ms, valid %v\n", arm, run.Load.AchievedQPS, run.Load.Percentile(99)*1e3, run.Valid())
		testbed.PrintEdges(os.Stdout, run.Edges)
	}
	testbed.PrintEdges(os.Stdout, tg.Evidence().MTLS)
}
